/**
 * Test helpers around the wire servers: start a server for a provider, create the real provider
 * adapter (real SDK client) pointed at it, collect the events, and check the per-item event order.
 */
import assert from 'node:assert/strict';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../../src/common/events';
import { AgentLoop, type AgentOptions } from '../../../src/core/agent/agent';
import { ToolGateway } from '../../../src/core/gateway/gateway';
import { ProviderError } from '../../../src/core/providers/shared/errors';
import { createProvider } from '../../../src/core/providers/factory';
import type { ConversationItem, Provider, ProviderConfig, ProviderId, TurnRequest, TurnResult } from '../../../src/core/providers/shared/types';
import { startAnthropicServer } from './anthropic';
import { startGeminiServer } from './gemini';
import { startOpenAIChatServer, type ChatPersonality } from './openaiChat';
import { startOpenAIResponsesServer } from './openaiResponses';
import type { WireServer } from './server';
import type { Runtime } from '../../../src/core/runtime/types';
import type { EngineConfig } from '../../../src/core/config/resolve';
import { providerConfigFrom } from '../../../src/core/config/engine';
import { runChatTurn } from '../../../src/core/turn/turns';
import type { Conversation } from '../../../src/core/agent/transcriptStore';

export async function startServerFor(provider: ProviderId, personality: ChatPersonality = 'openai'): Promise<WireServer> {
  switch (provider) {
    case 'openai':
      return startOpenAIResponsesServer();
    case 'openai-compatible':
      return startOpenAIChatServer(personality);
    case 'anthropic':
      return startAnthropicServer();
    case 'gemini':
      return startGeminiServer();
  }
}

/** The real adapter (and SDK), pointed at the server exactly as `--base-url` would. */
export async function providerFor(provider: ProviderId, server: WireServer, extra: Partial<ProviderConfig> = {}): Promise<Provider> {
  return createProvider({ provider, apiKey: 'test-key-wire', baseURL: server.url, env: {}, ...extra });
}

/**
 * An agent over the real adapter pointed at `server`: the provider's default model, no managed tools and
 * retries without delay, unless `options` says otherwise.
 */
export async function wireAgent(provider: ProviderId, server: WireServer, options: Partial<AgentOptions> & Pick<AgentOptions, 'runtime'>): Promise<AgentLoop> {
  return new AgentLoop({
    provider: await providerFor(provider, server),
    model: DEFAULT_MODELS[provider],
    gateway: new ToolGateway([]),
    retry: { baseDelayMs: 1, maxDelayMs: 1 },
    ...options,
  });
}

export const DEFAULT_MODELS: Record<ProviderId, string> = {
  openai: 'gpt-5',
  'openai-compatible': 'qwen2.5-coder:7b',
  anthropic: 'claude-sonnet-4-6',
  gemini: 'gemini-3-flash-preview',
};

export function userMessage(text: string, id = 'user_1'): ConversationItem {
  return { type: 'message', id, role: 'user', text };
}

export const EXECUTE_TOOL_CODE = {
  name: 'execute_tool_code',
  description: 'Run Python code that may call the managed tools with `await call_tool(name, **args)`.',
  parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
};

export class Recorder {
  readonly events: CodeActEvent[] = [];
  readonly emit = (e: CodeActEvent): void => {
    // Events must be plain JSON (the CLI prints them, the transcript stores them).
    assert.deepEqual(JSON.parse(JSON.stringify(e)), e);
    this.events.push(e);
  };

  ofType<T extends CodeActEvent['type']>(type: T): Extract<CodeActEvent, { type: T }>[] {
    return this.events.filter((e) => e.type === type) as Extract<CodeActEvent, { type: T }>[];
  }

  /** Events that concern one item. */
  forItem(id: string): CodeActEvent[] {
    return this.events.filter(
      (e) =>
        ('item_id' in e && e.item_id === id) ||
        ((e.type === 'response.output_item.done' || e.type === 'response.output_item.added') && 'id' in e.item && e.item.id === id),
    );
  }

  /** The answer's text, or with `thinking` the reasoning (which never travels as output_text). */
  text(opts: { thinking?: boolean } = {}): string {
    if (opts.thinking)
      return this.ofType('response.reasoning_text.delta')
        .map((e) => e.delta)
        .join('');
    return this.ofType('response.output_text.delta')
      .map((e) => e.delta)
      .join('');
  }

  /** Reasoning never appears as answer text: no output_text event carries it or names a reasoning item. */
  assertNoReasoningInOutputText(): void {
    const reasoningIds = new Set([...this.ofType('response.reasoning_text.delta'), ...this.ofType('response.reasoning_text.done')].map((e) => e.item_id));
    for (const e of [...this.ofType('response.output_text.delta'), ...this.ofType('response.output_text.done')]) {
      assert.equal(e.thinking, undefined, 'output_text with a thinking flag');
      assert.ok(!reasoningIds.has(e.item_id), `output_text on reasoning item ${e.item_id}`);
    }
    for (const e of this.ofType('response.output_item.done')) {
      if (e.item.type === 'message') assert.notEqual(e.item.thinking, true, 'a message item carrying reasoning');
    }
  }

