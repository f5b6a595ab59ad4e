/**
 * The text protocol end to end: real SDK clients against loopback wire servers that repeat their ids,
 * code running in the real local guest, managed tools through the real gateway. The model writes
 * ```python blocks; no request carries `tools`.
 */
import * as assert from 'node:assert/strict';
import type { CodeActEvent, CodeInterpreterCallItem, FunctionCallOutputItem } from '../../src/common/events';
import { AgentLoop, type AgentOptions } from '../../src/core/agent/agent';
import { forgetToolRejections } from '../../src/core/agent/textProtocol';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ConversationItem, ProviderConfig, ProviderId } from '../../src/core/providers/shared/types';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { DEFAULT_MODELS, providerFor, startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';
import { LOOP, messagesOf, orderDeskTools, systemOf, toolsOf } from '../support/textWire';
import { REFUSALS } from '../../src/core/gateway/gateway';
import { PROVIDER_MESSAGES } from '../../src/core/providers/shared/errors';
import { OBSERVATION } from '../../src/core/agent/textHistory';

/** Every item id the events introduce must be unique (providers and local servers repeat theirs). */
function assertUniqueItemIds(events: CodeActEvent[]): void {
  const owner = new Map<string, string>();
  for (const e of events) {
    let id: string | undefined;
    let kind: string | undefined;
    if (e.type === 'response.output_text.done') [id, kind] = [e.item_id, 'text'];
    else if (e.type === 'response.code_interpreter_call.in_progress') [id, kind] = [e.item_id, 'exec'];
    else if (e.type === 'response.output_item.added' && e.item.type === 'function_call') [id, kind] = [e.item.call_id, 'call'];
    if (!id) continue;
    assert.ok(!owner.has(id), `item id ${id} (${kind}) was used twice`);
    owner.set(id, kind!);
  }
}

function execItems(events: CodeActEvent[]): CodeInterpreterCallItem[] {
  return events.flatMap((e) => (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' ? [e.item] : []));
}

/** in_progress, code deltas (adding up to the code), code.done, interpreting, completed, output_item.done. */
function assertCardOrder(events: CodeActEvent[], id: string, code: string): void {
  const mine = events.filter((e) => ('item_id' in e && e.item_id === id) || (e.type === 'response.output_item.done' && 'id' in e.item && e.item.id === id));
  const kinds = mine.map((e) => e.type).filter((k, i, a) => !(k === a[i - 1] && k === 'response.code_interpreter_call_code.delta'));
  assert.deepEqual(
    kinds.filter((k) => k.startsWith('response.')),
    [
      'response.code_interpreter_call.in_progress',
      'response.code_interpreter_call_code.delta',
      'response.code_interpreter_call_code.done',
      'response.code_interpreter_call.interpreting',
      'response.code_interpreter_call.completed',
      'response.output_item.done',
    ],
  );
  const deltas = mine
    .filter((e) => e.type === 'response.code_interpreter_call_code.delta')
    .map((e) => (e as { delta: string }).delta)
    .join('');
  assert.equal(deltas, code);
}

/** Scripted ids that repeat on every response, as local servers do. */
const REPEAT: Record<ProviderId, string> = {
  'openai-compatible': 'chatcmpl-repeat',
  anthropic: 'msg_01repeat',
  gemini: 'n1P6abvRFaKdz7IPkcuQ2Aw',
  openai: 'resp_repeat',
};

describe('agent loop: text protocol (```python blocks, no function calling)', function () {
  this.timeout(60_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
  after(() => runtime.dispose());
  afterEach(() => forgetToolRejections());

  async function agentFor(provider: ProviderId, server: WireServer, extra: Partial<AgentOptions> = {}, config: Partial<ProviderConfig> = {}) {
    const events: CodeActEvent[] = [];
    const calls: string[] = [];
    const agent = new AgentLoop({
      provider: await providerFor(provider, server, config),
      model: DEFAULT_MODELS[provider],
      runtime,
      gateway: new ToolGateway(orderDeskTools(calls)),
      onEvent: (e) => events.push(e),
      retry: { baseDelayMs: 10, maxDelayMs: 50 },
      ...extra,
    });
    return { agent, events, calls };
  }

  function scriptLoop(server: WireServer, provider: ProviderId): void {
    const id = REPEAT[provider];
    server.push(
      turn().text(LOOP.fail, { chunkSize: 5 }).with({ id }),
      turn().text(LOOP.recover, { chunkSize: 3 }).with({ id }),
      turn().text(LOOP.answer, { chunkSize: 7 }).with({ id }),
    );
  }

  /** The loop: a failing run, a recovering run that calls two tools, the answer; all without tools. */
  async function assertLoop(
    provider: ProviderId,
    server: WireServer,
    events: CodeActEvent[],
    calls: string[],
    items: ConversationItem[],
    firstTextRequest = 0,
  ) {
    const requests = server.turns.slice(firstTextRequest);
    assert.equal(requests.length, 3);
    for (const r of requests) {
      assert.equal(toolsOf(provider, r.body), undefined, 'a text-protocol request carries no tools');
      assert.match(systemOf(provider, r.body), /```python/);
    }
    // The tools ran through the gateway: the bad SKU was refused before the tool ran.
    assert.deepEqual(calls, ['search_catalog:LED lamp', 'check_inventory:LMP-LED-010']);
    const execs = execItems(events);
    assert.equal(execs.length, 2);
    assert.equal(execs[0].status, 'failed');
    assert.equal(execs[0].code, LOOP.failCode);
    assert.ok(execs[0].error!.message.includes(REFUSALS.invalidArguments('check_inventory')), execs[0].error!.message);
    assert.equal(execs[1].status, 'completed');
    assert.equal(execs[1].value, 85);
    assert.equal(execs[1].code, LOOP.recoverCode);
    assertCardOrder(events, execs[0].id, LOOP.failCode);
    assertCardOrder(events, execs[1].id, LOOP.recoverCode);
    const toolEvents = events.filter((e) => e.type === 'codeact.tool_call.completed') as Extract<CodeActEvent, { type: 'codeact.tool_call.completed' }>[];
    assert.deepEqual(
      toolEvents.map((e) => [e.name, e.error === undefined]),
      [
        ['check_inventory', false],
        ['search_catalog', true],
        ['check_inventory', true],
      ],
    );
    // The text outside the blocks is the assistant's message; the made-up observation never shows.
    const texts = events.filter((e) => e.type === 'response.output_text.done' && !e.thinking).map((e) => (e as { text: string }).text);
    assert.deepEqual(texts, ['I will check the lamp.', 'The SKU was wrong; I will search first.', LOOP.answer]);
    assert.ok(!events.some((e) => e.type === 'response.output_text.delta' && /```|Observation/.test(e.delta)));
    assertUniqueItemIds(events);
    // The observations went back to the model: the error first, then the result.
    const second = messagesOf(provider, requests[1].body);
    assert.deepEqual(
      second.map((m) => m.role),
      ['user', 'assistant', 'user'],
    );
    assert.equal(second[1].text, `I will check the lamp.\n\n\`\`\`python\n${LOOP.failCode}\n\`\`\``);
    assert.ok(second[2].text.startsWith(`${OBSERVATION.failed('RuntimeError')}\n│ ${REFUSALS.invalidArguments('check_inventory')}`), second[2].text);
    const third = messagesOf(provider, requests[2].body);
    assert.ok(
      third[4].text.startsWith([OBSERVATION.ran('completed'), OBSERVATION.printed, '│ LED Desk Lamp', OBSERVATION.returned('85')].join('\n')),
      third[4].text,
    );
    // Stored as with function calling: prose, the code call, its output.
    assert.deepEqual(
      items.map((i) => i.type + (i.type === 'function_call_output' && i.is_error ? '!' : '')),
      ['message', 'message', 'function_call', 'function_call_output!', 'message', 'function_call', 'function_call_output', 'message'],
    );
    const outputs = items.filter((i): i is FunctionCallOutputItem => i.type === 'function_call_output');
    assert.match(outputs[1].output, /"value":85/);
  }

  for (const provider of ['openai-compatible', 'anthropic', 'gemini', 'openai'] as ProviderId[]) {
    it(`${provider}: protocol "text" runs a failing block, a recovering block with two tools, then answers`, async () => {
      const server = await startServerFor(provider, 'ollama');
      try {
        scriptLoop(server, provider);
        const { agent, events, calls } = await agentFor(provider, server, { protocol: 'text' });
        const result = await agent.run([], 'How many LED lamps are on hand?');
        assert.equal(result.status, 'completed', JSON.stringify(result.error));
        assert.equal(result.text, LOOP.answer);
        assert.ok(!events.some((e) => e.type === 'codeact.retry'), 'a chosen protocol is not announced');
        await assertLoop(provider, server, events, calls, result.items);

        // The next turn re-sends the conversation in text form.
        server.push(turn().text('Yes.').with({ id: REPEAT[provider] }));
        const again = await agentFor(provider, server, { protocol: 'text' });
        const next = await again.agent.run(result.items, 'Sure?');
        assert.equal(next.status, 'completed');
        const replayed = messagesOf(provider, server.turns[3].body);
        assert.deepEqual(
          replayed.map((m) => m.role),
          ['user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user'],
        );
        assert.match(replayed[3].text, /^The SKU was wrong; I will search first\.\n\n```python\nhits = await/);
        assert.equal(replayed[5].text, LOOP.answer);
        assert.equal(replayed[6].text, 'Sure?');
      } finally {
        await server.close();
      }
    });
  }

  it('openai-compatible: a server that rejects tools is told once, remembered, and the turn goes on in text form', async () => {
    const server = await startServerFor('openai-compatible', 'llamacpp');
    try {
      server.push(fault.status(500, { message: 'tools param requires --jinja flag' }));
      scriptLoop(server, 'openai-compatible');
      const { agent, events, calls } = await agentFor('openai-compatible', server);
      const result = await agent.run([], 'How many LED lamps are on hand?');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      assert.ok(toolsOf('openai-compatible', server.turns[0].body), 'the first request offered tools');
      const notices = events.filter((e) => e.type === 'codeact.retry');
      assert.equal(notices.length, 1);
      assert.ok((notices[0] as { message: string }).message.includes(PROVIDER_MESSAGES.toolsUnsupported));
      assert.match((notices[0] as { message: string }).message, /--jinja.*text protocol/s);
      assert.ok(!events.some((e) => e.type === 'error'), 'the turn did not fail');
      await assertLoop('openai-compatible', server, events, calls, result.items, 1);

      // Remembered for this model and server: a new run sends no tools at all, and says nothing.
      server.push(turn().text('Still 85.'));
      const later = await agentFor('openai-compatible', server);
      const r2 = await later.agent.run(result.items, 'Again?');
      assert.equal(r2.status, 'completed');
      assert.equal(toolsOf('openai-compatible', server.turns[4].body), undefined);
      assert.ok(!later.events.some((e) => e.type === 'codeact.retry'));
    } finally {
      await server.close();
    }
  });

  it('openai-compatible: a model configured with supportsTools: false uses the text protocol from the first request', async () => {
    const server = await startServerFor('openai-compatible', 'vllm');
    try {
      scriptLoop(server, 'openai-compatible');
      const { agent, events, calls } = await agentFor(
        'openai-compatible',
        server,
        {},
        { models: { [DEFAULT_MODELS['openai-compatible']]: { supportsTools: false } } },
      );
      const result = await agent.run([], 'How many LED lamps are on hand?');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      assert.ok(!events.some((e) => e.type === 'codeact.retry'));
      await assertLoop('openai-compatible', server, events, calls, result.items);
    } finally {
      await server.close();
    }
  });

  it('a block cut off by the output token limit does not run; the model is told and writes it again', async () => {
    const server = await startServerFor('openai-compatible', 'ollama');
    try {
      server.push(
        turn().text('Counting.\n```python\nfor i in range(3):\n    print(').with({ stop: 'length' }),
        turn().text('```python\nprint(3)\n```'),
        turn().text('Done: 3.'),
      );
      const { agent, events } = await agentFor('openai-compatible', server, { protocol: 'text' });
      const result = await agent.run([], 'Count.');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      const execs = execItems(events);
      assert.deepEqual(
        execs.map((e) => [e.status, e.error?.type ?? null]),
        [
          ['failed', 'NotRun'],
          ['completed', null],
        ],
      );
      assert.match(messagesOf('openai-compatible', server.turns[1].body).at(-1)!.text, /cut off by the output token limit/);
      assert.equal(result.text, 'Done: 3.');
    } finally {
      await server.close();
    }
  });
});
