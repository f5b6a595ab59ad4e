/**
 * The watchdog of one streamed model turn (used by ./runStream for every adapter): a bound on the time
 * to the response (from the request to its status line and headers) and a bound on silence once it
 * streams (between any two pieces of the body: events, and the keep-alive pings and comments the SDKs
 * do not hand on). When a bound passes it aborts the SDK's request through the AbortSignal the adapter
 * gave the SDK (so the connection closes) and makes the turn's awaits reject at once, even if an SDK
 * did not honour the signal. An SDK's own timeouts do not do this: Node's fetch waits 300 s for a body
 * that stopped, and the Gemini SDK turns even that off.
 *
 * The bytes of the body are seen through `tappedFetch`, the fetch every adapter's SDK client is given
 * (../registry): it tells the watchdog of the turn whose request it is (an AsyncLocalStorage context
 * set around the request), so that concurrent turns and file downloads do not mix.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface StreamBounds {
  /** From the request to the response's headers (codeact.modelStream.firstByteTimeoutSeconds). */
  firstByteMs: number;
  /** The longest silence while the response streams (codeact.modelStream.idleTimeoutSeconds). */
  idleMs: number;
}

/** The defaults of codeact.modelStream.* (src/core/config/keys.ts reads them here). */
export const DEFAULT_STREAM_BOUNDS: StreamBounds = { firstByteMs: 60_000, idleMs: 90_000 };

/** Why a watchdog stopped a turn. */
export type Stall =
  | { kind: 'first_byte'; ms: number }
  /** `events`: stream events that had arrived (0: silent right after the headers). */
  | { kind: 'idle'; ms: number; events: number };

const activity = new AsyncLocalStorage<() => void>();

export class StreamWatchdog {
  /** Aborts when the caller's signal does, or when a bound passes: the signal to give the SDK. */
  readonly signal: AbortSignal;
  /** Set when a bound passed. */
  stall?: Stall;
  private readonly controller = new AbortController();
  private readonly bounds: StreamBounds;
  private timer?: ReturnType<typeof setTimeout>;
  private phase: 'idle' | 'connect' | 'stream' | 'over' = 'idle';
  private last = 0;
  private events = 0;
  /** Why the watchdog tripped (rejects every later guard). */
  private tripError?: Error;
  /** The reject of the one guarded await in flight (never a list: a stream has one await at a time). */
  private pending?: (err: Error) => void;

  constructor(bounds: Partial<StreamBounds> | undefined, outer?: AbortSignal) {
    this.bounds = { ...DEFAULT_STREAM_BOUNDS, ...definedOnly(bounds) };
    this.signal = outer ? AbortSignal.any([outer, this.controller.signal]) : this.controller.signal;
  }

  /** Runs the SDK call that sends the request, bounded by the time to the response; the body's bytes count as activity. */
  async connect<T>(open: (signal: AbortSignal) => Promise<T>): Promise<T> {
    this.phase = 'connect';
    this.arm(this.bounds.firstByteMs);
    const result = await this.guard(
      activity.run(
        () => this.touch(),
        () => open(this.signal),
      ),
    );
    this.phase = 'stream';
    this.touch();
    this.arm(this.bounds.idleMs);
    return result;
  }

  /**
   * Settles like `p`, or rejects as soon as a bound passes. (Not `Promise.race` with one never-settling
   * promise: that would keep a reaction per event until the turn ends.)
   */
  guard<T>(p: Promise<T>): Promise<T> {
    if (this.tripError) {
      p.catch(() => {});
      return Promise.reject(this.tripError);
    }
    return new Promise<T>((resolve, reject) => {
      this.pending = reject;
      p.then(
        (v) => {
          this.pending = undefined;
          resolve(v);
        },
        (e) => {
          this.pending = undefined;
          reject(e);
        },
      );
    });
  }

  /** An event arrived. */
  event(): void {
    this.events++;
    this.touch();
  }

  /** Stops the clock (the turn is over, one way or another). */
  dispose(): void {
    this.phase = 'over';
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private touch(): void {
    this.last = performance.now();
  }

  private arm(ms: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.check(), ms);
  }

  /** A timer fired: trip, or (the stream was active since it was set) wait for the rest of the bound. */
  private check(): void {
    this.timer = undefined;
    if (this.phase === 'over') return;
    if (this.phase === 'stream') {
      const left = this.last + this.bounds.idleMs - performance.now();
      if (left > 1) {
        this.arm(left);
        return;
      }
    }
    this.stall = this.phase === 'connect' ? { kind: 'first_byte', ms: this.bounds.firstByteMs } : { kind: 'idle', ms: this.bounds.idleMs, events: this.events };
    this.phase = 'over';
    const err = new Error(this.stall.kind === 'first_byte' ? 'no response in time' : 'the stream went silent');
    err.name = 'StreamStalled';
    this.tripError = err;
    this.controller.abort(err);
    this.pending?.(err);
    this.pending = undefined;
  }
}

function definedOnly(b: Partial<StreamBounds> | undefined): Partial<StreamBounds> {
  const out: Partial<StreamBounds> = {};
  if (b?.firstByteMs !== undefined && b.firstByteMs > 0) out.firstByteMs = b.firstByteMs;
  if (b?.idleMs !== undefined && b.idleMs > 0) out.idleMs = b.idleMs;
  return out;
}

/** Statuses whose response has no body (a Response cannot be built with one). */
const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * A fetch for the SDK clients that tells the watchdog of the current turn (if any) about every piece
 * of the response body that arrives. Outside a turn (file downloads, model lists) it is `base` unchanged.
 */
export function tappedFetch(base?: typeof fetch): typeof fetch {
  return async (input, init) => {
    const touch = activity.getStore();
    const res = await (base ?? globalThis.fetch)(input, init);
    if (!touch || !res.body || NULL_BODY.has(res.status)) return res;
    // A pull-through stream (lighter than pipeThrough): each piece read is activity; cancel reaches the source.
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(out) {
          const { done, value } = await reader.read();
          if (done) {
            out.close();
            return;
          }
          touch();
          out.enqueue(value);
        },
        cancel: (reason) => reader.cancel(reason),
      },
      { highWaterMark: 0 },
    );
    const tapped = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    // What the SDKs read besides the body: keep the URL (error messages, redirects).
    Object.defineProperty(tapped, 'url', { value: res.url });
    return tapped;
  };
}
