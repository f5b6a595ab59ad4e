/** Promise helpers shared by the engine's modules. */

import { CancelledError } from './errors';

function abortError(): Error {
  return new CancelledError();
}

/** Settles like `promise`, or rejects with `makeError()` as soon as `signal` aborts; the listener is always removed. */
export function raceAbort<T>(promise: Promise<T>, signal?: AbortSignal, makeError: () => Error = abortError): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(makeError());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(makeError());
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** Resolves when `p` settles, or at once when `signal` aborts (what `p` does afterwards is not waited for). */
export function settledOrAborted(p: Promise<unknown>, signal?: AbortSignal): Promise<void> {
  if (!signal)
    return p.then(
      () => undefined,
      () => undefined,
    );
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    p.then(done, done);
  });
}
