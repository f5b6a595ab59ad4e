/** A clock whose time moves only when the test says so: no real waiting, nothing a busy machine can shift. */
export function manualClock() {
  let t = 0;
  let next = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  return {
    now: () => t,
    setTimeout: (fn: () => void, ms: number) => (timers.set(++next, { at: t + ms, fn }), next),
    clearTimeout: (h: unknown) => void timers.delete(h as number),
    /** Moves the time on by `ms`, firing the timers that fall due, in order. */
    advance(ms: number) {
      const end = t + ms;
      for (;;) {
        const due = [...timers].filter(([, x]) => x.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
        if (!due) break;
        timers.delete(due[0]);
        t = due[1].at;
        due[1].fn();
      }
      t = end;
    },
    /** Timers still armed. */
    get pending(): number {
      return timers.size;
    },
  };
}
