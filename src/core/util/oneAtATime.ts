/**
 * One question at a time: jobs (a question on the terminal, a modal dialog, a quick input sequence) run in
 * the order they were asked, each only once the one before it has ended, so two questions are never on
 * screen together and an answer cannot reach the wrong one. A job whose request is cancelled while it waits
 * (its signal aborts: Stop, the run ended, answered elsewhere) leaves the line at once with its `cancelled`
 * value and never runs; a running job ends on its own (it is given the signal to watch).
 */
export class OneAtATime {
  private tail: Promise<void> = Promise.resolve();
  private queued = 0;

  /** Jobs waiting for their turn (not counting the one running). */
  get waiting(): number {
    return this.queued;
  }

  /**
   * Runs `job` after every job asked before it has ended. `cancelled` is what a job that never ran
   * resolves to (its `signal` aborted before its turn).
   */
  run<T>(job: () => Promise<T>, o: { signal?: AbortSignal; cancelled: () => T }): Promise<T> {
    const before = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((r) => (release = r));
    this.queued++;
    return new Promise<T>((resolve, reject) => {
      let left = false;
      const leave = () => {
        if (left) return;
        left = true;
        this.queued--;
      };
      const onAbort = () => {
        leave();
        resolve(o.cancelled());
      };
      if (o.signal?.aborted) onAbort();
      else o.signal?.addEventListener('abort', onAbort, { once: true });
      void before.then(async () => {
        o.signal?.removeEventListener('abort', onAbort);
        if (left) return release();
        leave();
        try {
          resolve(await job());
        } catch (e) {
          reject(e);
        } finally {
          release();
        }
      });
    });
  }
}
