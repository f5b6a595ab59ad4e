/**
 * OpenAI-compatible Chat Completions adapter (Ollama, vLLM, llama.cpp `llama-server`, LM Studio, any
 * base URL): streamed `tool_calls` merged by `index` (never by id), `reasoning_content`/`reasoning`
 * deltas as thinking text, a per-model "supports tools" flag with a clear error when a model or server
 * does not take tools, and a context-window setting (requests estimated larger than the window fail
 * early with `context_overflow`). There is no hosted sandbox.
 */
import type OpenAI from 'openai';
import { FunctionCallStream, TextStream, TurnItems, foreignItemText, isLocalRuntimeItem, newId, type Json } from './emit';
import { ProviderError, streamCut, toProviderError, toolsUnsupportedError, type ErrorContext } from './errors';
import type { CompatibleModelSettings, EmitFn, Provider, ProviderCapabilities, StopReason, TurnRequest, TurnResult } from './types';

export interface CompatibleOptions {
  baseURL: string;
  supportsTools: boolean;
  contextWindow?: number;
  models: Record<string, CompatibleModelSettings>;
  streamUsage: boolean;
}

/** Rough token estimate of a request (about 4 characters a token), for the context-window check. */
export function estimateTokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value).length / 4);
}

export class OpenAICompatibleProvider implements Provider {
  readonly id = 'openai-compatible' as const;
  readonly capabilities: ProviderCapabilities = { functionTools: true, hostedCode: false };

  constructor(readonly client: OpenAI, readonly options: CompatibleOptions) {}

  supportsTools(model: string): boolean {
    return this.options.models[model]?.supportsTools ?? this.options.supportsTools;
  }

  contextWindow(model: string): number | undefined {
    return this.options.models[model]?.contextWindow ?? this.options.contextWindow;
  }

  buildRequest(req: TurnRequest): Json {
    const body: Json = { model: req.model, messages: toChatMessages(req), stream: true };
    if (req.tools.length > 0) {
      body.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
      if (req.toolChoice && req.toolChoice !== 'auto') body.tool_choice = req.toolChoice;
    }
    if (this.options.streamUsage) body.stream_options = { include_usage: true };
    if (req.maxOutputTokens) body.max_tokens = req.maxOutputTokens;
    return body;
  }

