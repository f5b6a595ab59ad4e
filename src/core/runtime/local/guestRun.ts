/**
 * The state of one execution on a local guest, built on the run skeleton (../runSkeleton: the output and
 * display caps, the clock, Stop and the timeout, the item): what is the guest's is here: the markers that cut
 * stdout and stderr at the run's end token and place each display, its tool calls, its result or failure.
 */
import type { CodeInterpreterCallItem, DisplayOutput, ExecutionError, StreamName } from '../../../common/events';
import type { Completion } from '../execution';
import { RunSkeleton } from '../runSkeleton';
import { ToolDispatcher } from '../toolDispatcher';
import type { ExecuteOptions, ExecuteRequest, RuntimeLimits } from '../types';
import { randomToken } from '../../util/ids';
import { ArtifactStore, safeRelativePath } from '../artifacts';
import { formatBytes } from '../../../common/format';
import { isInt, type GuestFrame, type Unchecked } from './guestFrames';

/** A run sent to the background (./detach), as the session remembers it until the next execution has waited for it. */
export interface Detached {
  job: number;
  /** performance.now() when it was sent to the background, and when it ended. */
  at: number;
  endedAt?: number;
}

const MARKER_PREFIX = Buffer.from('\u0000codeact-');
/** Digits of a display marker's sequence number, at most. */
const MAX_SEQ_DIGITS = 9;

/** What a stream carries: text of the run, a display marker (its sequence number), or the run's end. */
type Piece = Buffer | { seq: number } | 'end';

/**
 * Finds the run's markers in a byte stream: the end token (`\0codeact-end:TOKEN\0`) and each display's place
 * (`\0codeact-display:TOKEN:SEQ\0`), holding back only what could be the beginning of one. A NUL that starts
 * no marker of this run is text.
 */
export class MarkerScanner {
  private carry: Buffer = Buffer.alloc(0);
  /** The end token was seen: nothing after it is the run's. */
  private done = false;
  private readonly end: Buffer;
  private readonly display: Buffer;

  constructor(token: string) {
    this.end = Buffer.concat([MARKER_PREFIX, Buffer.from(`end:${token}\u0000`)]);
    this.display = Buffer.concat([MARKER_PREFIX, Buffer.from(`display:${token}:`)]);
  }

  push(chunk: Buffer): Piece[] {
    if (this.done) return [];
    const data = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = Buffer.alloc(0);
    const out: Piece[] = [];
    let from = 0;
    let at = data.indexOf(0, from);
    while (at >= 0) {
      const m = this.match(data, at);
      if (m === 'partial') {
        if (at > from) out.push(data.subarray(from, at));
        this.carry = Buffer.from(data.subarray(at));
        return out;
      }
      if (m) {
        if (at > from) out.push(data.subarray(from, at));
        out.push(m.piece);
        if (m.piece === 'end') {
          this.done = true; // nothing of the run comes after its end
          return out;
        }
        from = at + m.length;
      }
      at = data.indexOf(0, m ? from : at + 1);
    }
    if (from < data.length) out.push(data.subarray(from));
    return out;
  }

  /** A marker at `at`, 'partial' when the data ends inside what may still become one, or null. */
  private match(data: Buffer, at: number): { piece: Piece; length: number } | 'partial' | null {
    const rest = data.length - at;
    const end = this.end;
    if (rest < end.length) {
      if (end.subarray(0, rest).equals(data.subarray(at))) return 'partial';
    } else if (data.subarray(at, at + end.length).equals(end)) return { piece: 'end', length: end.length };
    const d = this.display;
    if (rest <= d.length) return d.subarray(0, rest).equals(data.subarray(at)) ? 'partial' : null;
    if (!data.subarray(at, at + d.length).equals(d)) return null;
    let i = at + d.length;
    let seq = 0;
    while (i < data.length && i - at - d.length < MAX_SEQ_DIGITS && data[i] >= 0x30 && data[i] <= 0x39) seq = seq * 10 + (data[i++] - 0x30);
    if (i === data.length) return 'partial';
    if (data[i] !== 0 || i === at + d.length) return null;
    return { piece: { seq }, length: i + 1 - at };
  }

  flush(): Buffer {
    const c = this.carry;
    this.carry = Buffer.alloc(0);
    return c;
  }
}

/** A display frame, waiting for its place in the streams. */
interface PendingDisplay {
  /** null: the host's caps refused it (its place is still passed). */
  display: DisplayOutput | null;
  update: boolean;
  /** The streams the guest wrote its marker to. */
  marks: Record<StreamName, boolean>;
}

