/**
 * `call_tool` from a background job (guest/codeact_jobtools.py): the job's calls come as `tool_call` frames
 * carrying `"job": n` and go to the tool handler of the execution that started the job (its gateway: the
 * allowlist, the schemas, the approval policy), each request carrying the job's number so an approval or a
 * form says which job asks. The answers go back as `tool_result` frames with the same `job`.
 *
 * Bounded as a run's calls are (a dispatcher per job: `codeact.toolCalls.maxPerRun` calls in all,
 * `maxConcurrentToolCalls` at once). A job's calls are settled when it ends (Stop, its time limit, the end of
 * its code) or when its session ends: an approval still open then expires, and no answer is sent.
 */
import type { CodeActEvent, JobToolCall } from '../../../common/events';
import { Emitter } from '../../../common/emitter';
import { ToolDispatcher } from '../toolDispatcher';
import type { ExecuteOptions, RuntimeLimits, ToolCallHandler } from '../types';
import { isInt, type GuestFrame, type Unchecked } from './guestFrames';

type ToolCallFrame = Unchecked<Extract<GuestFrame, { t: 'tool_call' }>>;

interface JobLine {
  dispatcher: ToolDispatcher;
  abort: AbortController;
  lastCallId: number;
}

/** What a job's call gets when the job was started by no run whose calls the host can take (a frame of no current run). */
const NO_HANDLER = 'No managed tools are available to this background job (the execution that started it takes no tool calls).';

/** A job's call as its card shows it, from the dispatcher's start or end of the call (other events: none). */
function jobToolCall(e: CodeActEvent): JobToolCall | undefined {
  if (e.type === 'codeact.tool_call.started') return { call_id: e.call_id, name: e.name, status: 'running', arguments: e.arguments };
  if (e.type !== 'codeact.tool_call.completed') return undefined;
  const end = e.error !== undefined ? { status: 'error' as const, error: e.error } : { status: 'ok' as const, output: e.output };
  return { call_id: e.call_id, name: e.name, ...end, duration_ms: e.duration_ms };
}

export class JobTools {
  private readonly jobs = new Map<number, JobLine>();
  /** A call of a job started or ended (its card lists them: ./guestJobs). */
  readonly calls = new Emitter<{ job: number; tool: JobToolCall }>();

  constructor(
    private readonly limits: RuntimeLimits,
    /** Sends one line to the guest (already JSON). */
    private readonly sendLine: (line: string) => void,
  ) {}

  /**
   * A job started. `start`: the execution that started it, while it is the current run (the job's calls go to its
   * tool handler; without it every call is refused plainly).
   */
  open(job: number, start: { itemId: string; options: ExecuteOptions; tools: boolean } | undefined): void {
    this.close(job);
    const abort = new AbortController();
    const handler = start?.options.onToolCall;
    const withJob: ToolCallHandler | undefined = handler && ((request, signal) => handler({ ...request, job }, signal));
    const dispatcher = new ToolDispatcher({
      itemId: start?.itemId ?? `job-${job}`,
      // The job's calls are not events of the execution that started it (its card is closed): its own card lists them.
      emit: (e) => {
        const tool = jobToolCall(e);
        if (tool) this.calls.fire({ job, tool });
      },
      handler: withJob ?? (() => Promise.reject(new Error(NO_HANDLER))),
      enabled: start?.tools !== false,
      maxConcurrent: this.limits.maxConcurrentToolCalls,
      maxTotal: this.limits.maxToolCallsPerRun,
      signal: abort.signal,
      callPrefix: `job${job}.`,
    });
    this.jobs.set(job, { dispatcher, abort, lastCallId: 0 });
  }

  /** The job ended (or its session did): its calls still waiting are settled, and never answered. */
  close(job: number): void {
    const line = this.jobs.get(job);
    if (!line) return;
    this.jobs.delete(job);
    line.abort.abort();
  }

  closeAll(): void {
    for (const job of [...this.jobs.keys()]) this.close(job);
  }

  /** A job's `tool_call` frame; returns what is wrong with it (the session stops the guest), if anything. */
  onCall(frame: ToolCallFrame): string | undefined {
    const { job, id } = frame;
    if (!isInt(job) || !isInt(id) || typeof frame.name !== 'string') return 'a malformed tool call';
    const line = this.jobs.get(job);
    // A call of a job that just ended may cross its end frame: it is dropped (the job is gone).
    if (!line) return undefined;
    if (id <= line.lastCallId) return 'a malformed tool call';
    line.lastCallId = id;
    const args = frame.args === undefined ? {} : frame.args;
    void line.dispatcher.dispatch(frame.name, args).then((r) => {
      if (this.jobs.get(job) !== line) return;
      if (r.ok) this.sendLine(`{"t":"tool_result","job":${job},"id":${id},"ok":true,"value":${r.json}}`);
      else this.sendLine(JSON.stringify({ t: 'tool_result', job, id, ok: false, error: r.error, ...(r.limit ? { limit: true } : {}) }));
    });
    return undefined;
  }
}
