/**
 * Provider errors, normalised: every SDK error (read by that SDK's classifier, ./errorReading), HTTP
 * status, stream failure and abort becomes a `ProviderError` with a `code`, a `retryable` flag and a
 * message that says what happened and what to do.
 */
import { providerInfo, whoStarting } from './catalog';
import { messageOf, type ErrorClassifier, type SdkErrorReading } from './errorReading';
import { overCap } from '../../../common/format';
import { readBodyOrThrow } from '../../util/readBodyCapped';
import type { ConversationItem, ProviderId } from './types';
import type { Stall } from './watchdog';
import { formatDuration } from '../../../common/format';
import { CodeActError, isCancellation } from '../../util/errors';
import { errorText, rejectsTools } from './toolsRejection';

type ProviderErrorCode =
  | 'auth'
  | 'rate_limit'
  | 'server'
  | 'unknown_model'
  | 'context_overflow'
  | 'stream_cut'
  | 'stream_stalled'
  | 'malformed_stream'
  | 'bad_request'
  | 'tools_unsupported'
  | 'aborted';

/** What a turn had produced when it failed. */
interface PartialTurn {
  items: ConversationItem[];
  responseId?: string;
}

interface ProviderErrorInit {
  code: ProviderErrorCode;
  message: string;
  provider: ProviderId;
  status?: number;
  retryable?: boolean;
  retryAfterMs?: number;
  /** At most this many retries of a failure with this code in one turn (unset: the agent loop's own limit). */
  retryLimit?: number;
  /** The provider's own error text (an HTML error page as its text). */
  detail?: string;
  cause?: unknown;
}

export class ProviderError extends CodeActError {
  readonly category = 'provider' as const;
  readonly code: ProviderErrorCode;
  readonly provider: ProviderId;
  readonly status?: number;
  readonly retryable: boolean;
  /** From `retry-after`/`retry-after-ms` headers or a Gemini `retryDelay`, when the provider said. */
  readonly retryAfterMs?: number;
  /** At most this many retries of a failure with this code in one turn (unset: the agent loop's own limit). */
  readonly retryLimit?: number;
  readonly detail?: string;
  /** Items finished before the failure (their events were emitted). */
  partial?: PartialTurn;

  constructor(init: ProviderErrorInit) {
    super(init.message, init.cause !== undefined ? { cause: init.cause } : undefined);
    this.name = 'ProviderError';
    this.code = init.code;
    this.provider = init.provider;
    this.status = init.status;
    this.retryable = init.retryable ?? DEFAULT_RETRYABLE[init.code];
    this.retryAfterMs = init.retryAfterMs;
    this.retryLimit = init.retryLimit;
    this.detail = init.detail;
  }
}

const DEFAULT_RETRYABLE: Record<ProviderErrorCode, boolean> = {
  auth: false,
  rate_limit: true,
  server: true,
  unknown_model: false,
  context_overflow: false,
  stream_cut: true,
  stream_stalled: true,
  malformed_stream: true,
  bad_request: false,
  tools_unsupported: false,
  aborted: false,
};

const SET_KEY_COMMAND = 'CodeAct: Set API Key…';

/** Where to set the key, for messages. */
export function keyHint(provider: ProviderId): string {
  const vars = providerInfo(provider).keyEnv.join(' or ');
  return `Set ${vars} in the environment (CLI), or run "${SET_KEY_COMMAND}" in VS Code`;
}

/** The error for a missing key (configuration, before any request). */
export function missingKeyError(provider: ProviderId): ProviderError {
  return new ProviderError({ code: 'auth', provider, message: `No API key for ${providerInfo(provider).who}. ${keyHint(provider)}.` });
}

export interface ErrorContext {
  provider: ProviderId;
  /** Reads the errors of the provider's SDK (the registry hands it to the adapter); unset, no error is read as the provider's answer. */
  errors?: ErrorClassifier;
  model?: string;
  baseURL?: string;
  signal?: AbortSignal;
  /** True once the HTTP response has started streaming (a failure then is a cut, not a connect error). */
  streaming?: boolean;
  /** False when the request offered no tools (then no error is a rejection of tools). */
  withTools?: boolean;
}

/** Turns anything thrown by an SDK or a stream into a `ProviderError`. */
/** The most of one hosted sandbox file downloaded: the providers' own limit for a file (512 MB). */
const MAX_HOSTED_FILE_BYTES = 512 * 1024 * 1024;

