/**
 * OpenAI-compatible Chat Completions adapter (Ollama, vLLM, llama.cpp `llama-server`, LM Studio, any
 * base URL): streamed `tool_calls` merged by `index` (never by id), `reasoning_content`/`reasoning`
 * deltas as thinking text, a per-model "supports tools" flag with a clear error when a model or server
 * does not take tools, and a context-window setting (requests estimated larger than the window fail
 * early with `context_overflow`). There is no hosted sandbox.
 */
import type OpenAI from 'openai';
import type { AttachedImage } from '../../../common/events';
import { FunctionCallStream, TextStream, asNumber, asObject, asString, at, objectsOf, tokenUsage, type JsonObject, type TurnItems } from '../shared/emit';
import { ProviderError, toolsUnsupportedError } from '../shared/errors';
import { modelSeesImages } from '../shared/catalog';
import { imageDataUrl, requestImages, writeHistory } from '../shared/history';
import { runStream, turnContext, type StreamMachine } from '../shared/runStream';
import type { ErrorClassifier } from '../shared/errorReading';
import type { StreamBounds } from '../shared/watchdog';
import type { CompatibleModelSettings, EmitFn, Provider, ProviderCapabilities, StopReason, TurnRequest, TurnResult } from '../shared/types';
import { newId } from '../../util/ids';
import { readBodyCapped } from '../../util/readBodyCapped';

interface CompatibleOptions {
  baseURL: string;
  /** Reads the OpenAI SDK's errors (the registry's). */
  errors: ErrorClassifier;
  supportsTools: boolean;
  contextWindow?: number;
  models: Record<string, CompatibleModelSettings>;
  streamUsage: boolean;
  /** Models that can see images (`"*"`: all); none by default. */
  visionModels?: readonly string[];
  /** The time-to-response and idle bounds of a streamed turn (default DEFAULT_STREAM_BOUNDS). */
  bounds?: Partial<StreamBounds>;
}

/** What an image is counted as in the context-window estimate, in tokens (a data URL's length says nothing). */
const IMAGE_TOKEN_ESTIMATE = 1000;

/** Rough token estimate of a request (about 4 characters a token, an image IMAGE_TOKEN_ESTIMATE), for the context-window check. */
export function estimateTokens(value: unknown): number {
  let images = 0;
  const text = JSON.stringify(value, (_k, v) => (typeof v === 'string' && v.startsWith('data:image/') ? (images++, '') : v));
  return Math.ceil(text.length / 4) + images * IMAGE_TOKEN_ESTIMATE;
}

export class OpenAICompatibleProvider implements Provider {
  readonly id = 'openai-compatible' as const;
  readonly capabilities: ProviderCapabilities = { functionTools: true, hostedCode: false };

  constructor(
    readonly client: OpenAI,
    readonly options: CompatibleOptions,
  ) {}

  private get source() {
    return { provider: this.id, errors: this.options.errors, baseURL: this.options.baseURL };
  }

  supportsTools(model: string): boolean {
    return this.options.models[model]?.supportsTools ?? this.options.supportsTools;
  }

  seesImages(model: string): boolean {
    return modelSeesImages(this.id, model, this.options.visionModels);
  }

  contextWindow(model: string): number | undefined {
    return this.options.models[model]?.contextWindow ?? this.options.contextWindow;
  }

  /** The window the server reports (llama.cpp `GET /props`, Ollama `POST /api/show`), asked once per server and model for a while, briefly. */
  servedContextWindow(model: string, signal?: AbortSignal): Promise<number | undefined> {
    const key = `${this.options.baseURL}\n${model}`;
    const hit = SERVED.get(key);
    if (hit && Date.now() - hit.at < SERVED_TTL_MS) return hit.window;
    const window = servedWindow(this.options.baseURL, model, signal).catch(() => undefined);
    if (SERVED.size >= 64) SERVED.delete(SERVED.keys().next().value!);
    SERVED.set(key, { at: Date.now(), window });
    return window;
  }

  buildRequest(req: TurnRequest): JsonObject {
    const body: JsonObject = { model: req.model, messages: toChatMessages(req, this.options.visionModels), stream: true };
    if (req.tools.length > 0) {
      body.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
      if (req.toolChoice && req.toolChoice !== 'auto') body.tool_choice = req.toolChoice;
    }
    if (this.options.streamUsage) body.stream_options = { include_usage: true };
    if (req.maxOutputTokens) body.max_tokens = req.maxOutputTokens;
    return body;
  }

