/**
 * One kind of event and its listeners. A listener that throws never reaches the others or whoever fired
 * the event: a listener's bug must not break a turn, a session or the panel.
 */
export type Unsubscribe = (() => void) & { dispose(): void };

export class Emitter<T> {
  private readonly listeners = new Set<(value: T) => void>();

  /** `onError` hears a listener's throw (to log it); without it the throw is dropped. */
  constructor(private readonly onError?: (err: unknown) => void) {}

  /** Adds a listener; the returned function (also a Disposable) removes it. */
  on(listener: (value: T) => void): Unsubscribe {
    this.listeners.add(listener);
    const off = () => void this.listeners.delete(listener);
    return Object.assign(off, { dispose: off });
  }

  fire(value: T): void {
    for (const l of [...this.listeners]) {
      try {
        l(value);
      } catch (err) {
        // A listener's bug stays with that listener.
        try {
          this.onError?.(err);
        } catch {}
      }
    }
  }

  get size(): number {
    return this.listeners.size;
  }

  clear(): void {
    this.listeners.clear();
  }
}
