/**
 * Provider errors, normalised: every SDK error (OpenAI, Anthropic, Gemini), HTTP status, stream
 * failure and abort becomes a `ProviderError` with a `code`, a `retryable` flag and a message that says
 * what happened and what to do.
 */
import { providerInfo, whoStarting } from './catalog';
import { overCap } from '../../../common/format';
import { readBodyOrThrow } from '../../util/readBodyCapped';
import type { ConversationItem, ProviderId } from './types';
import type { Stall } from './watchdog';
import { formatDuration } from '../../../common/format';
import { htmlToText, isHtml } from '../../../common/htmlText';
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
function keyHint(provider: ProviderId): string {
  const vars = providerInfo(provider).keyEnv.join(' or ');
  return `Set ${vars} in the environment (CLI), or run "${SET_KEY_COMMAND}" in VS Code`;
}

/** The error for a missing key (configuration, before any request). */
export function missingKeyError(provider: ProviderId): ProviderError {
  return new ProviderError({ code: 'auth', provider, message: `No API key for ${providerInfo(provider).who}. ${keyHint(provider)}.` });
}

export interface ErrorContext {
  provider: ProviderId;
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
  const status = statusOf(err);
  const detail = detailOf(err);
  const errType = typeOf(err);
  if (status !== undefined || errType) {
    return fromStatus(status, detail, errType, err, ctx);
  }
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
      message: `Could not reach ${providerInfo(ctx.provider).who}${where} (${short(text.trim())}). Check the network and the base URL${ctx.provider === 'openai-compatible' ? ' (is the server running?)' : ''}, then try again.`,
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

export function streamCut(ctx: ErrorContext, cause?: unknown, what = 'The connection was cut'): ProviderError {
  const label = providerInfo(ctx.provider).who;
  return new ProviderError({
    code: 'stream_cut',
    provider: ctx.provider,
    message: `${what} before ${label} finished its response. What arrived before the cut is kept; try again.`,
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
      ? `The model did not start answering: ${label}${where} sent no response within ${secs} of the request. ` +
        `Try again, or raise codeact.modelStream.firstByteTimeoutSeconds (now ${secs}) if the server needs longer${ctx.provider === 'openai-compatible' ? ' (a local server may first load the model)' : ''}.`
      : (stall.events === 0
          ? `The model stopped sending for ${secs} after the response started: ${label} sent its headers and then nothing, so CodeAct closed the request. `
          : `The model stopped sending for ${secs} after its last event (${stall.events} event${stall.events === 1 ? '' : 's'} in): ${label} sent nothing more, so CodeAct closed the request. What arrived before is kept. `) +
        `Try again, or raise codeact.modelStream.idleTimeoutSeconds (now ${secs}) if the model pauses longer.`;
  return new ProviderError({ code: 'stream_stalled', provider: ctx.provider, message, retryLimit: 1 });
}

function fromStatus(status: number | undefined, detail: string, errType: string | undefined, err: unknown, ctx: ErrorContext): ProviderError {
  const p = ctx.provider;
  const label = whoStarting(p);
  const d = detail ? `: ${short(detail).replace(/[.\s]+$/, '')}` : '';
  const http = status !== undefined ? ` (HTTP ${status})` : '';
  const base = { provider: p, status, detail, cause: err };
  const retryAfterMs = retryAfterOf(err, detail);
  const type = errType ?? '';

  if (
    status === 401 ||
    type === 'authentication_error' ||
    type === 'UNAUTHENTICATED' ||
    type === 'invalid_api_key' ||
    /API key not valid|API_KEY_INVALID/i.test(detail)
  ) {
    const who = p === 'openai-compatible' ? `The server at ${ctx.baseURL ?? 'the base URL'}` : label;
    return new ProviderError({ ...base, code: 'auth', message: `${who} rejected the API key${http}${d}. ${keyHint(p)}, then try again.` });
  }
  if (status === 403 || type === 'permission_error' || type === 'PERMISSION_DENIED') {
    return new ProviderError({
      ...base,
      code: 'auth',
      message: `${label} refused access${http}${d}. The API key lacks permission for this model or feature; check the key's project/workspace, or ${keyHint(p).replace(/^Set/, 'set')}.`,
    });
  }
  if (status === 429 || type === 'rate_limit_error' || type === 'RESOURCE_EXHAUSTED' || type === 'rate_limit_exceeded') {
    const when = retryAfterMs !== undefined ? ` The provider asks to wait ${Math.ceil(retryAfterMs / 1000)} s.` : '';
    return new ProviderError({
      ...base,
      code: 'rate_limit',
      retryAfterMs,
      message: `${label} is rate-limiting requests${http}${d}.${when} Wait a minute and try again, or check your plan's limits and quota.`,
    });
  }
  if (isContextOverflow(status, detail, type)) {
    return new ProviderError({
      ...base,
      code: 'context_overflow',
      message: `The conversation is too long for ${ctx.model ? `"${ctx.model}"` : 'the model'}'s context window${http}${d}. Start a new conversation, or shorten the prompt or the tool outputs.`,
    });
  }
  if (ctx.provider === 'openai-compatible' && ctx.withTools !== false && rejectsTools(status, errorText(detail, err))) {
    return toolsUnsupportedError(ctx, detail, status, err);
  }
  if (status === 404 || type === 'not_found_error' || type === 'NOT_FOUND' || type === 'model_not_found') {
    const hint =
      p === 'openai-compatible'
        ? ` Check the model name (the server lists its models at ${ctx.baseURL ?? '<base URL>'}/models) and that the base URL ends with /v1.`
        : ' Check the model name: the codeact.model setting (--model on the command line).';
    return new ProviderError({
      ...base,
      code: 'unknown_model',
      message: `${label} does not know the model ${ctx.model ? `"${ctx.model}"` : ''}${http}${d}.${hint}`,
    });
  }
  if (
    (status !== undefined && (status >= 500 || status === 408 || status === 409)) ||
    type === 'overloaded_error' ||
    type === 'api_error' ||
    type === 'server_error' ||
    type === 'UNAVAILABLE' ||
    type === 'INTERNAL'
  ) {
    return new ProviderError({
      ...base,
      code: 'server',
      retryAfterMs,
      message: `${label} had a server error${http}${d}. This is usually temporary: try again shortly.`,
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
    message:
      `${model}${where} does not accept tools (function calling)${detail ? `: ${short(detail)}` : ''}. ` +
      'CodeAct needs function calling to run code. Pick a model with tool support (for example qwen2.5-coder or llama3.1 on Ollama), ' +
      'start vLLM with --enable-auto-tool-choice --tool-call-parser <parser>, or llama-server with --jinja.',
  });
}

function isContextOverflow(status: number | undefined, detail: string, type: string): boolean {
  if (status === 413 || type === 'request_too_large' || type === 'context_length_exceeded') return true;
  return /context[_ ]length|context window|maximum context|prompt is too long|too many tokens|exceeds the (?:maximum|available context)|input token count.*exceeds|context size|reduce the length/i.test(
    detail,
  );
}

function statusOf(err: unknown): number | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const s = (err as { status?: unknown }).status;
  if (typeof s === 'number' && s >= 100) return s;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'number' && code >= 400 && code < 600) return code;
  return undefined;
}

/** The provider's error type, when the SDK exposes it (stream errors have no HTTP status). */
function typeOf(err: unknown): string | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const e = (err as { error?: unknown }).error;
  if (e && typeof e === 'object') {
    const inner = (e as { error?: { type?: unknown } }).error;
    if (inner && typeof inner.type === 'string') return inner.type; // Anthropic body {type:'error', error:{type}}
    const t = (e as { type?: unknown; code?: unknown }).type;
    if (typeof t === 'string' && t !== 'error') return t;
    const c = (e as { code?: unknown }).code;
    if (typeof c === 'string') return c;
  }
  const parsed = parseJsonDetail(messageOf(err));
  if (parsed?.status) return parsed.status;
  return undefined;
}

function parseJsonDetail(msg: string): { message?: string; status?: string; code?: number; raw?: Record<string, unknown> } | undefined {
  const start = msg.indexOf('{');
  if (start < 0) return undefined;
  try {
    const obj = JSON.parse(msg.slice(start)) as { error?: { message?: string; status?: string; code?: number } };
    if (obj && typeof obj === 'object' && obj.error && typeof obj.error === 'object') return { ...obj.error, raw: obj as Record<string, unknown> };
  } catch {}
  return undefined;
}

function detailOf(err: unknown): string {
  if (!err || typeof err !== 'object') return String(err ?? '');
  const asText = (detail: string): string => textOfPage(detail, err);
  const e = (err as { error?: unknown }).error;
  if (e && typeof e === 'object') {
    const inner = (e as { error?: { message?: unknown } }).error;
    if (inner && typeof inner.message === 'string') return asText(inner.message);
    const m = (e as { message?: unknown }).message;
    if (typeof m === 'string') return asText(m);
  }
  const msg = messageOf(err);
  const parsed = parseJsonDetail(msg);
  if (parsed?.message) return asText(parsed.message);
  // OpenAI/Anthropic SDK messages start with the status: "401 Incorrect API key provided".
  return asText(msg.replace(/^\d{3}\s+/, '').replace(/^status code \(no body\)$/, ''));
}

/** An error page (a proxy's "502 Bad Gateway") as the text a person reads, not its markup (src/common/htmlText). */
function textOfPage(detail: string, err: unknown): string {
  return isHtml(detail, headerOf(err, 'content-type')) ? htmlToText(detail, 1000) : detail;
}

function headerOf(err: unknown, name: string): string | null | undefined {
  const headers = (err as { headers?: unknown } | null)?.headers;
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  const v = (headers as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : undefined;
}

function retryAfterOf(err: unknown, detail: string): number | undefined {
  const get = (name: string): string | null | undefined => headerOf(err, name);
  const ms = get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Number(ms);
  const ra = get('retry-after');
  if (ra) {
    const secs = Number(ra);
    if (Number.isFinite(secs)) return secs * 1000;
    const date = Date.parse(ra);
    if (Number.isFinite(date)) return Math.max(0, date - Date.now());
  }
  // Gemini: google.rpc.RetryInfo {"retryDelay": "13s"} in the error details.
  const m = /retryDelay"?\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(`${detail} ${messageOf(err)}`);
  if (m) return Math.round(Number(m[1]) * 1000);
  return undefined;
}

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
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