/** A downloaded file's bytes, read within `maxBytes` as they stream (see readBodyCapped). */
export async function readHostedFile(res: Response, provider: ProviderId, name: string, maxBytes = MAX_HOSTED_FILE_BYTES): Promise<Uint8Array> {
  const bytes = await readBodyOrThrow(
    res.body,
    maxBytes,
    () =>
      new ProviderError({
        code: 'bad_request',
        provider,
        retryable: false,
        message:
          `${providerInfo(provider).who} sent ${overCap(maxBytes)} for the file ${JSON.stringify(name)}, CodeAct's limit for a download from the ` +
          "hosted sandbox, so it stopped reading there. Download the file from the provider's console, or have the code write a smaller one.",
      }),
  );
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function toProviderError(err: unknown, ctx: ErrorContext): ProviderError {
  if (err instanceof ProviderError) return err;
  const label = whoStarting(ctx.provider);
  if (ctx.signal?.aborted || isCancellation(err)) {
    return new ProviderError({ code: 'aborted', provider: ctx.provider, message: 'Stopped: the request was cancelled.', cause: err, retryable: false });
  }
  const said = ctx.errors?.read(err);
  if (said) return fromStatus(said, err, ctx);
  if (
    err instanceof SyntaxError ||
    /JSON|Unexpected token|Unexpected end of JSON|Incomplete JSON segment|exception parsing stream chunk/i.test(messageOf(err))
  ) {
    if (/Incomplete JSON segment at the end/i.test(messageOf(err))) {
      return streamCut(ctx, err);
    }
    return new ProviderError({
      code: 'malformed_stream',
      provider: ctx.provider,
      message: `${label} sent a malformed stream event (${short(messageOf(err))}). What arrived before it is kept; try again, and report it if it keeps happening.`,
      detail: messageOf(err),
      cause: err,
    });
  }
  const text = `${messageOf(err)} ${causeText(err)}`;
  if (
    /terminated|other side closed|ECONNRESET|EPIPE|socket hang up|premature close|aborted|UND_ERR_SOCKET|ended without|network error/i.test(text) &&
    !/ECONNREFUSED/.test(text)
  ) {
    return streamCut(ctx, err);
  }
  if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|fetch failed|Connection error|ETIMEDOUT|timed out|timeout/i.test(text)) {
    if (ctx.streaming) return streamCut(ctx, err);
    const where = ctx.baseURL ? ` at ${ctx.baseURL}` : '';
    return new ProviderError({
      code: 'server',
      provider: ctx.provider,
      message: `Could not reach ${providerInfo(ctx.provider).who}${where} (${short(text.trim())}). Check the network and the base URL${providerInfo(ctx.provider).localServer ? ' (is the server running?)' : ''}, then try again.`,
      detail: text.trim(),
      cause: err,
    });
  }
  return new ProviderError({
    code: 'server',
    provider: ctx.provider,
    message: `${label} request failed: ${short(messageOf(err))}. Try again.`,
    detail: messageOf(err),
    cause: err,
  });
}

/** The wording of the provider errors below (stalls, cuts, tool support, limits), which the tests compare against. */
export const PROVIDER_MESSAGES = {
  /** The end of a cut stream's message; `what` says how it was cut. */
  cut: (what: string, who: string) => `${what} before ${who} finished its response. What arrived before the cut is kept; try again.`,
  connectionCut: 'The connection was cut',
  noResponse: (server: string, secs: string) => `The model did not start answering: ${server} sent no response within ${secs} of the request. `,
  headersOnly: (secs: string, who: string) =>
    `The model stopped sending for ${secs} after the response started: ${who} sent its headers and then nothing, so CodeAct closed the request. `,
  silentAfter: (secs: string, events: number, who: string) =>
    `The model stopped sending for ${secs} after its last event (${events} event${events === 1 ? '' : 's'} in): ${who} sent nothing more, so CodeAct closed the request. What arrived before is kept. `,
  firstByteFix: (secs: string) => `Try again, or raise codeact.modelStream.firstByteTimeoutSeconds (now ${secs}) if the server needs longer`,
  idleFix: (secs: string) => `Try again, or raise codeact.modelStream.idleTimeoutSeconds (now ${secs}) if the model pauses longer.`,
  rateLimiting: 'is rate-limiting requests',
  serverError: (http: string) => `had a server error${http}`,
  usuallyTemporary: 'This is usually temporary: try again shortly.',
  toolsUnsupported: 'does not accept tools (function calling)',
  toolSupportFix:
    'CodeAct needs function calling to run code. Pick a model with tool support (for example qwen2.5-coder or llama3.1 on Ollama), ' +
    'start vLLM with --enable-auto-tool-choice --tool-call-parser <parser>, or llama-server with --jinja.',
};

export function streamCut(ctx: ErrorContext, cause?: unknown, what = PROVIDER_MESSAGES.connectionCut): ProviderError {
  const label = providerInfo(ctx.provider).who;
  return new ProviderError({
    code: 'stream_cut',
    provider: ctx.provider,
    message: PROVIDER_MESSAGES.cut(what, label),
    detail: cause !== undefined ? messageOf(cause) : undefined,
    cause,
  });
}

/**
 * A turn the watchdog (./watchdog) stopped: no response in time, or a stream that went silent. Retried at
 * most once (`retryLimit`), so that a stalled server costs two bounds, not the agent loop's four attempts.
 */
