/**
 * The text protocol as a provider wrapper (src/core/agent/textProtocol.ts): a Provider whose turns go to
 * the real one in text form and come back as function calls of the code tool; the agent loop sees one
 * contract. The events of a text-protocol run are pinned as they were before the wrapper (recorded on the
 * base commit), and the fallback step of the turn's retries is checked on its own.
 */
import * as assert from 'node:assert/strict';
import type { CodeActEvent } from '../../src/common/events';
import { AgentLoop } from '../../src/core/agent/agent';
import type { CodeStreamEntry } from '../../src/core/agent/codeStreams';
import { TurnRetries, type Fallback } from '../../src/core/agent/retries';
import { TextProtocolProvider, forgetToolRejections } from '../../src/core/agent/textProtocol';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { PROVIDER_CATALOG } from '../../src/core/providers/shared/catalog';
import { ProviderError } from '../../src/core/providers/shared/errors';
import type { Provider } from '../../src/core/providers/shared/types';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { DEFAULT_MODELS, EXECUTE_TOOL_CODE, providerFor, startServerFor, userMessage } from '../support/wire/harness';
import { fault, turn } from '../support/wire/turn';
import { messagesOf, systemOf, toolsOf } from '../support/textWire';

const MODEL = DEFAULT_MODELS['openai-compatible'];

/** An event as a line: its type, its item's type, ids as #n in order of appearance, and its text. */
function lines(events: readonly CodeActEvent[]): string[] {
  const ids = new Map<string, string>();
  const id = (v: unknown) => {
    if (typeof v !== 'string') return '';
    if (!ids.has(v)) ids.set(v, `#${ids.size}`);
    return ` ${ids.get(v)}`;
  };
  return events.map((e) => {
    const r = e as unknown as Record<string, unknown>;
    const item = r.item as Record<string, unknown> | undefined;
    let line = e.type + (item ? `:${item.type}${id(item.id)}${item.call_id ? id(item.call_id) : ''}` : '') + id(r.item_id);
    if (item?.item_id) line += ` of${id(item.item_id)}`;
    for (const k of ['delta', 'text', 'arguments', 'code', 'status', 'runtime', 'name', 'message']) {
      const v = item && k !== 'delta' ? item[k] : r[k];
      if (typeof v === 'string') line += ` ${k}=${JSON.stringify(v.slice(0, 60))}`;
    }
    return line;
  });
}