  async streamTurn(req: TurnRequest, emit: EmitFn): Promise<TurnResult> {
    if (req.hosted?.enabled) {
      throw new ProviderError({
        code: 'bad_request',
        provider: 'openai-compatible',
        message: 'OpenAI-compatible servers have no hosted code sandbox. Use the toolCode mode (the default) or the code mode, which run the code locally.',
      });
    }
    if (req.tools.length > 0 && !this.supportsTools(req.model)) {
      throw toolsUnsupportedError(turnContext(this.source, req), `the model is configured with supportsTools: false`);
    }
    const body = this.buildRequest(req);
    const window = this.contextWindow(req.model);
    if (window) {
      const estimate = estimateTokens({ messages: body.messages, tools: body.tools });
      if (estimate + (req.maxOutputTokens ?? 0) > window) {
        throw new ProviderError({
          code: 'context_overflow',
          provider: 'openai-compatible',
          message: `The conversation (about ${estimate} tokens) does not fit the ${window}-token context window set for "${req.model}". Start a new conversation, shorten the input, or raise the context window setting (and the server's, e.g. Ollama num_ctx or vLLM --max-model-len).`,
        });
      }
    }

    // The body is built untyped (servers take fields the SDK does not know); the chunks are read tolerantly by ChatState,
    // since OpenAI-compatible servers add fields of their own (reasoning_content, …) to the SDK's chunk shape.
    const open = async (signal: AbortSignal): Promise<AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>> =>
      await this.client.chat.completions.create(body as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming, { signal });
    return runStream({ ...this.source, idPrefix: 'chatcmpl', bounds: this.options.bounds }, req, emit, open, (turn) => new ChatState(emit, turn));
  }
}

/** The stream state machine of one Chat Completions turn: reasoning, text and tool calls by index. */
class ChatState implements StreamMachine<unknown> {
  responseId: string | undefined;
  private model: string | undefined;
  private usage: TurnResult['usage'];
  private finishReason: string | undefined;
  private thinking: { s: TextStream; slot: number } | undefined;
  private text: { s: TextStream; slot: number } | undefined;
  private readonly calls = new Map<number, { fc: FunctionCallStream; slot: number }>();

  constructor(
    private readonly emit: EmitFn,
    private readonly turn: TurnItems,
  ) {}

  private finishThinking(): void {
    if (this.thinking) this.turn.fill(this.thinking.slot, this.thinking.s.finish());
  }

  onEvent(ev: unknown): void {
    const { emit, turn } = this;
    const chunk = asObject(ev) ?? {};
    this.responseId ??= asString(chunk.id) || undefined;
    this.model ??= asString(chunk.model) || undefined;
    const u = asObject(chunk.usage);
    if (u) {
      this.usage = tokenUsage(
        asNumber(u.prompt_tokens) ?? 0,
        asNumber(u.completion_tokens) ?? 0,
        asNumber(u.total_tokens),
        at(u, 'prompt_tokens_details')?.cached_tokens,
      );
    }
    const choice = objectsOf(chunk.choices).find((c) => (c.index ?? 0) === 0);
    if (!choice) return;
    const delta = asObject(choice.delta) ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning) {
      if (!this.thinking) {
        const s = new TextStream(emit, true);
        this.thinking = { s, slot: turn.reserve(() => s.snapshot()) };
      }
      this.thinking.s.delta(reasoning);
    }
    if (typeof delta.content === 'string' && delta.content) {
      this.finishThinking();
      if (!this.text) {
        const s = new TextStream(emit);
        this.text = { s, slot: turn.reserve(() => s.snapshot()) };
      }
      this.text.s.delta(delta.content);
    }
    if (Array.isArray(delta.tool_calls)) {
      this.finishThinking();
      delta.tool_calls.forEach((v: unknown, pos: number) => {
        const tc = asObject(v) ?? {};
        const idx = typeof tc.index === 'number' ? tc.index : pos;
        let c = this.calls.get(idx);
        if (!c) {
          const callId = typeof tc.id === 'string' && tc.id ? tc.id : newId('call');
          c = { fc: new FunctionCallStream(emit, callId, asString(at(tc, 'function')?.name) ?? ''), slot: turn.reserve() };
          this.calls.set(idx, c);
          c.fc.start();
        }
        const args = at(tc, 'function')?.arguments;
        if (typeof args === 'string' && args) c.fc.delta(args);
      });
    }
    const finish = asString(choice.finish_reason);
    if (finish) this.finishReason = finish;
  }

  get complete(): boolean {
    return !!this.finishReason;
  }

  finish(): void {
    this.finishThinking();
    if (this.text) this.turn.fill(this.text.slot, this.text.s.finish());
    for (const idx of [...this.calls.keys()].sort((a, b) => a - b)) {
      const c = this.calls.get(idx) as { fc: FunctionCallStream; slot: number };
      this.turn.fill(c.slot, c.fc.finish());
      this.turn.functionCalls.push(c.fc.request());
    }
  }

  outcome() {
    const f = this.finishReason;
    const stopReason: StopReason = f === 'length' ? 'max_tokens' : f === 'content_filter' ? 'content_filter' : f === 'stop' ? 'end_turn' : 'other';
    return { stopReason, rawStopReason: f, usage: this.usage, model: this.model };
  }
}

