/**
 * The Anthropic SDK's errors, read for the shared chain (../shared/errors): the SDK error's `error` is the
 * whole body, `{type: 'error', error: {type, message}}`, whose inner type is Anthropic's word; the wait
 * comes from the `retry-after` headers.
 */
import { detailFromMessage, kindOf, pageText, retryAfterHeader, statusOf, typeWord, type ErrorClassifier, type SdkErrorKind } from '../shared/errorReading';

const WORDS: Readonly<Record<string, SdkErrorKind>> = {
  authentication_error: 'auth',
  permission_error: 'forbidden',
  rate_limit_error: 'rate_limit',
  request_too_large: 'too_long',
  not_found_error: 'not_found',
  overloaded_error: 'server',
  api_error: 'server',
};

interface Said {
  type?: unknown;
  code?: unknown;
  message?: unknown;
}

/** How Anthropic says that a prompt is too long ("prompt is too long: 210000 tokens > 200000 maximum"). */
const TOO_LONG = /prompt is too long|context window|maximum context|too many tokens/i;

export const anthropicErrors: ErrorClassifier = {
  read(err) {
    const status = statusOf(err);
    const body = objectAt(err, 'error');
    const inner = objectAt(body, 'error');
    const type = typeof inner?.type === 'string' ? inner.type : typeWord(body);
    if (status === undefined && !type) return undefined;
    const message = typeof inner?.message === 'string' ? inner.message : body?.message;
    const detail = typeof message === 'string' ? pageText(message, err) : detailFromMessage(err);
    return { status, detail, kind: kindOf(WORDS, type), tooLong: TOO_LONG.test(detail), retryAfterMs: retryAfterHeader(err) };
  },
};

function objectAt(o: unknown, key: 'error'): Said | undefined {
  const v = o && typeof o === 'object' ? (o as Record<string, unknown>)[key] : undefined;
  return v && typeof v === 'object' ? (v as Said) : undefined;
}
