/**
 * The background jobs of one local session, as its guest reports them (guest/codeact_jobs.py; the design:
 * docs/design/backgroundJobs.md): which execution started each, the `codeact.job` events, and the notes the
 * model reads at its next step. A note is made only from the guest's frame after it reaped the job's
 * process, or when the session itself ended: nothing says a job ended while it runs.
 */
import type { JobChanged } from '../../../common/events';
import { formatDuration, formatElapsed } from '../../../common/format';
import { Emitter } from '../../../common/emitter';
import { isInt, type GuestFrame, type Unchecked } from './guestFrames';
import type { JobTools } from './jobTools';

type JobFrame = Unchecked<Extract<GuestFrame, { t: 'job' }>>;

const ENDED = new Set(['done', 'failed', 'stopped', 'timed_out']);
/** The most characters of a job's value, error or last output a note quotes. */
const QUOTE_CHARS = 1500;

const quote = (v: unknown): string => (typeof v === 'string' ? v.slice(0, QUOTE_CHARS) : '');

export class GuestJobs {
  /** Running jobs: number -> the execution that started it. */
  private readonly running = new Map<number, string | undefined>();
  private readonly started = new Map<number, number>();
  /** The highest job number the guest has started (numbers only grow). */
  private last = 0;
  readonly changed = new Emitter<JobChanged>();

  constructor(
    private readonly sessionId: () => string,
    /** codeact.jobs.maxMinutes, as a note about a job stopped at its limit says it. */
    private readonly maxJobMs: number,
    /** codeact.jobs.maxPerSession: a guest that reports far more running jobs is broken (the slack: an end frame may follow the next start). */
    private readonly maxJobs: number,
    /** The jobs' tool calls (./jobTools). */
    readonly tools?: JobTools,
  ) {}

  /** Jobs running now. */
  get count(): number {
    return this.running.size;
  }

  /** A `job` frame; returns what is wrong with it, if anything. `start`: the execution of the frame's run, if it is the current one. */
  onFrame(frame: JobFrame, start: Parameters<JobTools['open']>[1]): string | undefined {
    const itemId = start?.itemId;
    const job = frame.job;
    if (!isInt(job) || job < 1 || typeof frame.state !== 'string') return 'a malformed job frame';
    if (frame.state === 'running') {
      if (job <= this.last) return 'a job frame for a job already started';
      if (this.running.size >= this.maxJobs + 16) return 'more running jobs than codeact.jobs.maxPerSession allows';
      this.last = job;
      this.running.set(job, itemId);
      this.started.set(job, performance.now());
      this.tools?.open(job, start);
      this.fire({ job, state: 'running', item_id: itemId, message: `Background job ${job} is running.` });
      return undefined;
    }
    if (!ENDED.has(frame.state) || !this.running.has(job)) return 'a job frame for no running job';
    const itemOf = this.running.get(job);
    const measured = (performance.now() - this.started.get(job)!) / 1000;
    this.running.delete(job);
    this.started.delete(job);
    this.tools?.close(job);
    const seconds = typeof frame.seconds === 'number' && frame.seconds >= 0 && frame.seconds < 1e8 ? frame.seconds : measured;
    const state = frame.state as JobChanged['state'];
    const cut = frame.cut === true;
    this.fire({ job, state, item_id: itemOf, seconds, ...(cut ? { output_cut: true } : {}), message: this.note(job, state, seconds, frame, cut) });
    return undefined;
  }

  /** The session ended: each running job ended with it (its process tree is killed with the session's). */
  sessionEnded(reason: string): void {
    this.tools?.closeAll();
    for (const [job, itemId] of [...this.running]) {
      const seconds = (performance.now() - this.started.get(job)!) / 1000;
      this.running.delete(job);
      this.started.delete(job);
      this.fire({
        job,
        state: 'ended',
        item_id: itemId,
        seconds,
        message: `Background job ${job} was ended after ${formatElapsed(seconds * 1000)} with its Python session (${reason}); its result is gone.`,
      });
    }
  }

  private note(job: number, state: JobChanged['state'], seconds: number, frame: JobFrame, cut: boolean): string {
    const after = formatElapsed(seconds * 1000);
    const error = frame.error && typeof frame.error === 'object' ? (frame.error as { type?: unknown; message?: unknown }) : undefined;
    const tail = quote(frame.tail).replace(/\n+$/, '');
    let text: string;
    if (state === 'done')
      text = `Background job ${job} finished after ${after}` + (typeof frame.value === 'string' ? `; its value: ${quote(frame.value)}` : '.');
    else if (state === 'failed') text = `Background job ${job} failed after ${after}: ${quote(error?.type) || 'Error'}: ${quote(error?.message)}`;
    else if (state === 'timed_out')
      text = `Background job ${job} was stopped after ${after}: it reached its time limit of ${formatDuration(this.maxJobMs)} (codeact.jobs.maxMinutes).`;
    else text = `Background job ${job} was stopped after ${after}.`;
    if (tail) text += `\nThe end of its output:\n${tail}`;
    if (cut) text += `\n(Its output passed the cap and its middle was cut; job_output(${job}) has its first and last part.)`;
    return text;
  }

  private fire(e: Omit<JobChanged, 'type' | 'session_id'>): void {
    this.changed.fire({ type: 'codeact.job', session_id: this.sessionId(), ...e });
  }
}