/**
 * The history as Chat Completions messages (assistant text and tool calls merged per turn). A `role:"tool"`
 * message holds text only, so the images of tool results (for a model marked as seeing images) follow the
 * run of tool messages as one `role:"user"` message of `image_url` parts.
 */
function toChatMessages(req: TurnRequest, visionModels?: readonly string[]): JsonObject[] {
  const messages: JsonObject[] = [];
  if (req.system) messages.push({ role: 'system', content: req.system });
  let assistant: { content: string; tool_calls: JsonObject[] } | undefined;
  let toolImages: JsonObject[] = [];
  const flushImages = (): void => {
    if (!toolImages.length) return;
    messages.push({ role: 'user', content: toolImages });
    toolImages = [];
  };
  const flushAssistant = (): void => {
    if (!assistant) return;
    const m: JsonObject = { role: 'assistant', content: assistant.content || null };
    if (assistant.tool_calls.length > 0) m.tool_calls = assistant.tool_calls;
    messages.push(m);
    assistant = undefined;
  };
  const flush = (): void => {
    flushImages();
    flushAssistant();
  };
  const open = (): { content: string; tool_calls: JsonObject[] } => {
    flushImages();
    return (assistant ??= { content: '', tool_calls: [] });
  };
  writeHistory(
    req.history,
    {
      user: (text, images) => {
        flush();
        messages.push({ role: 'user', content: images?.length ? [{ type: 'text', text }, ...imageUrlParts(images)] : text });
      },
      assistant: (text) => {
        const a = open();
        if (a.tool_calls.length > 0) {
          flush();
          open().content = text;
        } else {
          a.content += text;
        }
      },
      foreign: (text) => {
        const a = open();
        a.content += (a.content ? '\n\n' : '') + text;
      },
      call: (item) => open().tool_calls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments ?? '{}' } }),
      output: (item) => {
        // Images wait until the run of tool messages ends: nothing may come between the tool results of one turn.
        flushAssistant();
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: item.output });
        if (item.images?.length) {
          const from = item.images[0].source || 'the code';
          toolImages.push(
            { type: 'text', text: `The image${item.images.length === 1 ? '' : 's'} ${from} showed (the result of tool call ${item.call_id}):` },
            ...imageUrlParts(item.images),
          );
        }
      },
    },
    requestImages(req, 'openai-compatible', visionModels),
  );
  flush();
  return messages;
}

function imageUrlParts(images: AttachedImage[]): JsonObject[] {
  return images.map((img) => ({ type: 'image_url', image_url: { url: imageDataUrl(img) } }));
}

/** What servers said their window was (a provider is built per turn; the server is asked again after a while). */
const SERVED = new Map<string, { at: number; window: Promise<number | undefined> }>();
const SERVED_TTL_MS = 10 * 60_000;

/** How long the server may take to say its window, and the most of its answer read. */
const PROBE_TIMEOUT_MS = 1500;
const PROBE_MAX_BYTES = 1 << 20;

async function probeJson(url: string, init: RequestInit, signal?: AbortSignal): Promise<JsonObject | undefined> {
  const timeout = AbortSignal.timeout(PROBE_TIMEOUT_MS);
  const res = await fetch(url, { ...init, signal: signal ? AbortSignal.any([signal, timeout]) : timeout, redirect: 'error' });
  if (!res.ok || !res.body) {
    await res.body?.cancel().catch(() => {});
    return undefined;
  }
  const bytes = await readBodyCapped(res.body, PROBE_MAX_BYTES);
  return bytes && asObject(JSON.parse(bytes.toString('utf8')));
}

const validWindow = (n: unknown): number | undefined => (typeof n === 'number' && Number.isInteger(n) && n >= 256 && n <= 100_000_000 ? n : undefined);

/** llama.cpp's n_ctx, or Ollama's num_ctx (else the model's context_length); undefined when the server says neither. */
export async function servedWindow(baseURL: string, model: string, signal?: AbortSignal): Promise<number | undefined> {
  const root = baseURL.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (!/^https?:\/\//.test(root)) return undefined;
  const props = await probeJson(`${root}/props`, { method: 'GET' }, signal).catch(() => undefined);
  const llama = validWindow(at(props, 'default_generation_settings')?.n_ctx) ?? validWindow(props?.n_ctx);
  if (llama) return llama;
  const show = await probeJson(
    `${root}/api/show`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }) },
    signal,
  ).catch(() => undefined);
  if (!show) return undefined;
  const numCtx = typeof show.parameters === 'string' ? /(?:^|\n)\s*num_ctx\s+(\d+)/.exec(show.parameters)?.[1] : undefined;
  if (numCtx) return validWindow(Number(numCtx));
  const info = show.model_info && typeof show.model_info === 'object' ? (show.model_info as JsonObject) : {};
  for (const [k, v] of Object.entries(info).slice(0, 500)) if (k.endsWith('.context_length')) return validWindow(v);
  return undefined;
}