describe('the text protocol is a provider wrapper', function () {
  this.timeout(60_000);
  afterEach(() => forgetToolRejections());

  it('is a Provider: a turn through the OpenAI-compatible wire server goes without tools and comes back as a call of the code tool', async () => {
    const server = await startServerFor('openai-compatible', 'ollama');
    try {
      server.push(turn().text('I will compute it.\n```python\nprint(6 * 7)\n```', { chunkSize: 5 }).with({ id: 'chatcmpl-repeat' }));
      const cards: [string, CodeStreamEntry][] = [];
      const inner = await providerFor('openai-compatible', server);
      const provider: Provider = new TextProtocolProvider(inner, {
        model: MODEL,
        protocol: 'text',
        runtime: 'local',
        register: (itemId, entry) => cards.push([itemId, entry]),
      });
      assert.equal(provider.id, inner.id);
      assert.deepEqual(provider.capabilities, inner.capabilities);
      const events: CodeActEvent[] = [];
      const result = await provider.streamTurn(
        { model: MODEL, system: 'ignored in text form', history: [userMessage('What is 6 times 7?')], tools: [EXECUTE_TOOL_CODE] },
        (e) => events.push(e),
      );
      // The request: no tools; the code tool became the text system prompt.
      const body = server.turns[0].body;
      assert.equal(toolsOf('openai-compatible', body), undefined);
      assert.match(systemOf('openai-compatible', body), /```python/);
      assert.match(systemOf('openai-compatible', body), new RegExp(EXECUTE_TOOL_CODE.description.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
      assert.deepEqual(messagesOf('openai-compatible', body), [{ role: 'user', text: 'What is 6 times 7?' }]);
      // The response: a function call of the normal shape, stored after the prose.
      assert.equal(result.functionCalls.length, 1);
      const [call] = result.functionCalls;
      assert.equal(call.name, 'execute_tool_code');
      assert.deepEqual(JSON.parse(call.arguments), { code: 'print(6 * 7)' });
      assert.deepEqual(
        result.items.map((i) => i.type),
        ['message', 'function_call'],
      );
      assert.equal(result.items[1].id, call.item_id);
      assert.equal((result.items[0] as { text: string }).text, 'I will compute it.');
      // The block's code card is registered under the call's item id, and streamed as code.
      assert.equal(cards.length, 1);
      assert.equal(cards[0][0], call.item_id);
      assert.equal(cards[0][1].extractor.value, 'print(6 * 7)');
      const code = events.filter((e) => e.type === 'response.code_interpreter_call_code.delta').map((e) => (e as { delta: string }).delta);
      assert.equal(code.join(''), 'print(6 * 7)');
    } finally {
      await server.close();
    }
  });

  it("asks the facts of the provider it wraps, and probes without tools only for a third-party server (the catalogue's localServer, as the error chain reads a rejection of tools)", () => {
    for (const info of PROVIDER_CATALOG) {
      const inner: Provider = {
        id: info.id,
        capabilities: { functionTools: true, hostedCode: false },
        streamTurn: () => Promise.reject(new Error('not sent')),
        contextWindow: (model) => (model === MODEL ? 4096 : undefined),
        seesImages: (model) => model === MODEL,
      };
      const wrapper = new TextProtocolProvider(inner, { model: MODEL, runtime: 'local', register: () => {} });
      assert.equal(wrapper.contextWindow?.(MODEL), 4096);
      assert.equal(wrapper.seesImages?.(MODEL), true);
      assert.equal(wrapper.servedContextWindow, undefined);
      const notices: CodeActEvent[] = [];
      const bare = new ProviderError({ code: 'bad_request', status: 400, message: 'Bad request', provider: info.id });
      const step = wrapper.fallback(bare, (e) => notices.push(e));
      assert.deepEqual(step, info.localServer ? { again: true, maxAttempts: 1 } : { again: false, error: bare }, info.id);
      assert.equal(notices.length, info.localServer ? 1 : 0, info.id);
    }
  });

  it('AgentLoop runs a text-protocol turn with the same events, items and usage as before the wrapper', async () => {
    const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
    const server = await startServerFor('openai-compatible', 'ollama');
    try {
      server.push(
        turn().text('I will compute it.\n```python\nprint(6 * 7)\n```\nignored', { chunkSize: 5 }).with({ id: 'chatcmpl-repeat' }),
        fault.status(503, { message: 'busy' }),
        turn().text('It is 42.', { chunkSize: 3 }).with({ id: 'chatcmpl-repeat' }),
      );
      const events: CodeActEvent[] = [];
      const agent = new AgentLoop({
        provider: await providerFor('openai-compatible', server),
        model: MODEL,
        runtime,
        gateway: new ToolGateway([]),
        protocol: 'text',
        retry: { baseDelayMs: 1, maxDelayMs: 1 },
        sleep: async () => {},
        onEvent: (e) => events.push(e),
      });
      const result = await agent.run([], 'What is 6 times 7?');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      assert.deepEqual(lines(events), BEFORE.events);
      assert.deepEqual(
        result.items.map((i) => [i.type, 'role' in i ? i.role : '', 'text' in i ? i.text : 'arguments' in i ? i.arguments! : 'output' in i ? i.output : '']),
        BEFORE.items,
      );
      assert.deepEqual(result.usage, BEFORE.usage);
    } finally {
      await server.close();
      await runtime.dispose();
    }
  });

  it("tells the model the session note in text form too (a reopened conversation's variables are gone)", async () => {
    const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
    const server = await startServerFor('openai-compatible', 'ollama');
    try {
      server.push(turn().text('Nothing to run.').with({ id: 'chatcmpl-repeat' }));
      const note = 'NOTE: the Python session of this conversation is gone.';
      const agent = new AgentLoop({
        provider: await providerFor('openai-compatible', server),
        model: MODEL,
        runtime,
        gateway: new ToolGateway([]),
        protocol: 'text',
        sessionNote: note,
      });
      const result = await agent.run([], 'What was x?');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      const system = systemOf('openai-compatible', server.turns[0].body);
      assert.match(system, /```python/, 'the text system prompt was sent');
      assert.ok(system.includes(note), `the session note is in the text system prompt:\n${system}`);
    } finally {
      await server.close();
      await runtime.dispose();
    }
  });
});

