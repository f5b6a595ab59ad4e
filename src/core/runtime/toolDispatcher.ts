/**
 * The code's `call_tool` requests of one execution, run on the host: bounded concurrency, each call
 * announced and timed, each answered with an outcome. Shared by the local guest, the Jupyter tool channel and
 * the agent loop's direct calls (ToolDispatcher.one).
 *
 * The frames that carry the calls are untrusted (code can write them straight to the protocol channel,
 * past the guest library's own bounds), so the host bounds them itself: at most `maxTotal` calls a run
 * (`codeact.toolCalls.maxPerRun`) and {@link MAX_OUTSTANDING_TOOL_CALLS} waiting or running at once. A call
 * past either is answered at once with an error, unannounced; the queue costs O(1) a call, and what is
 * still queued when the run ends is dropped, never started.
 */
import type { CodeActEvent } from '../../common/events';
import { isDiscoveryCall, TOOL_CATALOG } from '../../common/tools';
import type { ToolCallHandler, ToolCallRequest } from './types';
import { pausedTime } from '../util/timeout';
import { tooDeep } from './execution';
import { MAX_VALUE_DEPTH } from '../../common/jsonShape';

/**
 * A call's outcome; `json` is the value already serialised (once), for a runtime to send as it is. `limit`:
 * refused by the per-run limit, so every later call of the run would be too (the guest libraries then raise
 * the error themselves and send no more).
 */
type ToolOutcome = { ok: true; value: unknown; json: string } | { ok: false; error: string; limit?: true };

/** Most calls of one execution waiting for a slot or running on the host at once. */
export const MAX_OUTSTANDING_TOOL_CALLS = 4096;
/**
 * Calls refused past the per-run limit before the run is stopped as a protocol violation. A guest library
 * stops sending once it has seen the limit's refusal (`limit` in the outcome), so it sends at most the calls
 * already on their way (a Jupyter frame holds at most 4,096); only frames written past it reach this.
 */
export const TOOL_FLOOD_MARGIN = MAX_OUTSTANDING_TOOL_CALLS;

/** The error a call past the per-run limit gets. */
function tooManyCallsError(limit: number): string {
  return `too many tool calls in this run: limit ${limit}. Make fewer calls in one run (split the work over several runs), or raise codeact.toolCalls.maxPerRun.`;
}

/** The item the calls belong to and its event stream, as each call's request carries them. */
interface ToolDispatcherOptions extends Required<Pick<ToolCallRequest, 'itemId' | 'emit'>> {
  handler?: ToolCallHandler;
  /** False for plain `execute_code`: every call is refused. */
  enabled: boolean;
  maxConcurrent: number;
  /** Most calls the run may make (codeact.toolCalls.maxPerRun). */
  maxTotal: number;
  /** Fires when the run ends: calls still queued or running are told to stop. */
  signal: AbortSignal;
  /** The run's clock, paused with each call's own (ToolCallRequest.pause). */
  pauseClock?: ToolCallRequest['pause'];
  /** A note of the host's on the execution (once per cap that refused a call). */
  note?: (text: string) => void;
  /** Calls kept coming {@link TOOL_FLOOD_MARGIN} past the limit (called once): the runtime stops the run. */
  onFlood?: (what: string) => void;
  /** Before each call's number in its id (`<item id>:<prefix><n>`): a background job's calls (`job2.`) never take its run's ids. */
  callPrefix?: string;
}

const ENDED: ToolOutcome = { ok: false, error: 'The run has ended.' };

/** A first-in first-out queue whose push and shift cost O(1) (amortised), however long it grows. */
class Fifo<T> {
  private items: Array<T | undefined> = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/**
 * Runs the code's `call_tool` requests on the host for one execution: at most `maxConcurrent` at once (the
 * rest queue), each announced by `codeact.tool_call.started` and `.completed`, each resolving to an outcome
 * (never rejecting) that the runtime sends back to the code.
 */
export class ToolDispatcher {
  private active = 0;
  private next = 0;
  /** Calls that came (accepted or refused). */
  private received = 0;
  private readonly noted = new Set<string>();
  private flooded = false;
  /** Queued calls; each is resumed with true (its slot) or false (the run ended first). */
  private readonly waiting = new Fifo<(go: boolean) => void>();

  constructor(private readonly o: ToolDispatcherOptions) {
    o.signal.addEventListener(
      'abort',
      () => {
        for (let w = this.waiting.shift(); w; w = this.waiting.shift()) w(false);
      },
      { once: true },
    );
  }

  /**
   * One call outside an execution (a function the model calls directly): announced and timed as the code's
   * calls are, with the call id `<item id>:1`.
   */
  static one(o: Pick<ToolDispatcherOptions, 'itemId' | 'emit' | 'handler' | 'signal'>, name: string, args: unknown): Promise<ToolOutcome> {
    return new ToolDispatcher({ ...o, enabled: true, maxConcurrent: 1, maxTotal: 1 }).dispatch(name, args);
  }

