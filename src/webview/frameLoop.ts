/**
 * One render per animation frame, and background work in idle time.
 *
 * `FrameLoop` runs its callback at the next animation frame after `schedule()` (hidden pages get no
 * frames, so a timer makes sure the DOM does not fall far behind). `IdleQueue` runs jobs in small slices
 * when the page is idle, so a big job (a reopened 500-turn conversation) never becomes one long task.
 */

export class FrameLoop {
  private handle = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly run: () => void,
    /** Upper bound on the wait when no frame comes (hidden page). */
    private readonly fallbackMs = 250,
  ) {}

  get pending(): boolean {
    return this.handle !== 0 || this.timer !== undefined;
  }

  schedule(): void {
    if (this.pending) return;
    this.handle = requestAnimationFrame(() => this.flush());
    this.timer = setTimeout(() => this.flush(), this.fallbackMs);
  }

  /** Runs now what the next frame would run. */
  flush(): void {
    if (this.handle) cancelAnimationFrame(this.handle);
    if (this.timer) clearTimeout(this.timer);
    this.handle = 0;
    this.timer = undefined;
    this.run();
  }
}

/** One slice of a job: do some work while `more()` is true; return true when there is work left. */
export type IdleJob = (more: () => boolean) => boolean;

/** Longest slice, in ms: well under the 50 ms of a long task, and leaves room for a frame. */
const SLICE_MS = 8;

interface IdleDeadlineLike {
  timeRemaining(): number;
}

type IdleRequest = (cb: (deadline: IdleDeadlineLike) => void, opts?: { timeout: number }) => number;

const requestIdle: IdleRequest =
  typeof requestIdleCallback === 'function'
    ? (cb, opts) => requestIdleCallback(cb, opts)
    : (cb) => setTimeout(() => cb({ timeRemaining: () => SLICE_MS }), 1) as unknown as number;

export class IdleQueue {
  private jobs: IdleJob[] = [];
  private requested = false;
  private waiters: (() => void)[] = [];

  get idle(): boolean {
    return this.jobs.length === 0;
  }

  add(job: IdleJob): void {
    this.jobs.push(job);
    this.request();
  }

  clear(): void {
    this.jobs = [];
    this.settle();
  }

  /** Resolves when every job has finished. */
  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Runs everything now (tests; the page going away). */
  drain(): void {
    while (this.jobs.length) {
      const job = this.jobs[0];
      if (!job(() => true)) this.jobs.shift();
    }
    this.settle();
  }

  private request(): void {
    if (this.requested || !this.jobs.length) return;
    this.requested = true;
    // The timeout keeps the work moving while the page is busy streaming (no idle periods).
    requestIdle((deadline) => this.slice(deadline), { timeout: 100 });
  }

  private slice(deadline: IdleDeadlineLike): void {
    this.requested = false;
    const end = performance.now() + Math.max(2, Math.min(SLICE_MS, deadline.timeRemaining()));
    const more = () => performance.now() < end;
    while (this.jobs.length && more()) {
      const job = this.jobs[0];
      if (!job(more)) this.jobs.shift();
    }
    if (this.jobs.length) this.request();
    else this.settle();
  }

  private settle(): void {
    if (!this.idle) return;
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }
}
