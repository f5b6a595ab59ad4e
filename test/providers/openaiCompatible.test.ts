/**
 * OpenAI-compatible Chat Completions adapter against loopback servers with the Ollama, vLLM and
 * llama.cpp personalities (and plain OpenAI).
 */
import assert from 'node:assert/strict';
import { createProvider } from '../../src/core/providers/factory';
import type { ConversationItem } from '../../src/core/providers/shared/types';
import { EXECUTE_TOOL_CODE, providerFor, runFailingTurn, runTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { ChatPersonality } from '../support/wire/openaiChat';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';
import { PROVIDER_MESSAGES } from '../../src/core/providers/shared/errors';

type Json = Record<string, any>;
const PERSONALITIES: ChatPersonality[] = ['openai', 'ollama', 'vllm', 'llamacpp'];

describe('providers: OpenAI-compatible Chat Completions', () => {
  let server: WireServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  for (const personality of PERSONALITIES) {
    it(`${personality}: parallel tool_calls merged by index, then role:"tool" results and the answer`, async () => {
      server = await startServerFor('openai-compatible', personality);
      const codeA = 'print("a — ä")\n';
      const codeB = 'x = {"k": [1, 2]}\nprint(x)';
      server.push(
        turn()
          .text('Running two things.', { chunkSize: 3 })
          .call('execute_tool_code', { code: codeA }, { id: 'call_A', chunkSize: 4 })
          .call('execute_tool_code', { code: codeB }, { id: 'call_B', chunkSize: 5 }),
        // Written 2 bytes at a time: the multi-byte characters are split between network chunks.
        turn().text('Both ran: a — ä and {"k": [1, 2]}.', { chunkSize: 2 }).with({ chunkBytes: 2 }),
      );
      const provider = await providerFor('openai-compatible', server);
      const history: ConversationItem[] = [userMessage('run both')];
      const t1 = await runTurn(provider, { history, tools: [EXECUTE_TOOL_CODE], system: 'sys' });
      assert.deepEqual(
        t1.result.functionCalls.map((c) => [c.call_id, c.name, JSON.parse(c.arguments).code]),
        [
          ['call_A', 'execute_tool_code', codeA],
          ['call_B', 'execute_tool_code', codeB],
        ],
      );
      assert.equal(t1.result.stopReason, 'tool_use');
      assert.equal(t1.rec.text(), 'Running two things.');
      for (const { item_id: id } of t1.result.functionCalls) {
        const kinds = t1.rec.forItem(id).map((e) => e.type);
        assert.equal(kinds[0], 'response.output_item.added');
        assert.deepEqual(kinds.slice(-2), ['response.function_call_arguments.done', 'response.output_item.done']);
      }
      const body0 = server.turns[0].body;
      assert.deepEqual(body0.messages, [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'run both' },
      ]);
      assert.deepEqual(body0.tools, [
        { type: 'function', function: { name: 'execute_tool_code', description: EXECUTE_TOOL_CODE.description, parameters: EXECUTE_TOOL_CODE.parameters } },
      ]);
      assert.deepEqual(body0.stream_options, { include_usage: true });
      assert.deepEqual(t1.result.usage, { input_tokens: 50, output_tokens: 10, total_tokens: 60 });

      const outputs: ConversationItem[] = [
        { type: 'function_call_output', call_id: 'call_A', output: 'a — ä\n' },
        { type: 'function_call_output', call_id: 'call_B', output: "{'k': [1, 2]}\n" },
      ];
      const t2 = await runTurn(provider, { history: [...history, ...t1.result.items, ...outputs], tools: [EXECUTE_TOOL_CODE] });
      assert.equal(t2.rec.text(), 'Both ran: a — ä and {"k": [1, 2]}.');
      assert.equal(t2.result.stopReason, 'end_turn');
      const messages: Json[] = server.turns[1].body.messages;
      assert.deepEqual(messages.slice(1), [
        {
          role: 'assistant',
          content: 'Running two things.',
          tool_calls: [
            { id: 'call_A', type: 'function', function: { name: 'execute_tool_code', arguments: JSON.stringify({ code: codeA }) } },
            { id: 'call_B', type: 'function', function: { name: 'execute_tool_code', arguments: JSON.stringify({ code: codeB }) } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_A', content: 'a — ä\n' },
        { role: 'tool', tool_call_id: 'call_B', content: "{'k': [1, 2]}\n" },
      ]);
    });
  }

  for (const personality of ['ollama', 'vllm', 'llamacpp'] as const) {
    it(`${personality}: reasoning deltas are thinking text, not the answer`, async () => {
      server = await startServerFor('openai-compatible', personality);
      server.push(turn().thinking('Hmm, 2+2.', { chunkSize: 2 }).text('4'));
      const provider = await providerFor('openai-compatible', server);
      const { rec, result } = await runTurn(provider, { history: [userMessage('2+2?')] });
      assert.equal(rec.text(), '4');
      assert.equal(rec.text({ thinking: true }), 'Hmm, 2+2.');
      rec.assertNoReasoningInOutputText();
      assert.deepEqual(
        result.items.map((i) => [i.type, i.type === 'message' && i.thinking === true]),
        [
          ['message', true],
          ['message', false],
        ],
      );
    });
  }

  it('a model configured without tool support fails clearly before any request', async () => {
    server = await startServerFor('openai-compatible', 'ollama');
    const provider = await providerFor('openai-compatible', server, { models: { 'gemma:2b': { supportsTools: false } } });
    const { error } = await runFailingTurn(provider, { history: [userMessage('hi')], tools: [EXECUTE_TOOL_CODE] }, 'gemma:2b');
    assert.equal(error.code, 'tools_unsupported');
    assert.ok(error.message.startsWith('"gemma:2b"') && error.message.includes(PROVIDER_MESSAGES.toolsUnsupported), error.message);
    assert.ok(error.message.endsWith(PROVIDER_MESSAGES.toolSupportFix), error.message);
    assert.equal(server.requests.length, 0);
  });

  const rejections: [ChatPersonality, number, string][] = [
    ['ollama', 400, 'registry.ollama.ai/library/gemma:2b does not support tools'],
    ['vllm', 400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'],
    ['llamacpp', 500, 'tools param requires --jinja flag'],
  ];
  for (const [personality, status, message] of rejections) {
    it(`${personality}: a server that rejects tools (${status}) gives a tools_unsupported error`, async () => {
      server = await startServerFor('openai-compatible', personality);
      server.push(fault.status(status, { message }));
      const provider = await providerFor('openai-compatible', server);
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')], tools: [EXECUTE_TOOL_CODE] });
      assert.equal(error.code, 'tools_unsupported');
      assert.equal(error.retryable, false);
      assert.ok(error.message.includes(message), error.message);
      assert.ok(error.message.endsWith(PROVIDER_MESSAGES.toolSupportFix), error.message);
      assert.ok(error.message.includes(server.url), 'names the server');
    });
  }

  it('a conversation larger than the context window setting fails with context_overflow before sending', async () => {
    server = await startServerFor('openai-compatible', 'vllm');
    const provider = await providerFor('openai-compatible', server, { contextWindow: 100 });
    const { error } = await runFailingTurn(provider, { history: [userMessage('x'.repeat(2000))] });
    assert.equal(error.code, 'context_overflow');
    assert.match(error.message, /100-token context window/);
    assert.equal(server.requests.length, 0);
    // A per-model window overrides the default.
    server.push(turn().text('fits'));
    const roomy = await providerFor('openai-compatible', server, { contextWindow: 100, models: { big: { contextWindow: 32768 } } });
    const { rec } = await runTurn(roomy, { history: [userMessage('x'.repeat(2000))] }, 'big');
    assert.equal(rec.text(), 'fits');
  });

  it('hosted mode is refused with a clear message (no sandbox on local servers)', async () => {
    server = await startServerFor('openai-compatible', 'ollama');
    const provider = await providerFor('openai-compatible', server);
    assert.equal(provider.capabilities.hostedCode, false);
    const { error } = await runFailingTurn(provider, { history: [userMessage('hi')], hosted: { enabled: true } });
    assert.match(error.message, /no hosted code sandbox.*toolCode/);
  });

  it('works without an API key (local servers) and sends the one given otherwise', async () => {
    server = await startServerFor('openai-compatible', 'llamacpp');
    server.push(turn().text('ok'), turn().text('ok'));
    const keyless = await createProvider({ provider: 'openai-compatible', baseURL: server.url, env: {} });
    await runTurn(keyless, { history: [userMessage('hi')] });
    const keyed = await createProvider({
      provider: 'openai-compatible',
      baseURL: server.url,
      env: { OPENAI_COMPATIBLE_API_KEY: 'sk-local', OPENAI_API_KEY: 'sk-openai-secret' },
    });
    await runTurn(keyed, { history: [userMessage('hi')] });
    assert.equal(server.turns[1].headers.authorization, 'Bearer sk-local');
    // The user's OpenAI key never goes to an OpenAI-compatible server.
    server.push(turn().text('ok'));
    const openaiOnly = await createProvider({ provider: 'openai-compatible', baseURL: server.url, env: { OPENAI_API_KEY: 'sk-openai-secret' } });
    await runTurn(openaiOnly, { history: [userMessage('hi')] });
    assert.notEqual(server.turns[2].headers.authorization, 'Bearer sk-openai-secret');
  });
});
