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