interface StreamState {
  scanner: MarkerScanner;
  /** Pieces not yet taken: the stream waits at a display marker whose frame has not come. */
  queue: Piece[];
  queued: number;
  /** The last display marker this stream passed. */
  reached: number;
}

/** Bytes a stream may hold back while it waits for a display frame; past it, the order gives way. */
const MAX_HELD_BYTES = 4 * 1024 * 1024;

/** Why a run's tool calls are cancelled when it ends: made once (an abort without a reason makes a DOMException, stack and all, every run). */
const RUN_ENDED = new DOMException('The run ended.', 'AbortError');

/** One execution on a guest: its output (up to the end token of each stream), tool calls, result and failure. */
export class GuestRun extends RunSkeleton {
  readonly tools: ToolDispatcher;
  readonly toolAbort = new AbortController();
  readonly endToken = randomToken(12);
  private readonly streams: Record<StreamName, StreamState>;
  readonly ended: Record<StreamName, boolean> = { stdout: false, stderr: false };
  /** Display frames by sequence number, until their place in both streams is reached. */
  private readonly pending = new Map<number, PendingDisplay>();
  /** The last display placed (or given up on). */
  private released = 0;
  /** The highest display sequence number a frame carried. */
  lastDisplaySeq = 0;
  private forced = false;
  /** File frames still being written out (the item waits for them). */
  readonly fileWrites: Promise<unknown>[] = [];
  /** File frames that came (at most the limit). */
  filesSeen = 0;
  fileBytes = 0;
  completion?: Completion;
  failure?: ExecutionError;
  lastCallId = 0;
  stateLost = false;
  /** Sent to the background by the person (./detach): its job. */
  detached?: Detached;
  /** Unhooks the caller's Stop (a run sent to the background no longer heeds the turn's Stop). */
  unwatch?: () => void;
  private resolveDetached!: (item: CodeInterpreterCallItem) => void;
  /** Settles with the item its caller gets when the run is sent to the background. */
  readonly detachedItem = new Promise<CodeInterpreterCallItem>((r) => (this.resolveDetached = r));

  /** The run was sent to the background: its caller gets `item` now. */
  handOver(item: CodeInterpreterCallItem): void {
    this.unwatch?.();
    this.resolveDetached(item);
  }

  constructor(
    readonly runId: number,
    readonly request: ExecuteRequest,
    readonly options: ExecuteOptions,
    limits: RuntimeLimits,
    itemId: string,
    interruptGraceMs: number,
  ) {
    // The guest announces an update that replaced nothing as an update all the same (it is shown as new).
    super(itemId, options, limits, () => interruptGraceMs, { announceUnmatchedUpdates: true });
    const stream = (): StreamState => ({ scanner: new MarkerScanner(this.endToken), queue: [], queued: 0, reached: 0 });
    this.streams = { stdout: stream(), stderr: stream() };
    this.tools = new ToolDispatcher({
      itemId,
      emit: (e) => this.emit(e),
      handler: options.onToolCall,
      enabled: request.tools !== false,
      maxConcurrent: limits.maxConcurrentToolCalls,
      maxTotal: limits.maxToolCallsPerRun,
      signal: this.toolAbort.signal,
      pauseClock: () => this.clock.pause(),
      note: (text) => this.note(text),
      onFlood: (what) => this.onToolFlood?.(what),
    });
  }

  onOutput(stream: StreamName, chunk: Buffer): void {
    if (this.ended[stream]) return;
    const st = this.streams[stream];
    for (const p of st.scanner.push(chunk)) {
      st.queue.push(p);
      if (Buffer.isBuffer(p)) st.queued += p.length;
    }
    if (st.queued > MAX_HELD_BYTES) this.forced = true;
    this.pump();
  }

  /**
   * A display frame: it is placed once both streams it marked have reached its marker (the text before it
   * is out, the text after it waits), in order of the sequence numbers. `display` null: refused by the
   * caps, but its place is passed all the same.
   */
  onDisplay(seq: number, display: DisplayOutput | null, marks: Record<StreamName, boolean>, update: boolean): void {
    this.lastDisplaySeq = seq;
    if (seq <= this.released) {
      // Its place was given up on (a stream held too much, or the output ended): shown where we are now.
      this.place({ display, marks, update });
      return;
    }
    this.pending.set(seq, { display, marks, update });
    this.pump();
  }

  /** A note of the host's own (a cap, a refused display), on stderr where the run's output stands. */
  note(text: string): void {
    this.out.note(text);
  }

