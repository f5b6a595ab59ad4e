/**
 * Timeouts with one meaning everywhere: `ms` is the longest a step may take, counted from the call;
 * when it passes, the promise rejects with `makeError()` and the timer is always cleared.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, makeError: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(makeError()), ms);
    promise.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/**
 * A run's timeout that can stop counting: time the run spends paused (while the person decides an approval)
 * does not count. `start(ms, onTimeout)` arms it; `pause()` stops the clock until the function it returns is
 * called (pauses may overlap, and resuming twice is harmless); `stop()` disarms it for good. `onTimeout` runs
 * at most once, when the running time reaches `ms`.
 */
/** The time and the timers a clock reads (replaced in tests, so that they need no real waiting). */
export interface ClockSource {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const REAL_CLOCK: ClockSource = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

export class RunClock {
  constructor(private readonly clock: ClockSource = REAL_CLOCK) {}

  private timer?: unknown;
  private remaining = 0;
  private since = 0;
  private paused = 0;
  private onTimeout?: () => void;
  private state: 'idle' | 'armed' | 'over' = 'idle';

  start(ms: number, onTimeout: () => void): void {
    if (this.state !== 'idle') return;
    this.state = 'armed';
    this.remaining = ms;
    this.onTimeout = onTimeout;
    if (!this.paused) this.arm();
  }

  pause(): () => void {
    if (this.paused++ === 0 && this.timer) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
      this.remaining -= this.clock.now() - this.since;
    }
    let resumed = false;
    return () => {
      if (resumed) return;
      resumed = true;
      if (--this.paused === 0 && this.state === 'armed') this.arm();
    };
  }

  /** Stops the clock and starts it anew with another limit (a run sent to the background takes a job's). */
  restart(ms: number, onTimeout: () => void): void {
    this.stop();
    this.state = 'idle';
    this.start(ms, onTimeout);
  }

  stop(): void {
    this.state = 'over';
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    this.since = this.clock.now();
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        if (this.state !== 'armed') return;
        this.state = 'over';
        this.onTimeout?.();
      },
      Math.max(0, this.remaining),
    );
  }
}

/**
 * The time one step spent paused (waiting for the person), so that its duration can leave it out: `pause()`
 * stops counting until the function it returns is called (resuming twice is harmless), and also pauses
 * `also` (the run's clock) meanwhile.
 */
export function pausedTime(also?: () => () => void): { pause: () => () => void; pausedMs: () => number } {
  let total = 0;
  return {
    pause: () => {
      const resumeAlso = also?.();
      const at = performance.now();
      let resumed = false;
      return () => {
        if (resumed) return;
        resumed = true;
        total += performance.now() - at;
        resumeAlso?.();
      };
    },
    pausedMs: () => total,
  };
}

/** Waits for `p` (which must not reject), but at most `ms`. */
export function waitAtMost(p: Promise<unknown>, ms: number): Promise<unknown> {
  return Promise.race([p, new Promise((r) => setTimeout(r, ms).unref())]);
}