  codeItems(): CodeInterpreterCallItem[] {
    return this.ofType('response.output_item.done')
      .map((e) => e.item)
      .filter((i): i is CodeInterpreterCallItem => i.type === 'code_interpreter_call');
  }
}

/**
 * Asserts the order of a hosted code item: in_progress, code deltas, code.done, interpreting,
 * completed, output_item.done; and that the deltas concatenate to the code. Returns the code.
 */
export function assertCodeItemOrder(rec: Recorder, id: string): string {
  const evs = rec.forItem(id);
  const kinds = evs.map((e) => e.type);
  const compact = kinds.filter((k, i) => !(k === 'response.code_interpreter_call_code.delta' && kinds[i - 1] === k));
  assert.deepEqual(
    compact,
    [
      'response.code_interpreter_call.in_progress',
      ...(kinds.includes('response.code_interpreter_call_code.delta') ? ['response.code_interpreter_call_code.delta'] : []),
      'response.code_interpreter_call_code.done',
      'response.code_interpreter_call.interpreting',
      'response.code_interpreter_call.completed',
      'response.output_item.done',
    ],
    `event order of ${id}: ${kinds.join(', ')}`,
  );
  const deltas = evs
    .filter((e) => e.type === 'response.code_interpreter_call_code.delta')
    .map((e) => (e as { delta: string }).delta)
    .join('');
  const done = evs.find((e) => e.type === 'response.code_interpreter_call_code.done') as { code: string };
  assert.equal(deltas, done.code, 'code deltas concatenate to the code');
  const item = (evs[evs.length - 1] as { item: CodeInterpreterCallItem }).item;
  assert.equal(item.code, done.code);
  return done.code;
}

/** One turn against a server: returns the result and the recorder. */
export async function runTurn(
  provider: Provider,
  req: Partial<TurnRequest> & { history: ConversationItem[] },
  model?: string,
): Promise<{ result: TurnResult; rec: Recorder }> {
  const rec = new Recorder();
  const result = await provider.streamTurn({ model: model ?? DEFAULT_MODELS[provider.id], tools: [], ...req }, rec.emit);
  return { result, rec };
}

/** Runs a turn that must fail; returns the error and the events emitted before it. */
export async function runFailingTurn(
  provider: Provider,
  req: Partial<TurnRequest> & { history: ConversationItem[] },
  model?: string,
): Promise<{ error: ProviderError; rec: Recorder }> {
  const rec = new Recorder();
  try {
    await provider.streamTurn({ model: model ?? DEFAULT_MODELS[provider.id], tools: [], ...req }, rec.emit);
  } catch (error) {
    assert.ok(error instanceof ProviderError, `expected a ProviderError, got ${String(error)}`);
    return { error, rec };
  }
  assert.fail('the turn should have failed');
}

/** The function results an SDK sent back in a request, in the provider's own format. */
export function resultsInRequest(provider: ProviderId, body: any): string[] {
  switch (provider) {
    case 'openai':
      // With images the output is a list of parts: its text parts.
      return body.input
        .filter((i: any) => i.type === 'function_call_output')
        .map((i: any) =>
          typeof i.output === 'string'
            ? i.output
            : i.output
                .filter((p: any) => p.type === 'input_text')
                .map((p: any) => p.text)
                .join(''),
        );
    case 'openai-compatible':
      return body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
    case 'anthropic':
      return body.messages
        .flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
        .filter((b: any) => b.type === 'tool_result')
        .map((b: any) =>
          typeof b.content === 'string'
            ? b.content
            : b.content
                .filter((c: any) => c.type === 'text')
                .map((c: any) => c.text)
                .join(''),
        );
    case 'gemini':
      return body.contents
        .flatMap((c: any) => c.parts ?? [])
        .filter((p: any) => p.functionResponse)
        .map((p: any) =>
          typeof p.functionResponse.response?.output === 'string' ? p.functionResponse.response.output : JSON.stringify(p.functionResponse.response),
        );
  }
}

/**
 * One chat turn as `codeact chat` runs it, against a wire server: the config's provider (no key), the given
 * runtime, no tools, retries without waiting. `extra` adds or replaces options (a listener, a gateway).
 */
export function chatTurnsWith(config: EngineConfig, runtime: Runtime, extra: Partial<Parameters<typeof runChatTurn>[0]> = {}) {
  return (conversation: Conversation, prompt: string) =>
    runChatTurn({
      conversation,
      prompt,
      source: 'cli',
      config,
      provider: () => createProvider(providerConfigFrom(config, undefined)),
      runtime,
      gateway: new ToolGateway([]),
      agent: { retry: { baseDelayMs: 1, maxDelayMs: 1 } },
      ...extra,
    });
}
