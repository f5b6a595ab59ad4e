/**
 * The host side of `call_tool` for Jupyter kernels.
 *
 * Why the stdin channel (input_request / input_reply) and not comms:
 * - ipykernel (6.17 here, and 6.x generally) handles shell-channel messages one at a time, and
 *   comm_msg is a shell message. While a cell runs, even one that is only awaiting, a comm message
 *   waits until the cell has finished (verified: a comm_msg sent 0.5 s into a 2 s
 *   `await asyncio.sleep(2)` cell was handled after the cell ended). A tool call that waits for a
 *   comm reply would deadlock.
 * - The stdin channel is serviced *during* the cell: the kernel sends an input_request and polls its
 *   stdin socket for the reply (that is how `input()` works in notebooks). It passes through Jupyter
 *   Server, Kernel Gateway and Enterprise Gateway unchanged.
 *
 * Robustness against the user's own `input()`:
 * - Runs are executed with `allow_stdin: false`, so a plain `input()` or `getpass()` never reaches the
 *   host: the bridge makes it raise EOFError with an explanation (no one is there to type).
 * - The bridge sends tool frames as input_requests on the kernel's stdin socket itself (bypassing
 *   that guard, as ipykernel's own `_input_request` does), with a prompt that starts with
 *   NUL + "codeact:" + a per-kernel random nonce. Any other input_request the host sees
 *   (code that forces its way to the raw channel) is answered with EOF at once, so it can never hang
 *   a run or be taken for a tool frame. Frames are untrusted input all the same: parsed strictly,
 *   size-capped, and every call still goes through the host's gateway (allowlist, schemas, approval).
 *
 * Concurrency: the kernel blocks its event loop while it waits for an input_reply, so one frame is
 * outstanding at a time. To still run `asyncio.gather(call_tool(...), ...)` concurrently, calls are
 * batched: every call made before the kernel's event loop next turns leaves in one frame, the host
 * starts them all at once (bounded by maxConcurrentToolCalls) and replies as soon as at least one
 * result is ready, with every result ready by then. The kernel resumes the tasks whose calls
 * finished, then sends the next frame with any new calls and waits again. So gathered calls overlap
 * on the host, results arrive in completion order, and follow-up calls join the calls still running.
 * The limit: while a frame waits, other asyncio tasks of the kernel that wait on sockets (not on
 * tools) make no progress; tasks sleeping on timers do, because the kernel tells the host how long
 * it may hold the reply (`hold_ms`, the time to its next timer) and the host answers early.
 *
 * Lost messages: when the WebSocket between host and server drops, Jupyter Server buffers what the
 * kernel sends and replays it, but a reply the host wrote into the dying socket is gone. So every
 * frame carries a sequence number, echoed by its reply. The kernel ignores replies for another
 * number and repeats its request every few seconds until the right reply comes; the host answers a
 * repeated frame with the reply it already gave (calls never run twice), ignores replayed copies of
 * a request it has seen, and re-sends its last reply when the WebSocket comes back.
 *
 * Frames (JSON after the prompt prefix / in the reply value):
 *   kernel -> host  {"run": id, "seq": n, "calls": [{"id": str, "name": str, "arguments": object}], "hold_ms": int|null}
 *   host -> kernel  {"seq": n, "results": [{"id", "ok": true, "output"} | {"id", "ok": false, "error": str, "limit"?: true}], "lost"?: true}
 *                   (limit: the run's limit on tool calls refused it; the kernel refuses every later call itself)
 *                   {"seq": n, "cancelled": true}   (the run is being stopped: pending calls raise CancelledError)
 */
import type { CodeActEvent } from '../../../common/events';
import type { ToolCallHandler } from '../types';
import { ToolDispatcher } from '../toolDispatcher';

/** Most calls one frame may carry. */
const MAX_CALLS_PER_FRAME = 4096;

interface ToolResult {
  id: string;
  ok: boolean;
  output?: unknown;
  error?: string;
  /** Refused by the run's limit on tool calls: the kernel raises it for every later call itself. */
  limit?: true;
}

