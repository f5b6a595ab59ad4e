/**
 * The Gemini SDK's errors, read for the shared chain (../shared/errors): an `ApiError` has the HTTP status
 * and a message that ends with the body, `{"error": {code, message, status}}`, whose `status` is Google's
 * word (UNAUTHENTICATED, RESOURCE_EXHAUSTED…); an invalid key is a 400 that says so, and the wait is the
 * body's google.rpc.RetryInfo `retryDelay`.
 */
import { detailFromMessage, kindOf, messageOf, pageText, statusOf, type ErrorClassifier, type SdkErrorKind } from '../shared/errorReading';

const WORDS: Readonly<Record<string, SdkErrorKind>> = {
  UNAUTHENTICATED: 'auth',
  PERMISSION_DENIED: 'forbidden',
  RESOURCE_EXHAUSTED: 'rate_limit',
  NOT_FOUND: 'not_found',
  UNAVAILABLE: 'server',
  INTERNAL: 'server',
};

/** How Gemini says that a prompt is too long ("The input token count (1200000) exceeds the maximum number of tokens allowed"). */
const TOO_LONG = /input token count.*exceeds|exceeds the maximum|context window|too many tokens/i;

export const geminiErrors: ErrorClassifier = {
  read(err) {
    const status = statusOf(err);
    const body = bodyIn(messageOf(err));
    const type = typeof body?.status === 'string' && body.status ? body.status : undefined;
    if (status === undefined && !type) return undefined;
    const detail = typeof body?.message === 'string' && body.message ? pageText(body.message, err) : detailFromMessage(err);
    const kind = /API key not valid|API_KEY_INVALID/i.test(detail) ? 'auth' : kindOf(WORDS, type);
    // google.rpc.RetryInfo {"retryDelay": "13s"} in the error details.
    const delay = /retryDelay"?\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(`${detail} ${messageOf(err)}`);
    return { status, detail, kind, tooLong: TOO_LONG.test(detail), retryAfterMs: delay ? Math.round(Number(delay[1]) * 1000) : undefined };
  },
};

/** The body's `error` object in the message (the SDK puts the response body after its own words). */
function bodyIn(msg: string): { message?: unknown; status?: unknown } | undefined {
  const start = msg.indexOf('{');
  if (start < 0) return undefined;
  try {
    const obj: unknown = JSON.parse(msg.slice(start));
    const e = obj && typeof obj === 'object' ? (obj as { error?: unknown }).error : undefined;
    return e && typeof e === 'object' ? e : undefined;
  } catch {
    return undefined;
  }
}
