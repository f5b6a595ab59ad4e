/**
 * Waiting in tests, written once. Budgets are generous (the machine may be shared and slow): a wait that
 * would pass is never cut short, and one that would not says what it waited for.
 */
import type { Emitter } from '../../src/common/emitter';

/** A pause of `ms`; with a signal, rejects when it aborts. Prefer waitFor/until to a pause then an assert. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new Error('aborted'));
    });
  });
}

export interface WaitOptions {
  /** The longest it may take (default 20 s). */
  timeoutMs?: number;
  /** What is awaited, for the error ("the server logged tools/call"). */
  what?: string;
  /** How often the predicate is asked (default 20 ms). */
  everyMs?: number;
}

/**
 * Resolves when `predicate` holds (it may be async; a throw counts as "not yet"), and rejects with
 * "timed out waiting for <what>" after the budget.
 */
export async function waitFor(predicate: () => boolean | Promise<boolean>, options: WaitOptions = {}): Promise<void> {
  const { timeoutMs = 20_000, what = 'the condition', everyMs = 20 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await predicate()) return;
    } catch {
      // not there yet (a file not written, a list not loaded)
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Something that can be listened to: an `Emitter`, or an `onX(listener)` that returns a Disposable or an unsubscribe. */
export type EventSource<T> = Pick<Emitter<T>, 'on'> | ((listener: (value: T) => void) => (() => void) | { dispose(): void });

/** The next value `source` fires that matches `match` (any value without one). Subscribe before causing it. */
export function until<T>(source: EventSource<T>, match: (value: T) => boolean = () => true, options: Omit<WaitOptions, 'everyMs'> = {}): Promise<T> {
  const { timeoutMs = 20_000, what = 'the event' } = options;
  return new Promise<T>((resolve, reject) => {
    const listener = (value: T) => {
      if (!match(value)) return;
      clearTimeout(timer);
      off();
      resolve(value);
    };
    const sub = typeof source === 'function' ? source(listener) : source.on(listener);
    const off = () => (typeof sub === 'function' ? sub() : sub.dispose());
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
    }, timeoutMs);
  });
}

/** A promise opened from outside: `await gate.opened` waits until `gate.open(value)`. */
export interface Barrier<T = void> {
  readonly opened: Promise<T>;
  readonly isOpen: boolean;
  open(value: T): void;
}

export function barrier<T = void>(): Barrier<T> {
  let open!: (value: T) => void;
  let isOpen = false;
  const opened = new Promise<T>((resolve) => {
    open = (value: T) => {
      isOpen = true;
      resolve(value);
    };
  });
  return {
    opened,
    get isOpen() {
      return isOpen;
    },
    open: (value: T) => open(value),
  };
}
