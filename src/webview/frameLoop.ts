/**
 * One render per animation frame, and background work in idle time.
 *
 * `FrameLoop` runs its callback at the next animation frame after `schedule()` (hidden pages get no
 * frames, so a timer makes sure the DOM does not fall far behind), and numbers the animation frames it runs
 * in, so that the callback can tell a run in the frame right after the last one (a flood) from one after a
 * pause. `IdleQueue` runs jobs in small slices
 * when the page is idle, so a big job (a reopened 500-turn conversation) never becomes one long task.
 */

export class FrameLoop {
  private handle = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private wanted = false;
  /** Animation frames seen since the loop was made (only while it asks for them; see `onFrame`). */
  private frameNo = 0;

  constructor(
    /**
     * `frame`: the number of the animation frame running it (consecutive frames have consecutive numbers);
     * undefined when the fallback timer or `flush` runs it.
     */
    private readonly run: (frame: number | undefined) => void,
    /** Upper bound on the wait when no frame comes (hidden page). */
    private readonly fallbackMs = 250,
  ) {}

  get pending(): boolean {
    return this.wanted;
  }

  schedule(): void {
    if (this.wanted) return;
    this.wanted = true;
    if (!this.handle) this.handle = requestAnimationFrame(() => this.onFrame());
    this.timer = setTimeout(() => this.fire(undefined), this.fallbackMs);
  }

  /** Runs now what the next frame would run. */
  flush(): void {
    this.fire(undefined);
  }

  /** Forgets the scheduled run. */
  cancel(): void {
    this.wanted = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private onFrame(): void {
    this.handle = 0;
    this.frameNo++;
    if (!this.wanted) return;
    this.fire(this.frameNo);
    // Asks for the frame after a run too, so that a run there (or none) is numbered right.
    if (!this.handle) this.handle = requestAnimationFrame(() => this.onFrame());
  }

  private fire(frame: number | undefined): void {
    this.cancel();
    this.run(frame);
  }
}

/** One slice of a job: do some work while `more()` is true; return true when there is work left. */
type IdleJob = (more: () => boolean) => boolean;

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
