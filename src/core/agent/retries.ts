/**
 * Retries of one model turn: a retryable provider failure (one that received nothing yet) waits with
 * exponential backoff and jitter, or as long as the server asked, and says so in a `codeact.retry` event.
 * When every attempt failed, a provider wrapper may send the turn again in another form (its fallback: the
 * text protocol's, after a server rejected `tools`), with attempts of its own.
 */
import type { CodeActEvent } from '../../common/events';
import { ProviderError } from '../providers/shared/errors';
import type { EmitFn, Provider, ProviderId } from '../providers/shared/types';

/** What a retry notice adds to the error it retries: the wait and the attempt that follows. */
export const retryNote = (delayMs: number, attempt: number, of: number) => `Retrying in ${(delayMs / 1000).toFixed(1)} s (attempt ${attempt} of ${of}).`;

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 8000 };

/** After a turn's attempts all failed: send it again (with this many attempts; default the policy's), or fail with `error`. */
export type Fallback = { again: true; maxAttempts?: number } | { again: false; error: unknown };

/** A provider the agent loop sends its turns to: the provider itself, or a wrapper with a fallback (./textProtocol). */
export interface TurnProvider extends Provider {
  /** Decides what follows a turn whose attempts all failed with `err`; says why on `emit`. */
  fallback?(err: unknown, emit: EmitFn): Fallback;
}

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** A timer that the signal cancels (rejecting with its reason). */
function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface RetriesOptions {
  policy?: Partial<RetryPolicy>;
  sleep?: Sleep;
  /** The provider's id, for the error of a wait the user stopped. */
  provider: ProviderId;
  emit: (e: CodeActEvent) => void;
}

export class TurnRetries {
  readonly policy: RetryPolicy;
  private readonly sleep: Sleep;

  constructor(private readonly o: RetriesOptions) {
    this.policy = { ...DEFAULT_RETRY, ...(o.policy ?? {}) };
    this.sleep = o.sleep ?? defaultSleep;
  }

  /**
   * Runs `attempt` until it succeeds, or throws its last error; `failed` hears of every failed attempt first.
   * When every attempt failed, `fallback` may ask for the turn again (unless the user stopped it): the
   * attempts start over.
   */
  async run<T>(
    attempt: () => Promise<T>,
    o: { maxAttempts: number; signal?: AbortSignal; failed: (err: unknown) => void; fallback?: (err: unknown) => Fallback | undefined },
  ): Promise<T> {
    let maxAttempts = o.maxAttempts;
    for (;;) {
      try {
        return await this.attempts(attempt, { ...o, maxAttempts });
      } catch (err) {
        const next: Fallback = o.fallback?.(err) ?? { again: false, error: err };
        if (!next.again) throw next.error;
        if (o.signal?.aborted) throw err;
        maxAttempts = next.maxAttempts ?? this.policy.maxAttempts;
      }
    }
  }

  private async attempts<T>(attempt: () => Promise<T>, o: { maxAttempts: number; signal?: AbortSignal; failed: (err: unknown) => void }): Promise<T> {
    const { maxAttempts, signal } = o;
    // Failures by code, for errors that allow fewer retries than the policy (a stalled stream: once).
    const failures = new Map<string, number>();
    for (let n = 1; ; n++) {
      try {
        return await attempt();
      } catch (err) {
        const retryable = err instanceof ProviderError && err.retryable && !err.partial?.items.length;
        o.failed(err);
        if (!retryable || n >= maxAttempts || signal?.aborted) throw err;
        const pe = err as ProviderError;
        const sameKind = (failures.get(pe.code) ?? 0) + 1;
        failures.set(pe.code, sameKind);
        if (pe.retryLimit !== undefined && sameKind > pe.retryLimit) throw err;
        const last = pe.retryLimit !== undefined ? Math.min(maxAttempts, n + 1 + pe.retryLimit - sameKind) : maxAttempts;
        const backoff = Math.min(this.policy.maxDelayMs, this.policy.baseDelayMs * 2 ** (n - 1));
        const delay = Math.min(this.policy.maxDelayMs * 4, pe.retryAfterMs ?? backoff + Math.floor(Math.random() * backoff * 0.2));
        this.o.emit({
          type: 'codeact.retry',
          attempt: n,
          delay_ms: delay,
          status: pe.status,
          message: `${pe.message} ${retryNote(delay, n + 1, last)}`,
        });
        try {
          await this.sleep(delay, signal);
        } catch {
          throw new ProviderError({ code: 'aborted', message: 'Stopped by the user.', provider: this.o.provider });
        }
      }
    }
  }
}
