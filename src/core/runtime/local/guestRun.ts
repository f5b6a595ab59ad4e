/**
 * The state of one execution on a local guest: its output as it streams (capped, and cut at the run's end
 * token on stdout and stderr), its tool calls, its result or failure, and when it is over.
 */
import type { CodeActEvent, ExecutionError, StreamName } from '../../../common/events';
import { OutputCapture, safeEmit, type Completion } from '../execution';
import { ToolDispatcher } from '../toolDispatcher';
import type { ExecuteOptions, ExecuteRequest, RuntimeLimits } from '../types';
import { randomToken } from '../../util/ids';
import { RunClock } from '../../util/timeout';

const END_PREFIX = Buffer.from('\u0000codeact-end:');

/** Finds the run's end token in a byte stream, holding back only what could be its beginning. */
class EndScanner {
  private carry: Buffer = Buffer.alloc(0);
  constructor(private readonly token: Buffer) {}

  /** Returns [bytes of the run, whether the token was seen]. */
  push(chunk: Buffer): [Buffer, boolean] {
    const data = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = Buffer.alloc(0);
    const at = data.indexOf(this.token);
    if (at >= 0) return [data.subarray(0, at), true];
    // Hold back a tail that may be the start of the token (it always starts with NUL).
    const nul = data.lastIndexOf(0, data.length - 1);
    if (nul >= 0 && data.length - nul < this.token.length && this.token.subarray(0, data.length - nul).equals(data.subarray(nul))) {
      this.carry = Buffer.from(data.subarray(nul));
      return [data.subarray(0, nul), false];
    }
    return [data, false];
  }

  flush(): Buffer {
    const c = this.carry;
    this.carry = Buffer.alloc(0);
    return c;
  }
}

/** One execution on a guest: its output (up to the end token of each stream), tool calls, result and failure. */
export class GuestRun {
  readonly itemId: string;
  readonly emit: (event: CodeActEvent) => void;
  readonly started = performance.now();
  readonly output: OutputCapture;
  readonly tools: ToolDispatcher;
  readonly toolAbort = new AbortController();
  /** The run's timeout; it stops counting while the person decides an approval. */
  readonly clock = new RunClock();
  readonly endToken = randomToken(12);
  readonly scanners: Record<StreamName, EndScanner>;
  readonly ended: Record<StreamName, boolean> = { stdout: false, stderr: false };
  completion?: Completion;
  failure?: ExecutionError;
  lastCallId = 0;
  finished = false;
  stateLost = false;
  private resolveDone!: () => void;
  readonly done = new Promise<void>((r) => (this.resolveDone = r));

  constructor(
    readonly runId: number,
    readonly request: ExecuteRequest,
    readonly options: ExecuteOptions,
    limits: RuntimeLimits,
    itemId: string,
  ) {
    this.itemId = itemId;
    this.emit = safeEmit(options.onEvent);
    this.output = new OutputCapture(limits.maxOutputBytes);
    const token = Buffer.concat([END_PREFIX, Buffer.from(`${this.endToken}\u0000`)]);
    this.scanners = { stdout: new EndScanner(token), stderr: new EndScanner(token) };
    this.tools = new ToolDispatcher({
      itemId,
      emit: (e) => this.emit(e),
      handler: options.onToolCall,
      enabled: request.tools !== false,
      maxConcurrent: limits.maxConcurrentToolCalls,
      signal: this.toolAbort.signal,
      pauseClock: () => this.clock.pause(),
    });
  }

  onOutput(stream: StreamName, chunk: Buffer): void {
    if (this.ended[stream]) return;
    const [data, seen] = this.scanners[stream].push(chunk);
    if (data.length) this.show(stream, this.output.pushBytes(stream, data));
    if (seen) {
      this.ended[stream] = true;
      this.onEnded?.();
    }
  }

  /** Called when an end token arrives (set once the result is in). */
  onEnded?: () => void;

  /** The streams are over (the token arrived, or the pipes closed): emit what is left. */
  endOutput(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (!this.ended[stream]) {
        const rest = this.scanners[stream].flush();
        if (rest.length) this.show(stream, this.output.pushBytes(stream, rest));
        this.ended[stream] = true;
      }
      this.show(stream, this.output.end(stream));
    }
  }

  /** Streams text that the capture kept. */
  private show(stream: StreamName, text: string): void {
    if (text) this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream, delta: text });
  }

  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.toolAbort.abort();
    this.resolveDone();
  }
}