  /** Takes what the streams hold and places displays whose turn it is, until nothing moves. */
  private pump(): void {
    for (let guard = 0; guard < 100_000; guard++) {
      this.drain('stdout');
      this.drain('stderr');
      const next = this.released + 1;
      const frame = this.pending.get(next);
      const at = (s: StreamName) => this.streams[s].reached >= next || this.ended[s];
      if (frame && (this.forced || ((!frame.marks.stdout || at('stdout')) && (!frame.marks.stderr || at('stderr'))))) {
        this.pending.delete(next);
        this.released = next;
        this.place(frame);
        continue;
      }
      if (!frame && this.forced && (this.streams.stdout.reached >= next || this.streams.stderr.reached >= next)) {
        this.released = next; // a marker whose frame never came
        continue;
      }
      return;
    }
  }

  /** Takes a stream's pieces until it reaches a display marker that is not placed yet. */
  private drain(stream: StreamName): void {
    const st = this.streams[stream];
    while (st.queue.length && !this.ended[stream]) {
      if (st.reached > this.released) return;
      const p = st.queue.shift()!;
      if (p === 'end') {
        this.ended[stream] = true;
        st.queue.length = 0;
        this.onEnded?.();
      } else if (Buffer.isBuffer(p)) {
        st.queued -= p.length;
        this.out.bytes(stream, p);
      } else if (p.seq > st.reached) st.reached = p.seq;
    }
  }

  private place(frame: PendingDisplay): void {
    if (frame.display) this.out.place(frame.display, frame.update);
  }

  /** The code kept sending tool calls far past the run's limit (set by the session: it stops the guest). */
  onToolFlood?: (what: string) => void;

  /** Called when an end token arrives (set once the result is in). */
  onEnded?: () => void;

  /** The streams are over (the tokens arrived, or the pipes closed): place what is left, emit the rest. */
  endOutput(): void {
    this.forced = true;
    for (const stream of ['stdout', 'stderr'] as const) {
      const st = this.streams[stream];
      const rest = st.scanner.flush();
      if (rest.length) st.queue.push(rest);
    }
    this.pump();
    // Frames whose markers never came, in order.
    for (const seq of [...this.pending.keys()].sort((a, b) => a - b)) {
      this.place(this.pending.get(seq)!);
      this.pending.delete(seq);
      this.released = Math.max(this.released, seq);
    }
    for (const stream of ['stdout', 'stderr'] as const) {
      const st = this.streams[stream];
      for (const p of st.queue) if (Buffer.isBuffer(p)) this.out.bytes(stream, p);
      st.queue.length = 0;
      this.ended[stream] = true;
      this.out.end(stream);
    }
    this.out.close();
  }

  /** A file the code wrote, copied to the host (within the caps), listed on the execution. */
  onFile(frame: Unchecked<Extract<GuestFrame, { t: 'file' }>>, l: RuntimeLimits, store: ArtifactStore | undefined): void {
    const rel = safeRelativePath(frame.path);
    if (!store || !rel || this.filesSeen >= l.maxFiles) return;
    this.filesSeen++;
    const size = isInt(frame.size) && frame.size >= 0 ? frame.size : 0;
    let note = typeof frame.note === 'string' && frame.note ? frame.note.slice(0, 300) : undefined;
    let data: Buffer | undefined;
    if (typeof frame.data === 'string') {
      data = Buffer.from(frame.data, 'base64');
      if (data.length > l.maxFileBytes || this.fileBytes + data.length > l.maxFilesTotalBytes) {
        note = `too large to copy out (${formatBytes(data.length)}; the limit is ${formatBytes(l.maxFileBytes)} a file and ${formatBytes(l.maxFilesTotalBytes)} an execution)`;
        data = undefined;
      } else this.fileBytes += data.length;
    }
    const index = this.out.capture.reserveFile();
    if (!data) {
      this.out.capture.setFile(index, ArtifactStore.output(rel, size, undefined, note ?? 'its contents were not sent'));
      return;
    }
    const bytes = data;
    this.fileWrites.push(
      store.write(this.itemId, rel, bytes).then(
        (hostPath) => this.out.capture.setFile(index, ArtifactStore.output(rel, bytes.length, hostPath)),
        (err: Error) => this.out.capture.setFile(index, ArtifactStore.output(rel, bytes.length, undefined, `it could not be copied out: ${err.message}`)),
      ),
    );
  }

  override finish(): void {
    if (this.finished) return;
    super.finish();
    this.toolAbort.abort(RUN_ENDED);
  }
}