export function streamStalled(ctx: ErrorContext, stall: Stall): ProviderError {
  const label = providerInfo(ctx.provider).who;
  const secs = formatDuration(stall.ms);
  const where = ctx.baseURL ? ` at ${ctx.baseURL}` : '';
  const message =
    stall.kind === 'first_byte'
      ? PROVIDER_MESSAGES.noResponse(`${label}${where}`, secs) +
        `${PROVIDER_MESSAGES.firstByteFix(secs)}${providerInfo(ctx.provider).localServer ? ' (a local server may first load the model)' : ''}.`
      : (stall.events === 0 ? PROVIDER_MESSAGES.headersOnly(secs, label) : PROVIDER_MESSAGES.silentAfter(secs, stall.events, label)) +
        PROVIDER_MESSAGES.idleFix(secs);
  return new ProviderError({ code: 'stream_stalled', provider: ctx.provider, message, retryLimit: 1 });
}

/** The provider's answer (what its SDK's classifier read), as the ProviderError that says what to do. */
function fromStatus(said: SdkErrorReading, err: unknown, ctx: ErrorContext): ProviderError {
  const { status, detail, kind, retryAfterMs } = said;
  const p = ctx.provider;
  const local = providerInfo(p).localServer;
  const label = whoStarting(p);
  const d = detail ? `: ${short(detail).replace(/[.\s]+$/, '')}` : '';
  const http = status !== undefined ? ` (HTTP ${status})` : '';
  const base = { provider: p, status, detail, cause: err };

  if (status === 401 || kind === 'auth') {
    const who = local ? `The server at ${ctx.baseURL ?? 'the base URL'}` : label;
    return new ProviderError({ ...base, code: 'auth', message: `${who} rejected the API key${http}${d}. ${keyHint(p)}, then try again.` });
  }
  if (status === 403 || kind === 'forbidden') {
    return new ProviderError({
      ...base,
      code: 'auth',
      message: `${label} refused access${http}${d}. The API key lacks permission for this model or feature; check the key's project/workspace, or ${keyHint(p).replace(/^Set/, 'set')}.`,
    });
  }
  if (status === 429 || kind === 'rate_limit') {
    const when = retryAfterMs !== undefined ? ` The provider asks to wait ${Math.ceil(retryAfterMs / 1000)} s.` : '';
    return new ProviderError({
      ...base,
      code: 'rate_limit',
      retryAfterMs,
      message: `${label} ${PROVIDER_MESSAGES.rateLimiting}${http}${d}.${when} Wait a minute and try again, or check your plan's limits and quota.`,
    });
  }
  if (status === 413 || kind === 'too_long' || said.tooLong) {
    return new ProviderError({
      ...base,
      code: 'context_overflow',
      message: `The conversation is too long for ${ctx.model ? `"${ctx.model}"` : 'the model'}'s context window${http}${d}. Start a new conversation, or shorten the prompt or the tool outputs.`,
    });
  }
  if (local && ctx.withTools !== false && rejectsTools(status, errorText(detail, err))) {
    return toolsUnsupportedError(ctx, detail, status, err);
  }
  if (status === 404 || kind === 'not_found') {
    const hint = local
      ? ` Check the model name (the server lists its models at ${ctx.baseURL ?? '<base URL>'}/models) and that the base URL ends with /v1.`
      : ' Check the model name: the codeact.model setting (--model on the command line).';
    return new ProviderError({
      ...base,
      code: 'unknown_model',
      message: `${label} does not know the model ${ctx.model ? `"${ctx.model}"` : ''}${http}${d}.${hint}`,
    });
  }
  if ((status !== undefined && (status >= 500 || status === 408 || status === 409)) || kind === 'server') {
    return new ProviderError({
      ...base,
      code: 'server',
      retryAfterMs,
      message: `${label} ${PROVIDER_MESSAGES.serverError(http)}${d}. ${PROVIDER_MESSAGES.usuallyTemporary}`,
    });
  }
  if (status === undefined && /stream|ended|terminated/i.test(detail)) {
    return streamCut(ctx, err);
  }
  return new ProviderError({
    ...base,
    code: 'bad_request',
    message: `${label} rejected the request${http}${d}. Check the model, the tool definitions and the settings.`,
  });
}

export function toolsUnsupportedError(ctx: ErrorContext, detail: string | undefined, status?: number, cause?: unknown): ProviderError {
  const where = ctx.baseURL ? ` at ${ctx.baseURL}` : '';
  const model = ctx.model ? `"${ctx.model}"` : 'The model';
  return new ProviderError({
    code: 'tools_unsupported',
    provider: ctx.provider,
    status,
    detail,
    cause,
    message: `${model}${where} ${PROVIDER_MESSAGES.toolsUnsupported}${detail ? `: ${short(detail)}` : ''}. ${PROVIDER_MESSAGES.toolSupportFix}`,
  });
}

function causeText(err: unknown): string {
  let c = (err as { cause?: unknown } | null)?.cause;
  const parts: string[] = [];
  for (let i = 0; c && i < 4; i++) {
    parts.push(messageOf(c), String((c as { code?: unknown }).code ?? ''));
    c = (c as { cause?: unknown }).cause;
  }
  return parts.join(' ');
}

function short(s: string, max = 300): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max)}…` : one;
}
