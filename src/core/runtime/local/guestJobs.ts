/**
 * The background jobs of one local session, as its guest reports them (guest/codeact_jobs.py; the design:
 * docs/design/backgroundJobs.md): which execution started each, the `codeact.job` events, and the notes the
 * model reads at its next step. A note is made only from the guest's frame after it reaped the job's
 * process, or when the session itself ended: nothing says a job ended while it runs.
 */
import type { JobChanged, JobOutput } from '../../../common/events';
import { formatDuration, formatElapsed } from '../../../common/format';
import { Emitter } from '../../../common/emitter';
import { killTree, nsChildIn } from '../../util/processTree';
import { isInt, type GuestFrame, type Unchecked } from './guestFrames';
import type { GuestHandle } from './guestProcess';
import type { JobTools } from './jobTools';

type JobFrame = Unchecked<Extract<GuestFrame, { t: 'job' }>>;
type OutputFrame = Unchecked<Extract<GuestFrame, { t: 'job_output' }>>;

const ENDED = new Set(['done', 'failed', 'stopped', 'timed_out']);
/** The most characters of a job's value, error or last output a note quotes. */
const QUOTE_CHARS = 1500;

const quote = (v: unknown): string => (typeof v === 'string' ? v.slice(0, QUOTE_CHARS) : '');
/** Characters of a job's live output the host keeps for its card: the first and the last half (the middle is counted, not kept). */
const KEEP_CHARS = 128 * 1024;
/** The largest piece of live output one frame may carry (the guest sends at most 256 KiB at once). */
const MAX_PIECE_CHARS = 1024 * 1024;

/** A job's output as the host keeps it: its start and its end, and how much between was cut. */
class KeptOutput {
  private head = '';
  private tail = '';
  /** Characters (or bytes the guest skipped) left out between head and tail. */
  private cut = 0;

  add(text: string, skipped: number): void {
    this.cut += skipped;
    const room = KEEP_CHARS / 2 - this.head.length;
    if (room > 0 && !this.tail && !this.cut) {
      this.head += text.slice(0, room);
      text = text.slice(room);
    }
    this.tail += text;
    if (this.tail.length > KEEP_CHARS) {
      this.cut += this.tail.length - KEEP_CHARS / 2;
      this.tail = this.tail.slice(-KEEP_CHARS / 2);
    }
  }

  text(): string {
    if (!this.cut) return this.head + this.tail;
    return `${this.head}\n[codeact: ${this.cut.toLocaleString('en-US')} characters of this job's output were cut here]\n${this.tail}`;
  }
}

export class GuestJobs {
  /** Running jobs: number -> the execution that started it. */
  private readonly running = new Map<number, string | undefined>();
  private readonly started = new Map<number, number>();
  /** Running jobs: number -> its pid as the guest reported it (in the guest's namespace; never trusted: see {@link stop}). */
  private readonly pids = new Map<number, number>();
  private readonly outputs = new Map<number, KeptOutput>();
  /** Jobs the host stopped: their end is said as stopped (the guest sees only a process killed by a signal). */
  private readonly stopping = new Set<number>();
  /** Running jobs that are runs the person sent to the background (not forks): number -> how to stop it. */
  private readonly detached = new Map<number, () => void>();
  /** The highest job number taken, by the guest or by a run sent to the background (numbers only grow). */
  private last = 0;
  readonly changed = new Emitter<JobChanged>();
  /** What running jobs print, as it comes. */
  readonly output = new Emitter<JobOutput>();

  constructor(
    private readonly sessionId: () => string,
    /** codeact.jobs.maxMinutes, as a note about a job stopped at its limit says it. */
    private readonly maxJobMs: number,
    /** codeact.jobs.maxPerSession: a guest that reports far more running jobs is broken (the slack: an end frame may follow the next start). */
    private readonly maxJobs: number,
    /** The jobs' tool calls (./jobTools). */
    readonly tools?: JobTools,
  ) {
    // A job's call of a managed tool started or ended: a row of its card.
    tools?.calls.on(({ job, tool }) => this.output.fire({ type: 'codeact.job.output', session_id: this.sessionId(), job, delta: '', tool }));
  }

  /** Jobs running now. */
  get count(): number {
    return this.running.size;
  }

  /** A `job` or `job_output` frame; returns what is wrong with it, if anything. `start`: the execution of the frame's run, if it is the current one. */
  onFrame(frame: JobFrame | OutputFrame, start: Parameters<JobTools['open']>[1]): string | undefined {
    if (frame.t === 'job_output') return this.onOutput(frame);
    const itemId = start?.itemId;
    const job = frame.job;
    if (!isInt(job) || job < 1 || typeof frame.state !== 'string') return 'a malformed job frame';
    if (frame.state === 'running') {
      if (job <= this.last) return 'a job frame for a job already started';
      if (this.running.size >= this.maxJobs + 16) return 'more running jobs than codeact.jobs.maxPerSession allows';
      this.last = job;
      this.running.set(job, itemId);
      this.started.set(job, performance.now());
      if (isInt(frame.pid) && frame.pid > 0) this.pids.set(job, frame.pid);
      this.outputs.set(job, new KeptOutput());
      this.tools?.open(job, start);
      this.fire({ job, state: 'running', item_id: itemId, started_at: Date.now(), message: `Background job ${job} is running.` });
      return undefined;
    }
    if (!ENDED.has(frame.state) || !this.running.has(job)) return 'a job frame for no running job';
    const itemOf = this.running.get(job);
    const measured = (performance.now() - this.started.get(job)!) / 1000;
    const output = this.forget(job)?.text();
    this.tools?.close(job);
    const seconds = typeof frame.seconds === 'number' && frame.seconds >= 0 && frame.seconds < 1e8 ? frame.seconds : measured;
    // A job the host stopped dies by a signal: the guest reports it failed; it was stopped.
    const state = (this.stopping.delete(job) && frame.state === 'failed' ? 'stopped' : frame.state) as JobChanged['state'];
    const cut = frame.cut === true;
    this.fire({
      job,
      state,
      item_id: itemOf,
      seconds,
      ...(cut ? { output_cut: true } : {}),
      ...(output ? { output } : {}),
      message: this.note(job, state, seconds, frame, cut),
    });
    return undefined;
  }