interface ToolChannelOptions {
  itemId: string;
  /** Full prompt prefix (NUL, "codeact:", nonce, ":"). */
  prefix: string;
  runId: string;
  handler?: ToolCallHandler;
  toolsEnabled: boolean;
  maxConcurrent: number;
  /** Most calls the run may make (codeact.toolCalls.maxPerRun). */
  maxTotal: number;
  maxFrameBytes: number;
  /** Stops the run's clock while the person decides an approval (see ToolCallRequest.pause). */
  pauseClock?: () => () => void;
  emit: (event: CodeActEvent) => void;
  /** Sends an input_reply for the input_request whose header is given. */
  reply: (value: string, parentHeader: unknown) => void;
  /** Called once when the kernel sent something that is not a valid frame. */
  onViolation: (message: string) => void;
  /** A note of the host's on the run's stderr (a cap that refused calls). */
  note?: (text: string) => void;
}

/** Request ids remembered to drop replayed copies (the newest; a replay comes within a reconnect). */
const MAX_SEEN_REQUESTS = 1024;

export class ToolChannel {
  private readonly abort = new AbortController();
  /** The request the kernel is waiting on, not answered yet. */
  private pending: { header: unknown; seq: number } | null = null;
  /** The last reply sent, until the kernel shows it arrived (by asking with a higher seq). */
  private lastReply: { header: unknown; seq: number; payload: string } | null = null;
  private lastSeq = 0;
  private readonly seenRequests = new Set<string>();
  private holdTimer?: NodeJS.Timeout;
  private flushQueued = false;
  private readonly ready: ToolResult[] = [];
  private readonly outstanding = new Set<string>();
  private readonly seen = new Set<string>();
  private closed = false;
  private stopped = false;
  private readonly dispatcher: ToolDispatcher;

  constructor(private readonly o: ToolChannelOptions) {
    this.dispatcher = new ToolDispatcher({
      itemId: o.itemId,
      emit: o.emit,
      handler: o.handler,
      enabled: o.toolsEnabled,
      maxConcurrent: o.maxConcurrent,
      maxTotal: o.maxTotal,
      signal: this.abort.signal,
      pauseClock: o.pauseClock,
      note: o.note,
      onFlood: (what) => {
        this.cancel();
        o.onViolation(`The kernel sent ${what}; the run was stopped.`);
      },
    });
  }

  /** Tool calls currently running or queued on the host. */
  get inFlight(): number {
    return this.outstanding.size;
  }

  /** Handles one input_request of the run. */
  onInputRequest(prompt: string, header: unknown): void {
    const msgId = (header as { msg_id?: unknown } | null)?.msg_id;
    if (typeof msgId === 'string') {
      // Jupyter Server may replay a request the host already got before a reconnect.
      if (this.seenRequests.has(msgId)) return;
      this.seenRequests.add(msgId);
      if (this.seenRequests.size > MAX_SEEN_REQUESTS) this.seenRequests.delete(this.seenRequests.values().next().value as string);
    }
    if (this.closed || typeof prompt !== 'string' || !prompt.startsWith(this.o.prefix)) {
      // Not a tool frame: the code reached the raw stdin channel. End-of-file, at once.
      this.o.reply('\u0004', header);
      return;
    }
    const body = prompt.slice(this.o.prefix.length);
    if (Buffer.byteLength(body, 'utf8') > this.o.maxFrameBytes) {
      this.o.reply(JSON.stringify({ cancelled: true }), header);
      this.o.onViolation(`The kernel sent a tool frame over ${this.o.maxFrameBytes} bytes; the run was stopped.`);
      return;
    }
    let frame: { run?: unknown; seq?: unknown; calls?: unknown; hold_ms?: unknown };
    try {
      frame = JSON.parse(body);
    } catch {
      frame = {};
    }
    const seq = frame?.seq;
    if (
      !frame ||
      typeof frame !== 'object' ||
      frame.run !== this.o.runId ||
      !Number.isSafeInteger(seq) ||
      (seq as number) < 1 ||
      !Array.isArray(frame.calls) ||
      frame.calls.length > MAX_CALLS_PER_FRAME
    ) {
      this.o.reply(JSON.stringify({ cancelled: true }), header);
      this.o.onViolation('The kernel sent a malformed tool frame; the run was stopped.');
      return;
    }
    const n = seq as number;
    if (this.stopped) {
      this.answer(header, n, JSON.stringify({ seq: n, cancelled: true }));
      return;
    }
    if (n < this.lastSeq) return; // an old frame; the kernel has moved on
    if (this.lastReply && n === this.lastReply.seq) {
      // The kernel asks again: the reply was lost (or is still on its way; it ignores duplicates).
      this.answer(header, n, this.lastReply.payload);
      return;
    }
    if (this.pending && n === this.pending.seq) {
      this.pending.header = header; // the same frame again while its calls run: answer the latest copy
      return;
    }
    // A new frame.
    this.lastSeq = n;
    this.lastReply = null;
    this.pending = { header, seq: n };
    clearTimeout(this.holdTimer);
    for (const raw of frame.calls as unknown[]) this.accept(raw);
    if (this.ready.length) {
      this.queueFlush();
    } else if (this.outstanding.size === 0) {
      // Nothing to wait for: the kernel is waiting on calls the host does not know.
      this.sendReply({ lost: true });
    } else if (typeof frame.hold_ms === 'number' && Number.isFinite(frame.hold_ms) && frame.hold_ms >= 0) {
      this.holdTimer = setTimeout(() => this.sendReply(), Math.min(frame.hold_ms, 2_147_000_000));
    }
  }

