/**
 * How an SDK's error is read: the contract of the error classifier each SDK has (in its family's folder:
 * ../openai/openaiErrors, ../anthropic/anthropicErrors, ../gemini/geminiErrors), which the registry
 * hands to the adapters it builds, and the helpers they share. The one chain that turns a reading into a
 * ProviderError with its message is ./errors; it knows no SDK's vocabulary.
 */
import { htmlToText, isHtml } from '../../../common/htmlText';

/** What an SDK's error type word means, for the ones the chain acts on. */
export type SdkErrorKind = 'auth' | 'forbidden' | 'rate_limit' | 'too_long' | 'not_found' | 'server';

/** What one SDK's error says. */
export interface SdkErrorReading {
  /** The HTTP status (or the status the error carries as its code). */
  status?: number;
  /** The provider's own error text (an error page as its text). */
  detail: string;
  /** What the provider's error type says, when it is one the chain acts on. */
  kind?: SdkErrorKind;
  /** The text says the prompt does not fit the context window (in the words of the SDK's servers). */
  tooLong?: boolean;
  /** How long the provider asked to wait before a retry. */
  retryAfterMs?: number;
}

export interface ErrorClassifier {
  /**
   * Reads an error the SDK threw (or an error the adapter made in the SDK's shape): undefined when it has
   * neither an HTTP status nor the provider's error type, so it is no answer of the provider (a network
   * failure, a cut or malformed stream).
   */
  read(err: unknown): SdkErrorReading | undefined;
}

/** The HTTP status an error carries: `status`, else a `code` that is an HTTP error status. */
export function statusOf(err: unknown): number | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const s = (err as { status?: unknown }).status;
  if (typeof s === 'number' && s >= 100) return s;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'number' && code >= 400 && code < 600) return code;
  return undefined;
}

export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}

/** The error's message as its detail: without the status the Stainless SDKs put first ("401 Incorrect API key provided"). */
export function detailFromMessage(err: unknown): string {
  return pageText(
    messageOf(err)
      .replace(/^\d{3}\s+/, '')
      .replace(/^status code \(no body\)$/, ''),
    err,
  );
}

/** An error page (a proxy's "502 Bad Gateway") as the text a person reads, not its markup (src/common/htmlText). */
export function pageText(detail: string, err: unknown): string {
  return isHtml(detail, headerOf(err, 'content-type')) ? htmlToText(detail, 1000) : detail;
}

function headerOf(err: unknown, name: string): string | null | undefined {
  const headers = (err as { headers?: unknown } | null)?.headers;
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  const v = (headers as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : undefined;
}

/** The wait a `retry-after-ms` or `retry-after` header (seconds or a date) asks for. */
export function retryAfterHeader(err: unknown): number | undefined {
  const ms = headerOf(err, 'retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Number(ms);
  const ra = headerOf(err, 'retry-after');
  if (ra) {
    const secs = Number(ra);
    if (Number.isFinite(secs)) return secs * 1000;
    const date = Date.parse(ra);
    if (Number.isFinite(date)) return Math.max(0, date - Date.now());
  }
  return undefined;
}

/** The error word of a Stainless SDK's error object (`{type, code}`): its type (never the envelope's `error`), else its code. */
export function typeWord(o: { type?: unknown; code?: unknown } | undefined): string | undefined {
  if (typeof o?.type === 'string' && o.type !== 'error') return o.type;
  return typeof o?.code === 'string' ? o.code : undefined;
}

/** The kind an SDK's vocabulary gives `type` (own words only: never a prototype's). */
export function kindOf(words: Readonly<Record<string, SdkErrorKind>>, type: string | undefined): SdkErrorKind | undefined {
  return type !== undefined && Object.prototype.hasOwnProperty.call(words, type) ? words[type] : undefined;
}
