/**
 * The output budget: a long result keeps its
 * beginning and its end around one note with exact counts, the same text in the function-calling
 * protocols (real SDKs at the loopback wire: OpenAI Responses and Chat, Anthropic, Gemini) and in the
 * text protocol; the exception and the last lines survive; a follow-up execution of the session reads the
 * whole output with output_of(n), in the real local guest (bubblewrap).
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeInterpreterCallItem, FunctionCallOutputItem } from '../../src/common/events';
import { headTail, omittedText, shareBudget } from '../../src/common/outputBudget';
import { quoteBlock } from '../../src/common/quoteData';
import { AgentLoop, type AgentOptions } from '../../src/core/agent/agent';
import { executionSummary, toolResultText } from '../../src/core/agent/executionResult';
import { forgetToolRejections } from '../../src/core/agent/textProtocol';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { resolveEngineConfig, type SettingLayers } from '../../src/core/config/resolve';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { foreignItemText } from '../../src/core/providers/shared/history';
import type { ConversationItem, ProviderId } from '../../src/core/providers/shared/types';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { EXCEPTION, FOLLOW_UP_CODE, LONG_FAILING_CODE, assertHeadAndTail, expectedFollowUp, expectedStdout } from '../support/longOutput';
import { messagesOf, toolsOf, unquoteBlock } from '../support/textWire';
import { chatTurnsWith, DEFAULT_MODELS, providerFor, resultsInRequest, startServerFor, wireAgent } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';
import { OBSERVATION } from '../../src/core/agent/textHistory';

type Json = Record<string, any>;

function item(outputs: CodeInterpreterCallItem['outputs'], extra: Partial<CodeInterpreterCallItem> = {}): CodeInterpreterCallItem {
  return { type: 'code_interpreter_call', id: 'exec_1', status: 'completed', code: '', runtime: 'local', outputs, exit_code: 0, value: null, ...extra };
}

/** The text each part of a summary holds, as the model reads it. */
function contentChars(s: Json): number {
  const value = s.value === undefined ? 0 : typeof s.value === 'string' ? s.value.length : JSON.stringify(s.value).length;
  const displays = (s.displays ?? []).filter((d: string) => !/more displays? shown to the user/.test(d)).reduce((n: number, d: string) => n + d.length, 0);
  return (s.stdout?.length ?? 0) + (s.stderr?.length ?? 0) + (s.error?.message?.length ?? 0) + (s.error?.traceback?.length ?? 0) + displays + value;
}

/** The i-th function result a request carried, as the text the agent stored (Gemini wraps a failed one as {error}). */
function resultText(provider: ProviderId, body: Json, i: number): string {
  const raw = resultsInRequest(provider, body)[i];
  if (provider !== 'gemini') return raw;
  const wrapped = JSON.parse(raw) as { error?: unknown };
  return typeof wrapped.error === 'string' ? wrapped.error : raw;
}

/** The description of the code tool a request declared. */
function codeToolDescription(provider: ProviderId, body: Json): string {
  const tools = toolsOf(provider, body) as Json[];
  if (provider === 'gemini') return tools.flatMap((t) => t.functionDeclarations ?? []).find((f: Json) => f.name === 'execute_tool_code').description;
  if (provider === 'openai-compatible') return tools.find((t) => t.function?.name === 'execute_tool_code')!.function.description;
  return tools.find((t) => t.name === 'execute_tool_code')!.description;
}