describe('the retries of a turn: the fallback step', () => {
  const rejected = () => new ProviderError({ code: 'bad_request', message: 'rejected', provider: 'openai-compatible' });
  const retries = () =>
    new TurnRetries({ policy: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 }, sleep: async () => {}, provider: 'openai-compatible', emit: () => {} });

  it('after the last attempt failed, the fallback sends the turn again with its own attempts, once', async () => {
    const sent: string[] = [];
    let form = 'tools';
    const decisions: Fallback[] = [];
    const result = await retries().run(
      async () => {
        sent.push(form);
        if (form === 'tools' || sent.length < 3) throw new ProviderError({ code: 'server', message: 'down', provider: 'openai' });
        return 'ok';
      },
      {
        maxAttempts: 2,
        failed: () => {},
        fallback: () => {
          form = 'text';
          const d: Fallback = { again: true, maxAttempts: 2 };
          decisions.push(d);
          return d;
        },
      },
    );
    assert.equal(result, 'ok');
    assert.deepEqual(sent, ['tools', 'tools', 'text']);
    assert.equal(decisions.length, 1);
  });

  it('the fallback may report another error; without a fallback, or when the user stopped the turn, the last error stands', async () => {
    const other = rejected();
    await assert.rejects(
      retries().run(() => Promise.reject(rejected()), { maxAttempts: 1, failed: () => {}, fallback: () => ({ again: false, error: other }) }),
      (e) => e === other,
    );
    const first = rejected();
    await assert.rejects(
      retries().run(() => Promise.reject(first), { maxAttempts: 1, failed: () => {} }),
      (e) => e === first,
    );
    const stop = new AbortController();
    stop.abort();
    let attempts = 0;
    await assert.rejects(
      retries().run(
        () => {
          attempts++;
          return Promise.reject(first);
        },
        { maxAttempts: 1, signal: stop.signal, failed: () => {}, fallback: () => ({ again: true }) },
      ),
      (e) => e === first,
    );
    assert.equal(attempts, 1, 'a stopped turn is not sent again');
  });
});

/** Recorded on the base commit (56a33b9), before the text protocol became a provider wrapper. */
const BEFORE: { events: string[]; items: string[][]; usage: unknown } = {
  events: [
    'response.output_text.delta #0 delta="I wil"',
    'response.output_text.delta #0 delta="l com"',
    'response.output_text.delta #0 delta="pute "',
    'response.output_text.delta #0 delta="it."',
    'response.output_item.added:function_call #1 #2 arguments="" status="in_progress" name="execute_tool_code"',
    'response.code_interpreter_call.in_progress #3 runtime="local"',
    'response.code_interpreter_call_code.delta #3 delta="p"',
    'response.code_interpreter_call_code.delta #3 delta="rint("',
    'response.code_interpreter_call_code.delta #3 delta="6 * 7"',
    'response.code_interpreter_call_code.delta #3 delta=")"',
    'response.function_call_arguments.done #1 arguments="{\\"code\\":\\"print(6 * 7)\\"}" name="execute_tool_code"',
    'response.output_item.done:function_call #1 #2 arguments="{\\"code\\":\\"print(6 * 7)\\"}" status="completed" name="execute_tool_code"',
    'response.output_text.done #0 text="I will compute it."',
    'response.output_item.done:message #0 text="I will compute it."',
    'response.completed',
    'response.code_interpreter_call_code.done #3 code="print(6 * 7)"',
    'response.code_interpreter_call.interpreting #3',
    'codeact.output.delta #3 delta="42\\n"',
    'response.code_interpreter_call.completed #3',
    'response.output_item.done:code_interpreter_call #3 code="print(6 * 7)" status="completed" runtime="local"',
    'response.output_item.done:function_call_output #4 #2 of #1 name="execute_tool_code"',
    'codeact.retry message="The OpenAI-compatible server had a server error (HTTP 503): "',
    'response.output_text.delta #5 delta="It "',
    'response.output_text.delta #5 delta="is "',
    'response.output_text.delta #5 delta="42."',
    'response.output_text.done #5 text="It is 42."',
    'response.output_item.done:message #5 text="It is 42."',
    'response.completed',
  ],
  items: [
    ['message', 'user', 'What is 6 times 7?'],
    ['message', 'assistant', 'I will compute it.'],
    ['function_call', '', '{"code":"print(6 * 7)"}'],
    ['function_call_output', '', '{"status":"completed","execution":1,"value":null,"stdout":"42\\n"}'],
    ['message', 'assistant', 'It is 42.'],
  ],
  usage: {
    turns: [
      {
        input_tokens: 50,
        output_tokens: 10,
        total_tokens: 60,
      },
      {
        input_tokens: 50,
        output_tokens: 10,
        total_tokens: 60,
      },
    ],
    total: {
      input_tokens: 100,
      output_tokens: 20,
      total_tokens: 120,
    },
  },
};
