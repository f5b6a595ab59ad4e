/**
 * The code's `call_tool` requests of one execution, run on the host: bounded concurrency, each call
 * announced and timed, each answered with an outcome. Shared by the local guest and the Jupyter tool channel.
 */
import type { CodeActEvent } from '../../common/events';
import { isDiscoveryCall, TOOL_CATALOG } from '../../common/tools';
import type { ToolCallHandler } from './types';
import { pausedTime } from '../util/timeout';

/** A call's outcome; `json` is the value already serialised (once), for a runtime to send as it is. */
export type ToolOutcome = { ok: true; value: unknown; json: string } | { ok: false; error: string };

export interface ToolDispatcherOptions {
  itemId: string;
  emit: (e: CodeActEvent) => void;
  handler?: ToolCallHandler;
  /** False for plain `execute_code`: every call is refused. */
  enabled: boolean;
  maxConcurrent: number;
  /** Fires when the run ends: calls still queued or running are told to stop. */
  signal: AbortSignal;
  /** Stops the run's clock until the returned function is called (see ToolCallRequest.pause). */
  pauseClock?: () => () => void;
}

/**
 * Runs the code's `call_tool` requests on the host for one execution: at most `maxConcurrent` at once (the
 * rest queue), each announced by `codeact.tool_call.started` and `.completed`, each resolving to an outcome
 * (never rejecting) that the runtime sends back to the code.
 */
export class ToolDispatcher {
  private active = 0;
  private queued = 0;
  private next = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly o: ToolDispatcherOptions) {}

  /** Calls started or waiting for a slot. */
  get inFlight(): number {
    return this.active + this.queued;
  }

  async dispatch(name: string, args: unknown): Promise<ToolOutcome> {
    if (this.active >= this.o.maxConcurrent) {
      this.queued++;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
      this.queued--;
    }
    this.active++;
    try {
      return await this.run(name, args);
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }

  private async run(name: string, args: unknown): Promise<ToolOutcome> {
    const { itemId } = this.o;
    // Discovery calls are shown quietly (kind "discovery"); the catalogue the guest fetches to build its
    // `tools` module is plumbing and not shown at all.
    const discovery = isDiscoveryCall(name);
    const emit = name === TOOL_CATALOG ? () => {} : discovery ? (e: CodeActEvent) => this.o.emit({ ...e, kind: 'discovery' } as CodeActEvent) : this.o.emit;
    const callId = `${itemId}:${++this.next}`;
    const started = performance.now();
    // Time spent waiting for the person (an approval) counts neither against the run's timeout nor in the call's duration.
    const { pause, pausedMs } = pausedTime(this.o.pauseClock);
    const ms = () => Math.round((performance.now() - started - pausedMs()) * 100) / 100;
    emit({ type: 'codeact.tool_call.started', item_id: itemId, call_id: callId, name, arguments: args });
    try {
      if (this.o.signal.aborted) throw new Error('The run has ended.');
      if (!this.o.handler || !this.o.enabled) throw new Error(`No managed tools are available in this run, so "${name}" cannot be called.`);
      const value = (await this.o.handler({ itemId, callId, name, arguments: args, pause }, this.o.signal)) ?? null;
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