describe('output budget: head and tail, one exact count', () => {
  it('headTail keeps the beginning and the end at line ends, and counts exactly what it left out', () => {
    const full = Array.from({ length: 2000 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const cut = headTail(full, 1000, (o) => `[${o.chars}|${o.lines}]\n`);
    const m = /\[(\d+)\|(\d+)\]\n/.exec(cut)!;
    const head = cut.slice(0, m.index);
    const tail = cut.slice(m.index + m[0].length);
    assert.ok(full.startsWith(head) && full.endsWith(tail) && head.endsWith('\n'));
    const missing = full.slice(head.length, full.length - tail.length);
    assert.equal(Number(m[1]), missing.length);
    assert.equal(Number(m[2]), missing.split('\n').length - 1);
    assert.ok(cut.length <= 1000 && tail.length > head.length, `${head.length} + ${tail.length}`);
    assert.equal(
      headTail('short', 1000, () => 'never'),
      'short',
    );
  });

  it('headTail cuts a single long line mid-line without splitting a surrogate pair', () => {
    const full = '😀'.repeat(5000);
    const cut = headTail(full, 500, (o) => `<${omittedText(o)}>\n`);
    const m = /<([\d,]+) characters \((\d+) lines\)>/.exec(cut)!;
    assert.equal(m[2], '0');
    const [head, tail] = cut.split(/\n<[^>]*>\n/);
    assert.ok(cut.length <= 500, `${cut.length}`);
    assert.equal(head.length + tail.length + Number(m[1].replace(/,/g, '')), full.length);
    assert.ok(head.length % 2 === 0 && tail.length % 2 === 0, 'whole emoji only');
    assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(cut), 'no lone surrogate');
  });

  it('shareBudget gives small parts all they need and splits the rest evenly, never over the budget', () => {
    assert.deepEqual(shareBudget([60_000, 300, 50, 0], 20_000), [19_650, 300, 50, 0]);
    assert.deepEqual(shareBudget([60_000, 30_000, 200], 20_000), [9_900, 9_900, 200]);
    assert.deepEqual(shareBudget([10, 20], 20_000), [10, 20]);
    const many = shareBudget([5000, 9000, 100, 7000, 12000, 3], 10_000);
    assert.ok(many.reduce((a, b) => a + b, 0) <= 10_000);
  });

  it("stdout, stderr, the traceback, the displays' text and the value share the one budget; the exception and the last lines survive", () => {
    const displays = Array.from({ length: 30 }, (_, i) => ({ type: 'display' as const, data: { 'text/plain': `table ${i}\n` + 'cell '.repeat(800) } }));
    const traceback =
      'Traceback (most recent call last):\n' + '  File "<cell-1>", line 9, in f\n    f()\n'.repeat(2000) + 'RecursionError: maximum recursion depth exceeded\n';
    const failed = item(
      [
        { type: 'logs', logs: 'o'.repeat(30_000) + '\nLAST STDOUT LINE\n' },
        ...displays,
        { type: 'logs', logs: 'e'.repeat(30_000) + '\nLAST STDERR LINE\n', stream: 'stderr' },
      ],
      { status: 'failed', error: { type: 'RecursionError', message: 'maximum recursion depth exceeded ' + 'm'.repeat(10_000), traceback } },
    );
    for (const budget of [20_000, 5000]) {
      const s = JSON.parse(executionSummary(failed, { execution: 4, outputChars: budget, kept: true }));
      assert.ok(contentChars(s) <= budget, `${contentChars(s)} characters of content, budget ${budget}`);
      assert.match(s.stdout, /of stdout left out here; output_of\(4\) in a later run returns the whole text\]…\n/);
      assert.match(s.stdout, /LAST STDOUT LINE\n$/);
      assert.match(s.stderr, /of stderr left out here; output_of\(4, "stderr"\) in a later run/);
      assert.match(s.stderr, /LAST STDERR LINE\n$/);
      assert.equal(s.error.type, 'RecursionError');
      assert.match(s.error.message, /^maximum recursion depth exceeded m+/);
      assert.match(s.error.traceback, /^Traceback \(most recent call last\):\n/);
      assert.match(s.error.traceback, /RecursionError: maximum recursion depth exceeded\n$/);
      assert.match(s.displays.at(-1), /^\[\d+ more displays shown to the user, not listed here\]$/);
    }
    const big = JSON.parse(executionSummary(item([], { value: { rows: Array.from({ length: 5000 }, (_, i) => ({ i })) } }), { outputChars: 20_000 }));
    assert.equal(big.value_truncated, true);
    assert.ok(big.value.length <= 20_000);
    assert.match(big.value, /^\{"rows":\[\{"i":0\}/);
    assert.match(big.value, /of the returned value \(JSON\) left out here; return something smaller, or print the parts you need\]…\n/);
    assert.match(big.value, /\{"i":4999\}\]\}$/);
    // Without a session that keeps outputs, the note says so instead of pointing at output_of.
    const once = JSON.parse(executionSummary(item([{ type: 'logs', logs: 'z\n'.repeat(20_000) }]), { execution: 1 }));
    assert.match(once.stdout, /left out here; runs here do not keep it: print less, or narrow it down in code\]/);
  });

  it("a hosted sandbox's output replayed as text to another provider keeps its beginning and end within the budget", () => {
    const full = expectedStdout() + 'Traceback (most recent call last):\n  File "<stdin>", line 4\nValueError: the data ran out\n';
    const text = foreignItemText(item([{ type: 'logs', logs: full }], { runtime: 'openai', status: 'failed', exit_code: 1 }))!;
    // The budget, and the gutter of each quoted line.
    assert.ok(text.length <= 20_000 + 200 + 2 * text.split('\n').length, `${text.length}`);
    assert.match(text, /^\[Code I ran in the openai sandbox\]/);
    assert.match(text, /…\[codeact: [\d,]+ characters \([\d,]+ lines\) of the output left out here; run the code again to see it\]…\n/);
    assert.ok(text.endsWith('\n│ ValueError: the data ran out'));
  });

  it("a directly exposed tool's result goes through the same budget, with the same note", () => {
    const text = toolResultText(
      'list_orders',
      Array.from({ length: 4000 }, (_, i) => ({ id: i, status: 'open' })),
      3000,
    );
    assert.ok(text.length <= 3000, `${text.length}`);
    assert.match(text, /^\[\{"id":0,"status":"open"\}/);
    assert.match(text, /…\[codeact: [\d,]+ characters \(0 lines\) of the result of list_orders \(JSON\) left out here; ask the tool for less\]…\n/);
    assert.match(text, /\{"id":3999,"status":"open"\}\]$/);
  });
});

