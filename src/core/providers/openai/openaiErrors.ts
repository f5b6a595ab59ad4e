/**
 * The OpenAI SDK's errors, read for the shared chain (../shared/errors): the body's `error` object is the
 * SDK error's `error` (`{message, type, code}`), its type (else its code) is OpenAI's word, and the wait
 * comes from the `retry-after` headers. The OpenAI-compatible servers speak through this SDK too.
 */
import { detailFromMessage, kindOf, pageText, retryAfterHeader, statusOf, typeWord, type ErrorClassifier, type SdkErrorKind } from '../shared/errorReading';

const WORDS: Readonly<Record<string, SdkErrorKind>> = {
  invalid_api_key: 'auth',
  rate_limit_exceeded: 'rate_limit',
  context_length_exceeded: 'too_long',
  model_not_found: 'not_found',
  server_error: 'server',
  api_error: 'server',
};

/**
 * How OpenAI and the OpenAI-compatible servers (vLLM, llama.cpp, Ollama, LM Studio) say that a prompt is too long,
 * and the servers that front another provider's models (a proxy of Claude or Gemini, their OpenAI-compatible
 * endpoints), which pass on that provider's words.
 */
const TOO_LONG =
  /context[_ ]length|context window|maximum context|prompt is too long|too many tokens|exceeds the (?:maximum|available context)|input token count.*exceeds|context size|reduce the length/i;

export const openaiErrors: ErrorClassifier = {
  read(err) {
    const status = statusOf(err);
    const body = bodyOf(err);
    const type = typeWord(body);
    if (status === undefined && !type) return undefined;
    const detail = typeof body?.message === 'string' ? pageText(body.message, err) : detailFromMessage(err);
    return { status, detail, kind: kindOf(WORDS, type), tooLong: TOO_LONG.test(detail), retryAfterMs: retryAfterHeader(err) };
  },
};

function bodyOf(err: unknown): { type?: unknown; code?: unknown; message?: unknown } | undefined {
  const e = err && typeof err === 'object' ? (err as { error?: unknown }).error : undefined;
  return e && typeof e === 'object' ? e : undefined;
}