  async streamTurn(req: TurnRequest, emit: EmitFn): Promise<TurnResult> {
    const ctx: ErrorContext = { provider: 'openai-compatible', model: req.model, baseURL: this.options.baseURL, signal: req.signal };
    if (req.hosted?.enabled) {
      throw new ProviderError({
        code: 'bad_request',
        provider: 'openai-compatible',
        message: 'OpenAI-compatible servers have no hosted code sandbox. Use the toolCode mode (the default) or the code mode, which run the code locally.',
      });
    }
    if (req.tools.length > 0 && !this.supportsTools(req.model)) {
      throw toolsUnsupportedError(ctx, `the model is configured with supportsTools: false`);
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

    const turn = new TurnItems('openai-compatible', newId('turn'));
    let responseId: string | undefined;
    let model: string | undefined;
    let usage: TurnResult['usage'];
    let finish: string | undefined;
    let thinking: { s: TextStream; slot: number } | undefined;
    let text: { s: TextStream; slot: number } | undefined;
    const calls = new Map<number, { fc: FunctionCallStream; slot: number }>();

    const finishThinking = (): void => {
      if (!thinking) return;
      turn.fill(thinking.slot, thinking.s.finish());
    };

    try {
      if (req.signal?.aborted) throw new ProviderError({ code: 'aborted', provider: this.id, message: 'Stopped: the request was cancelled.' });
      const stream = (await this.client.chat.completions.create(body as any, { signal: req.signal })) as unknown as AsyncIterable<Json>;
      ctx.streaming = true;
      for await (const chunk of stream) {
        responseId ??= chunk.id || undefined;
        model ??= chunk.model || undefined;
        if (chunk.usage) {
          const u = chunk.usage;
          usage = { input_tokens: u.prompt_tokens ?? 0, output_tokens: u.completion_tokens ?? 0, total_tokens: u.total_tokens ?? (u.prompt_tokens ?? 0) + (u.completion_tokens ?? 0) };
        }
        const choice: Json | undefined = Array.isArray(chunk.choices) ? chunk.choices.find((c: Json) => (c.index ?? 0) === 0) : undefined;
        if (!choice) continue;
        const delta: Json = choice.delta ?? {};
        const reasoning = delta.reasoning_content ?? delta.reasoning;
        if (typeof reasoning === 'string' && reasoning) {
          if (!thinking) {
            const s = new TextStream(emit, newId('rs'), true);
            thinking = { s, slot: turn.reserve(() => s.snapshot()) };
          }
          thinking.s.delta(reasoning);
        }
        if (typeof delta.content === 'string' && delta.content) {
          finishThinking();
          if (!text) {
            const s = new TextStream(emit, newId('msg'));
            text = { s, slot: turn.reserve(() => s.snapshot()) };
          }
          text.s.delta(delta.content);
        }
        if (Array.isArray(delta.tool_calls)) {
          finishThinking();
          delta.tool_calls.forEach((tc: Json, pos: number) => {
            const idx = typeof tc.index === 'number' ? tc.index : pos;
            let c = calls.get(idx);
            if (!c) {
              const callId = typeof tc.id === 'string' && tc.id ? tc.id : newId('call');
              c = { fc: new FunctionCallStream(emit, callId, callId, tc.function?.name ?? ''), slot: turn.reserve() };
              calls.set(idx, c);
              c.fc.start();
            }
            const args = tc.function?.arguments;
            if (typeof args === 'string' && args) c.fc.delta(args);
          });
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      if (req.signal?.aborted) throw new ProviderError({ code: 'aborted', provider: this.id, message: 'Stopped: the request was cancelled.' });
      if (!finish) throw streamCut(ctx, undefined, 'The stream ended');
    } catch (err) {
      const pe = toProviderError(err, ctx);
      pe.partial = { items: turn.partialItems(), responseId };
      throw pe;
    }

    finishThinking();
    if (text) turn.fill(text.slot, text.s.finish());
    for (const idx of [...calls.keys()].sort((a, b) => a - b)) {
      const c = calls.get(idx) as { fc: FunctionCallStream; slot: number };
      turn.fill(c.slot, c.fc.finish());
      turn.functionCalls.push(c.fc.request());
    }
    const id = responseId ?? newId('chatcmpl');
    emit({ type: 'response.completed', response: { id, usage } });
    const stopReason: StopReason =
      turn.functionCalls.length > 0 ? 'tool_use' : finish === 'length' ? 'max_tokens' : finish === 'content_filter' ? 'content_filter' : finish === 'stop' ? 'end_turn' : 'other';
    return { items: turn.items, functionCalls: turn.functionCalls, usage, responseId: id, containerId: null, stopReason, rawStopReason: finish, files: [], model };
  }
}

/** The history as Chat Completions messages (assistant text and tool calls merged per turn). */
export function toChatMessages(req: TurnRequest): Json[] {
  const messages: Json[] = [];
  if (req.system) messages.push({ role: 'system', content: req.system });
  let assistant: { content: string; tool_calls: Json[] } | undefined;
  const flush = (): void => {
    if (!assistant) return;
    const m: Json = { role: 'assistant', content: assistant.content || null };
    if (assistant.tool_calls.length > 0) m.tool_calls = assistant.tool_calls;
    messages.push(m);
    assistant = undefined;
  };
  const open = (): { content: string; tool_calls: Json[] } => (assistant ??= { content: '', tool_calls: [] });
  for (const item of req.history) {
    switch (item.type) {
      case 'message':
        if (item.role === 'user') {
          flush();
          messages.push({ role: 'user', content: item.text });
        } else if (!item.thinking && item.text) {
          const a = open();
          if (a.tool_calls.length > 0) {
            flush();
            open().content = item.text;
          } else {
            a.content += item.text;
          }
        }
        break;
      case 'function_call':
        open().tool_calls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments ?? '{}' } });
        break;
      case 'function_call_output':
        flush();
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: item.output });
        break;
      default: {
        if (isLocalRuntimeItem(item)) break;
        const t = foreignItemText(item);
        if (t) {
          const a = open();
          a.content += (a.content ? '\n\n' : '') + t;
        }
      }
    }
  }
  flush();
  return messages;
}