  /** Calls started or waiting for a slot. */
  get inFlight(): number {
    return this.active + this.waiting.length;
  }

  async dispatch(name: string, args: unknown): Promise<ToolOutcome> {
    if (this.o.signal.aborted) return ENDED;
    const refusal = this.admit();
    if (refusal) return refusal;
    // Announced with its arguments, so only arguments every consumer can walk (the gateway's caps are tighter).
    if (tooDeep(args))
      return {
        ok: false,
        error: `call_tool(${JSON.stringify(name.slice(0, 100))}): the arguments are nested deeper than ${MAX_VALUE_DEPTH} levels; pass a flatter value.`,
      };
    if (this.active >= this.o.maxConcurrent) {
      // The slot is handed over by the call that frees it (see below), so no other call can take it between.
      if (!(await new Promise<boolean>((resolve) => this.waiting.push(resolve)))) return ENDED;
    } else {
      this.active++;
    }
    try {
      return await this.run(name, args);
    } finally {
      const next = this.o.signal.aborted ? undefined : this.waiting.shift();
      if (next) next(true);
      else this.active--;
    }
  }

  /** The refusal of a new call (a cap), or undefined. O(1), and nothing is announced for a refused call. */
  private admit(): ToolOutcome | undefined {
    const limit = this.o.maxTotal;
    if (++this.received > limit) {
      this.noteOnce(
        'total',
        `[codeact: this run reached its limit of ${limit.toLocaleString('en-US')} tool calls (codeact.toolCalls.maxPerRun); further calls were refused]\n`,
      );
      if (this.received > limit + TOOL_FLOOD_MARGIN && !this.flooded) {
        this.flooded = true;
        this.o.onFlood?.(
          `more than ${(limit + TOOL_FLOOD_MARGIN).toLocaleString('en-US')} tool calls in one run (the limit is ${limit.toLocaleString('en-US')})`,
        );
      }
      return { ok: false, error: tooManyCallsError(limit), limit: true };
    }
    if (this.inFlight >= MAX_OUTSTANDING_TOOL_CALLS) {
      this.noteOnce(
        'outstanding',
        `[codeact: more than ${MAX_OUTSTANDING_TOOL_CALLS.toLocaleString('en-US')} tool calls of this run were waiting at once; further calls were refused]\n`,
      );
      return { ok: false, error: `too many tool calls waiting in this run: limit ${MAX_OUTSTANDING_TOOL_CALLS} at once. Await the calls in smaller batches.` };
    }
    return undefined;
  }

  private noteOnce(cap: string, text: string): void {
    if (this.noted.has(cap)) return;
    this.noted.add(cap);
    this.o.note?.(text);
  }

  private async run(name: string, args: unknown): Promise<ToolOutcome> {
    const { itemId } = this.o;
    // Discovery calls are shown quietly (kind "discovery"); the catalogue the guest fetches to build its
    // `tools` module is plumbing and not shown at all.
    const discovery = isDiscoveryCall(name);
    const emit = name === TOOL_CATALOG ? () => {} : discovery ? (e: CodeActEvent) => this.o.emit({ ...e, kind: 'discovery' } as CodeActEvent) : this.o.emit;
    const callId = `${itemId}:${this.o.callPrefix ?? ''}${++this.next}`;
    const started = performance.now();
    // Time spent waiting for the person (an approval) counts neither against the run's timeout nor in the call's duration.
    const { pause, pausedMs } = pausedTime(this.o.pauseClock);
    const ms = () => Math.round((performance.now() - started - pausedMs()) * 100) / 100;
    emit({ type: 'codeact.tool_call.started', item_id: itemId, call_id: callId, name, arguments: args });
    try {
      if (this.o.signal.aborted) throw new Error('The run has ended.');
      if (!this.o.handler || !this.o.enabled) throw new Error(`No managed tools are available in this run, so "${name}" cannot be called.`);
      const value = (await this.o.handler({ itemId, callId, name, arguments: args, pause, emit: this.o.emit }, this.o.signal)) ?? null;
      let json: string;
      try {
        json = JSON.stringify(value);
      } catch (err) {
        throw new Error(`The tool "${name}" returned a value that is not JSON (${(err as Error).message}).`);
      }
      emit({ type: 'codeact.tool_call.completed', item_id: itemId, call_id: callId, name, output: value, duration_ms: ms() });
      return { ok: true, value, json };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      emit({ type: 'codeact.tool_call.completed', item_id: itemId, call_id: callId, name, error: message, duration_ms: ms() });
      return { ok: false, error: message };
    }
  }
}