describe('output budget end to end: a 60,000-character output that ends in an exception (local guest, bubblewrap)', function () {
  this.timeout(120_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
  const full = expectedStdout();
  let server: WireServer | undefined;
  after(() => runtime.dispose());
  afterEach(async () => {
    forgetToolRejections();
    await server?.close();
    server = undefined;
  });

  const agentFor = (provider: ProviderId, s: WireServer, extra: Partial<AgentOptions> = {}) =>
    wireAgent(provider, s, { runtime, sessionId: `conv-budget-${provider}-${extra.protocol ?? 'tools'}`, ...extra });

  function execs(items: ConversationItem[]): FunctionCallOutputItem[] {
    return items.filter((i): i is FunctionCallOutputItem & ConversationItem => i.type === 'function_call_output');
  }

  for (const provider of ['openai', 'openai-compatible', 'anthropic', 'gemini'] as ProviderId[]) {
    it(`${provider}, function calling: the exception and the tail reach the model, the count is exact, and output_of(1) reads the whole text`, async () => {
      server = await startServerFor(provider);
      server.push(
        turn().call('execute_tool_code', { code: LONG_FAILING_CODE }),
        turn().call('execute_tool_code', { code: FOLLOW_UP_CODE }),
        turn().text('Done.'),
      );
      const ran: CodeInterpreterCallItem[] = [];
      const agent = await agentFor(provider, server, {
        onEvent: (e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' && ran.push(e.item),
      });
      const result = await agent.run([], 'Load the data and tell me what went wrong.');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      assert.equal(server.turns.length, 3);
      assert.deepEqual(
        ran.map((i) => i.sandbox?.kind),
        ['bubblewrap', 'bubblewrap'],
      );
      // The description states the budget and how to read the rest.
      const description = codeToolDescription(provider, server.turns[0].body);
      assert.match(description, /at most 20,000 characters of output/);
      assert.match(description, /A later run reads a run's whole output with `output_of\(n\)`/);
      // What the SDK sent back: the first result, cut once, with the exception.
      const first = resultText(provider, server.turns[1].body, 0);
      const summary = JSON.parse(first);
      assert.equal(summary.status, 'failed');
      assert.equal(summary.execution, 1);
      assert.equal(summary.error.type, 'ValueError');
      assert.equal(summary.error.message, 'the data ran out');
      assert.ok(summary.error.traceback.endsWith(`${EXCEPTION}\n`), summary.error.traceback);
      assert.equal(assertHeadAndTail(summary.stdout, full, 20_000), 'output_of(1) in a later run returns the whole text');
      // The same text as the summary the agent stored (one cut, one place).
      assert.equal(first, execs(result.items)[0].output);
      // The follow-up read the whole output from the session.
      const second = JSON.parse(resultText(provider, server.turns[2].body, 1));
      assert.equal(second.status, 'completed', JSON.stringify(second.error));
      assert.deepEqual(second.value, expectedFollowUp());
    });
  }

  for (const provider of ['openai-compatible', 'anthropic'] as ProviderId[]) {
    it(`${provider}, text protocol: the observation carries the same cut text, the exception and the traceback, and the follow-up reads the whole text`, async () => {
      server = await startServerFor(provider, 'ollama');
      const block = (code: string) => `Running it.\n\n\`\`\`python\n${code}\n\`\`\``;
      server.push(turn().text(block(LONG_FAILING_CODE)), turn().text(block(FOLLOW_UP_CODE)), turn().text('Done.'));
      const agent = await agentFor(provider, server, { protocol: 'text' });
      const result = await agent.run([], 'Load the data and tell me what went wrong.');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      assert.equal(server.turns.length, 3);
      const observation = messagesOf(provider, server.turns[1].body).at(-1)!;
      assert.equal(observation.role, 'user');
      assert.ok(observation.text.startsWith(`${OBSERVATION.failed('ValueError')}\n│ the data ran out\n${OBSERVATION.printed}\n`), observation.text);
      const printed = /\nPrinted output:\n([\s\S]*)\nTraceback:\n/.exec(observation.text)![1];
      assert.equal(assertHeadAndTail(`${unquoteBlock(printed)}\n`, full, 20_000), 'output_of(1) in a later run returns the whole text');
      assert.match(observation.text, new RegExp(`\\nTraceback:\\n│ Traceback \\(most recent call last\\):[\\s\\S]*${EXCEPTION}\\nFix the code`));
      // One cut: the observation's printed output is the stored summary's stdout, character for character,
      // and what function calling sends for the same output.
      const stored = JSON.parse(execs(result.items)[0].output);
      assert.equal(printed, quoteBlock(stored.stdout));
      const error = { type: 'ValueError', message: stored.error.message, traceback: stored.error.traceback };
      const fc = JSON.parse(executionSummary(item([{ type: 'logs', logs: full }], { status: 'failed', error }), { execution: 1, kept: true }));
      assert.equal(printed, quoteBlock(fc.stdout));
      // The follow-up's observation: the whole text was read back.
      const next = messagesOf(provider, server.turns[2].body).at(-1)!.text;
      const value = /\nReturned value: (.*)$/m.exec(next)![1];
      assert.deepEqual(JSON.parse(value), expectedFollowUp());
      // The system prompt of the text protocol carries the tool's description, budget included.
      assert.match(JSON.stringify(server.turns[0].body), /at most 20,000 characters of output/);
    });
  }

  it("a direct tool's result reaches the model within the budget, with the same note", async () => {
    server = await startServerFor('anthropic');
    const tool: ManagedTool = {
      name: 'list_orders',
      description: 'All open orders.',
      inputSchema: { type: 'object', properties: {} },
      approval: 'auto',
      expose: 'direct',
      source: 'test',
      invoke: async () => Array.from({ length: 4000 }, (_, i) => ({ id: i, status: 'open' })),
    };
    server.push(turn().call('list_orders', {}), turn().text('Many.'));
    const agent = new AgentLoop({
      provider: await providerFor('anthropic', server),
      model: DEFAULT_MODELS.anthropic,
      runtime,
      gateway: new ToolGateway([tool]),
      outputChars: 5000,
    });
    const result = await agent.run([], 'How many orders are open?');
    assert.equal(result.status, 'completed', JSON.stringify(result.error));
    const [sent] = resultsInRequest('anthropic', server.turns[1].body);
    assert.ok(sent.length <= 5000, `${sent.length}`);
    assert.match(sent, /^\[\{"id":0,"status":"open"\}/);
    assert.match(sent, /…\[codeact: [\d,]+ characters \(0 lines\) of the result of list_orders \(JSON\) left out here; ask the tool for less\]…\n/);
    assert.match(sent, /\{"id":3999,"status":"open"\}\]$/);
  });

  describe('the setting, through the chat turn both hosts run', () => {
    let dir: string;
    before(() => (dir = mkdtempSync(path.join(tmpdir(), 'codeact-budget-'))));
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('codeact.outputs.modelChars sets the budget and the description; after --continue the next turn reads the whole text', async () => {
      server = await startServerFor('openai-compatible');
      const layers: Record<string, SettingLayers> = {
        provider: { user: 'openai-compatible' },
        model: { user: 'qwen2.5-coder:7b' },
        baseURL: { user: server.url },
        'outputs.modelChars': { workspace: 6000 },
      };
      const config = resolveEngineConfig((k) => layers[k], { trusted: false }).config;
      assert.equal(config.outputModelChars, 6000);
      const store = new TranscriptStore(dir);
      const convo = store.create({ title: 'long output' });
      const turnIn = chatTurnsWith(config, runtime);
      const chat = (prompt: string, conversation = convo) => turnIn(conversation, prompt);
      server.push(turn().call('execute_tool_code', { code: LONG_FAILING_CODE }), turn().text('It failed at the end.'));
      const first = await chat('Load the data.');
      assert.equal(first.result?.status, 'completed', JSON.stringify(first.error));
      assert.match(codeToolDescription('openai-compatible', server.turns[0].body), /at most 6,000 characters of output/);
      const sent = JSON.parse(resultsInRequest('openai-compatible', server.turns[1].body)[0]);
      assertHeadAndTail(sent.stdout, full, 6000);
      assert.equal(sent.error.type, 'ValueError');

      // Reopened, as `codeact chat --continue` does: the session is the same, and the next turn's run reads it.
      const reopened = store.open(convo.id);
      server.push(turn().call('execute_tool_code', { code: FOLLOW_UP_CODE }), turn().text('Read it.'));
      const second = await chat('Read the whole output back.', reopened);
      assert.equal(second.result?.status, 'completed', JSON.stringify(second.error));
      const results = resultsInRequest('openai-compatible', server.turns[3].body);
      // The earlier result is sent again exactly as stored; the new one read the whole text.
      assert.equal(results[0], resultsInRequest('openai-compatible', server.turns[1].body)[0]);
      const read = JSON.parse(results[1]);
      assert.equal(read.execution, 2);
      assert.deepEqual(read.value, expectedFollowUp());
    });
  });
});