  /** The WebSocket is back: the last reply may have been lost with the old one, so send it again. */
  onReconnected(): void {
    if (this.closed || !this.lastReply) return;
    this.o.reply(this.lastReply.payload, this.lastReply.header);
  }

  /** Stop: abort the handlers and release the kernel if it waits for a reply. */
  cancel(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort();
    if (this.pending) this.sendReply({ cancelled: true });
  }

  /** The run is over: nothing more is replied; handlers still running are aborted. */
  close(): void {
    this.closed = true;
    this.stopped = true;
    this.abort.abort();
    clearTimeout(this.holdTimer);
    this.pending = null;
    this.lastReply = null;
  }

  private answer(header: unknown, seq: number, payload: string): void {
    this.lastReply = { header, seq, payload };
    this.o.reply(payload, header);
  }

  private accept(raw: unknown): void {
    const call = raw as { id?: unknown; name?: unknown; arguments?: unknown };
    const id = typeof call?.id === 'string' ? call.id : undefined;
    if (!id || this.seen.has(id)) return; // the kernel cannot be waiting on a call it did not name
    this.seen.add(id);
    const name = call.name;
    const args = call.arguments === undefined ? {} : call.arguments;
    if (typeof name !== 'string' || !name || args === null || typeof args !== 'object' || Array.isArray(args)) {
      this.ready.push({ id, ok: false, error: 'call_tool: malformed call (the name must be a string and the arguments an object)' });
      return;
    }
    this.outstanding.add(id);
    void this.dispatcher.dispatch(name, args).then((r) => {
      this.outstanding.delete(id);
      if (this.closed || this.stopped) return;
      this.ready.push(r.ok ? { id, ok: true, output: r.value } : { id, ok: false, error: r.error, ...(r.limit ? { limit: true as const } : {}) });
      this.queueFlush();
    });
  }

  /** Replies with every result ready in this turn of the event loop (calls finishing together share a reply). */
  private queueFlush(): void {
    if (this.flushQueued || this.pending === null) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      if (this.ready.length && this.pending !== null) this.sendReply();
    });
  }

  private sendReply(extra: Record<string, unknown> = {}): void {
    const pending = this.pending;
    if (pending === null || this.closed) return;
    this.pending = null;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    const payload = extra.cancelled ? { seq: pending.seq, cancelled: true } : { seq: pending.seq, results: this.ready.splice(0), ...extra };
    this.answer(pending.header, pending.seq, JSON.stringify(payload));
  }
}