  /** What a running job printed (a `job_output` frame). */
  private onOutput(frame: OutputFrame): string | undefined {
    const { job, data, skipped } = frame;
    if (!isInt(job) || typeof data !== 'string' || !isInt(skipped) || skipped < 0 || data.length > MAX_PIECE_CHARS) return 'a malformed job_output frame';
    const kept = this.outputs.get(job);
    if (!kept) return 'output for no running job';
    kept.add(data, skipped);
    this.output.fire({ type: 'codeact.job.output', session_id: this.sessionId(), job, delta: data, ...(skipped ? { skipped } : {}) });
    return undefined;
  }

  /** The highest job number taken so far: the guest numbers its next fork past it (the `run` frame's `job_floor`). */
  get floor(): number {
    return this.last;
  }

  /**
   * A run of the session the person sent to the background: it takes the next job number (the guest's forks skip
   * it: see {@link floor}) and is announced as a running job; `stop` stops it as Stop stops a run.
   */
  adopt(itemId: string, startedMs: number, outputSoFar: string, stop: () => void): number {
    const job = ++this.last;
    this.running.set(job, itemId);
    this.started.set(job, startedMs);
    this.detached.set(job, stop);
    const kept = new KeptOutput();
    if (outputSoFar) kept.add(outputSoFar, 0);
    this.outputs.set(job, kept);
    const startedAt = Date.now() - (performance.now() - startedMs);
    this.fire({ job, state: 'running', item_id: itemId, started_at: startedAt, message: `Background job ${job} (a run sent to the background) is running.` });
    return job;
  }

  /** What a run sent to the background printed. */
  detachedOutput(job: number, text: string): void {
    const kept = this.outputs.get(job);
    if (!kept || !this.detached.has(job) || !text) return;
    kept.add(text, 0);
    this.output.fire({ type: 'codeact.job.output', session_id: this.sessionId(), job, delta: text });
  }

  /** A run sent to the background ended (unless its session ended first: then it was said ended with it). */
  detachedEnded(job: number, state: Exclude<JobChanged['state'], 'running' | 'ended'>, message: (after: string) => string): void {
    if (!this.detached.has(job) || !this.running.has(job)) return;
    const itemOf = this.running.get(job);
    const seconds = (performance.now() - this.started.get(job)!) / 1000;
    const output = this.forget(job)?.text();
    this.fire({ job, state, item_id: itemOf, seconds, ...(output ? { output } : {}), message: message(formatElapsed(seconds * 1000)) });
  }

  /** A job is over: its entries go; returns its kept output. */
  private forget(job: number): KeptOutput | undefined {
    const kept = this.outputs.get(job);
    this.detached.delete(job);
    this.running.delete(job);
    this.started.delete(job);
    this.pids.delete(job);
    this.outputs.delete(job);
    return kept;
  }

  /**
   * Stops a running job from the host (the panel's Stop): freezes and kills its whole process tree, without
   * waiting for the guest (its main thread may be running code). The pid comes from the guest, which is not
   * trusted: it is killed only if /proc shows it in this session's guest tree, a child of the guest's own
   * process (the job is a fork of it); anything else is refused. The guest then reports the end, said as stopped.
   */
  stop(job: number, guest: Pick<GuestHandle, 'treeRoot' | 'selfPid'>): void {
    const nsPid = this.pids.get(job);
    if (!this.running.has(job)) throw new Error(`There is no running background job ${job} in this session.`);
    // A run sent to the background is stopped as Stop stops a run (interrupt, then its process tree is killed).
    const detached = this.detached.get(job);
    if (detached) return detached();
    const root = guest.treeRoot();
    const self = guest.selfPid;
    if (!root || self === undefined)
      throw new Error(
        `Background job ${job} cannot be stopped from here: this session's guest process was not found. Stop it from the code with stop_job(${job}).`,
      );
    const pid = nsPid === undefined ? undefined : nsChildIn(root, self, nsPid);
    if (pid === undefined)
      throw new Error(`Background job ${job} was not stopped: the process its guest reported (${nsPid ?? 'none'}) is not a child of this session's guest.`);
    this.stopping.add(job);
    killTree(pid);
  }

  /** The session ended: each running job ended with it (its process tree is killed with the session's). */
  sessionEnded(reason: string): void {
    this.tools?.closeAll();
    for (const [job, itemId] of [...this.running]) {
      const detached = this.detached.has(job);
      const seconds = (performance.now() - this.started.get(job)!) / 1000;
      const output = this.forget(job)?.text();
      this.stopping.delete(job);
      this.fire({
        ...(output ? { output } : {}),
        job,
        state: 'ended',
        item_id: itemId,
        seconds,
        message:
          `Background job ${job}${detached ? ' (a run sent to the background)' : ''} was ended after ${formatElapsed(seconds * 1000)} ` +
          `with its Python session (${reason}); its result is gone.`,
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
