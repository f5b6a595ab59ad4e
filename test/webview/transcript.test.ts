import assert from 'node:assert/strict';
import {
  OUTPUT_TAIL_MAX_LINES,
  appendOutput,
  applyEvent,
  buildTranscript,
  createTranscript,
  execKey,
  isBusy,
  outputText,
  summarize,
  tailSlice,
  type ApprovalView,
  type ExecView,
  type FunctionView,
  type MessageView,
  type OutputTail,
} from '../../src/common/transcript';
import { DEMO_ANSWER, DEMO_CODE, demoTurn, ev } from './support/fixtures';

const exec = (m: ReturnType<typeof createTranscript>, id = 'ci_1') => m.items[execKey(id)] as ExecView;

describe('transcript reducer', () => {
  it('builds turns, messages, an execution card with tools, output, value and usage from a full turn', () => {
    const m = buildTranscript(demoTurn());
    assert.equal(m.turns.length, 1);
    const turn = m.turns[0];
    assert.equal(turn.prompt, 'Which of ACME’s open orders are late?');
    assert.equal(turn.status, 'completed');
    assert.equal(turn.model, 'gpt-5-mini');
    assert.equal(turn.durationMs, 6400);
    assert.deepEqual(turn.usage, { input_tokens: 1234, output_tokens: 340, total_tokens: 1574, cached_tokens: 0, cost_usd: 0.0009885, unpriced: 0 });
    assert.deepEqual(turn.itemKeys, ['m:msg_0', 'x:ci_1', 'm:msg_1']);

    const first = m.items['m:msg_0'] as MessageView;
    assert.equal(first.text, 'Let me check the open orders with the order tools.');
    assert.equal(first.done, true);

    const x = exec(m);
    assert.equal(x.status, 'done');
    assert.equal(x.code, DEMO_CODE);
    assert.equal(x.codeDone, true);
    assert.equal(x.runtime, 'local');
    assert.deepEqual(x.sandbox, { kind: 'bubblewrap', network: false });
    assert.equal(x.durationMs, 1830);
    assert.deepEqual(
      x.tools.map((c) => [c.name, c.status, c.durationMs]),
      [
        ['list_orders', 'ok', 182],
        ['get_order', 'ok', 95],
        ['get_order', 'error', 1203],
        ['get_order', 'ok', 88],
      ],
    );
    assert.equal(x.tools[2].error, 'HTTP 503 from orders.internal: service unavailable');
    assert.deepEqual(x.tools[0].arguments, { customer: 'ACME', status: 'open' });
    // Live output was streamed, so the final item's logs are not added a second time.
    assert.equal(outputText(x.output, 'stdout'), '\x1b[1mFound 3 open orders\x1b[0m\n\x1b[33mlate\x1b[0m  A-1001  +4d\n\x1b[33mlate\x1b[0m  A-1003  +1d\n');
    assert.equal(outputText(x.output, 'stderr'), 'warning: A-1002 unavailable, retried\n');
    assert.deepEqual(
      x.output.chunks.map((c) => c.stream),
      ['stdout', 'stderr', 'stdout'],
    );
    assert.equal(x.images.length, 1);
    assert.equal(x.hasValue, true);
    assert.deepEqual((x.value as { checked: number }).checked, 3);

    assert.equal((m.items['m:msg_1'] as MessageView).text, DEMO_ANSWER);
    assert.match(summarize(m), /> Which of ACME/);
  });

  it('reports the items and turns each event changed, with added flags', () => {
    const m = createTranscript();
    assert.deepEqual(applyEvent(m, ev.turn('t1', 'hi')), [{ kind: 'turn', id: 't1', added: true }]);
    assert.deepEqual(applyEvent(m, ev.text('a', 'x')), [{ kind: 'item', key: 'm:a', turnId: 't1', added: true }]);
    assert.deepEqual(applyEvent(m, ev.text('a', 'y')), [{ kind: 'item', key: 'm:a', turnId: 't1', added: false }]);
    assert.equal((m.items['m:a'] as MessageView).text, 'xy');
    const changes = applyEvent(m, ev.turnEnd('t1'));
    assert.deepEqual(changes, [
      { kind: 'item', key: 'm:a', turnId: 't1', added: false },
      { kind: 'turn', id: 't1', added: false },
    ]);
  });

  it('follows the execution status: writing, running, done; failed with the error; stopped on Stop', () => {
    const m = createTranscript();
    applyEvent(m, ev.turn('t', 'go'));
    applyEvent(m, ev.codeStart('c1', 'jupyter'));
    assert.equal(exec(m, 'c1').status, 'writing');
    assert.equal(exec(m, 'c1').runtime, 'jupyter');
    applyEvent(m, ev.code('c1', 'print(1/0)'));
    applyEvent(m, ev.interpreting('c1'));
    assert.equal(exec(m, 'c1').status, 'running');
    applyEvent(
      m,
      ev.itemDone({
        id: 'c1',
        status: 'failed',
        code: 'print(1/0)',
        runtime: 'jupyter',
        error: { type: 'ZeroDivisionError', message: 'division by zero', line: 1, traceback: 'Traceback…' },
      }),
    );
    const x = exec(m, 'c1');
    assert.equal(x.status, 'failed');
    assert.equal(x.error?.type, 'ZeroDivisionError');
    assert.equal(x.error?.line, 1);

    applyEvent(m, ev.codeStart('c2'));
    applyEvent(m, ev.code('c2', 'while True: pass'));
    applyEvent(m, ev.interpreting('c2'));
    applyEvent(m, ev.toolStart('c2', 'k', 'slow_tool', {}));
    applyEvent(m, ev.approval('ap', 'tool', { item_id: 'c2', name: 'slow_tool', arguments: {} }));
    assert.equal(exec(m, 'c2').awaiting, 1);
    applyEvent(m, ev.turnEnd('t', 'stopped'));
    const y = exec(m, 'c2');
    assert.equal(y.status, 'stopped');
    assert.equal(y.tools[0].status, 'stopped');
    assert.equal(y.awaiting, 0);
    assert.equal((m.items['a:ap'] as ApprovalView).status, 'expired');
    assert.equal(m.turns[0].status, 'stopped');
  });

  it('a card closed as left running (a reload) runs again, takes the output it missed, and its real end replaces the earlier one', () => {
    const m = createTranscript();
    applyEvent(m, ev.turn('t', 'go'));
    applyEvent(m, ev.codeStart('c1'));
    applyEvent(m, ev.interpreting('c1'));
    applyEvent(m, ev.itemDone({ id: 'c1', status: 'failed', code: 'long()', error: { type: 'SessionHostError', message: 'left running' } }));
    applyEvent(m, ev.turnEnd('t', 'completed'));
    assert.equal(exec(m, 'c1').status, 'failed');
    applyEvent(m, {
      type: 'response.output_item.added',
      item: { type: 'code_interpreter_call', id: 'c1', status: 'interpreting', code: 'long()', runtime: 'local', outputs: [] },
    });
    assert.equal(exec(m, 'c1').status, 'running');
    assert.equal(exec(m, 'c1').error, undefined, 'its earlier end was not one');
    applyEvent(m, ev.out('c1', 'line 1\n'));
    applyEvent(m, ev.out('c1', 'line 2\n'));
    applyEvent(m, ev.itemDone({ id: 'c1', code: 'long()', value: 7, outputs: [{ type: 'logs', logs: 'line 1\nline 2\n' }] }));
    const x = exec(m, 'c1');
    assert.equal(x.status, 'done');
    assert.equal(x.error, undefined);
    assert.equal(x.value, 7);
    assert.equal(outputText(x.output, 'stdout'), 'line 1\nline 2\n', 'the live output, not doubled by the final logs');
    // Saved without the live part (the conversation reopened): the second end replaces the first.
    const saved = buildTranscript([
      ev.turn('t', 'go'),
      ev.itemDone({ id: 'c1', status: 'failed', code: 'long()', error: { type: 'SessionHostError', message: 'left running' } }),
      ev.turnEnd('t', 'completed'),
      ev.itemDone({ id: 'c1', code: 'long()', value: 7 }),
    ]);
    assert.deepEqual([exec(saved, 'c1').status, exec(saved, 'c1').error, exec(saved, 'c1').value], ['done', undefined, 7]);
  });

  it('adds the final item logs as output when nothing streamed live (hosted sandboxes)', () => {
    const m = createTranscript();
    applyEvent(m, ev.codeStart('h1', 'openai'));
    applyEvent(m, ev.codeDone('h1', 'print("hi")'));
    applyEvent(
      m,
      ev.itemDone({
        id: 'h1',
        runtime: 'openai',
        code: 'print("hi")',
        container_id: 'cntr_1',
        outputs: [
          { type: 'logs', logs: 'hi\n' },
          { type: 'logs', logs: 'oops\n', stream: 'stderr' },
        ],
      }),
    );
    const x = exec(m, 'h1');
    assert.equal(outputText(x.output, 'stdout'), 'hi\n');
    assert.equal(outputText(x.output, 'stderr'), 'oops\n');
    assert.equal(x.containerId, 'cntr_1');
    // An implicit turn was opened for events without a turn marker.
    assert.equal(m.turns.length, 1);
    assert.equal(m.turns[0].implicit, true);
  });

  it('renders an image once even if the final item is repeated', () => {
    const m = createTranscript();
    const done = ev.itemDone({ id: 'i', outputs: [{ type: 'image', url: 'data:image/png;base64,AAAA' }] });
    applyEvent(m, done);
    applyEvent(m, done);
    assert.equal(exec(m, 'i').images.length, 1);
  });

  it('keeps approvals with their decision, and counts them on the execution', () => {
    const m = createTranscript();
    applyEvent(m, ev.turn('t', 'refund'));
    applyEvent(m, ev.codeStart('c'));
    applyEvent(m, ev.approval('a1', 'tool', { item_id: 'c', name: 'refund_order', arguments: { order_id: 'A-1' } }));
    const a = m.items['a:a1'] as ApprovalView;
    assert.equal(a.status, 'pending');
    assert.equal(a.name, 'refund_order');
    assert.equal(exec(m, 'c').awaiting, 1);
    applyEvent(m, ev.approved('a1', 'allow_session'));
    assert.equal(a.status, 'resolved');
    assert.equal(a.decision, 'allow_session');
    assert.equal(exec(m, 'c').awaiting, 0);
    // A repeated resolution does not go negative.
    applyEvent(m, ev.approved('a1', 'allow_session'));
    assert.equal(exec(m, 'c').awaiting, 0);
    applyEvent(m, ev.approval('a2', 'code', { code: 'print(1)' }));
    assert.equal((m.items['a:a2'] as ApprovalView).approvalKind, 'code');
    assert.equal((m.items['a:a2'] as ApprovalView).code, 'print(1)');
  });

  it('shows direct function calls but not the code tools, and attaches their output', () => {
    const m = createTranscript();
    applyEvent(m, ev.turn('t', 'x'));
    applyEvent(m, { type: 'response.output_item.added', item: { type: 'function_call', id: 'fc_1', call_id: 'call_9', name: 'get_weather' } });
    applyEvent(m, { type: 'response.function_call_arguments.delta', item_id: 'fc_1', delta: '{"city":' });
    applyEvent(m, { type: 'response.function_call_arguments.delta', item_id: 'fc_1', delta: '"Oslo"}' });
    applyEvent(m, { type: 'response.output_item.done', item: { type: 'function_call_output', call_id: 'call_9', output: '{"temp":3}' } });
    // Keyed by our item id; this output (saved before outputs named it) finds its call by the provider's call id.
    const f = m.items['f:fc_1'] as FunctionView;
    assert.equal(f.arguments, '{"city":"Oslo"}');
    assert.equal(f.output, '{"temp":3}');
    assert.equal(f.status, 'completed');
    applyEvent(m, { type: 'response.output_item.added', item: { type: 'function_call', id: 'fc_2', call_id: 'call_10', name: 'execute_tool_code' } });
    applyEvent(m, { type: 'response.function_call_arguments.delta', item_id: 'fc_2', delta: '{"code":"' });
    assert.equal(m.items['f:fc_2'], undefined);
    assert.deepEqual(m.turns[0].itemKeys, ['f:fc_1']);
  });

  it('records errors and retries as items; an error ends an implicit turn', () => {
    const m = createTranscript();
    applyEvent(m, { type: 'codeact.retry', attempt: 2, delay_ms: 2000, status: 429, message: 'Rate limited (HTTP 429). Retrying in 2.0 s (attempt 3 of 4).' });
    applyEvent(m, ev.error('Invalid API key for OpenAI. Run "CodeAct: Set API Key…".', 'auth'));
    assert.equal(m.turns.length, 1);
    const [n, e] = m.turns[0].itemKeys.map((k) => m.items[k]);
    assert.equal(n.kind, 'notice');
    assert.match((n as { text: string }).text, /Rate limited \(HTTP 429\)\. Retrying in 2\.0 s \(attempt 3 of 4\)/);
    assert.equal(e.kind, 'error');
    assert.equal(m.turns[0].status, 'failed');
    assert.equal(isBusy(m), false);
  });

  it('sums usage over the model calls of a turn and is busy until the turn ends', () => {
    const m = createTranscript();
    applyEvent(m, ev.turn('t', 'x'));
    assert.equal(isBusy(m), true);
    applyEvent(m, ev.done('r1', 100, 10));
    applyEvent(m, ev.done('r2', 200, 20));
    assert.deepEqual(
      m.turns[0].usage,
      { input_tokens: 300, output_tokens: 30, total_tokens: 330, cached_tokens: 0, unpriced: 2 },
      'no provider, no price: the requests are counted as unpriced',
    );
    assert.equal(m.turns[0].responses, 2);
    assert.equal(m.turns[0].status, 'running');
    applyEvent(m, ev.turnEnd('t'));
    assert.equal(isBusy(m), false);
  });

  it('survives a JSON round trip (panel state) and keeps reducing', () => {
    const events = demoTurn();
    const half = Math.floor(events.length / 2);
    const m1 = buildTranscript(events.slice(0, half));
    const m2 = JSON.parse(JSON.stringify(m1));
    for (const e of events.slice(half)) applyEvent(m2, e);
    const full = buildTranscript(events);
    const plain = (v: unknown) => JSON.parse(JSON.stringify(v));
    assert.deepEqual(plain(m2), plain(full));
  });

  it('ignores unknown event types', () => {
    const m = createTranscript();
    assert.deepEqual(applyEvent(m, { type: 'codeact.future.thing' } as never), []);
    assert.equal(m.turns.length, 0);
  });
});

describe('output tail', () => {
  const empty = (): OutputTail => ({ chunks: [], chars: 0, lines: 0, totalChars: 0, totalLines: 0 });

  it('keeps at most the line cap, dropping whole lines from the front, and counts everything', () => {
    const t = empty();
    for (let i = 0; i < 5000; i++) appendOutput(t, i % 10 === 0 ? 'stderr' : 'stdout', `line ${i}\n`);
    assert.equal(t.totalLines, 5000);
    assert.equal(t.lines, OUTPUT_TAIL_MAX_LINES);
    const text = t.chunks.map((c) => c.text).join('');
    assert.equal(text.split('\n').length - 1, OUTPUT_TAIL_MAX_LINES);
    assert.ok(text.startsWith(`line ${5000 - OUTPUT_TAIL_MAX_LINES}\n`));
    assert.ok(text.endsWith('line 4999\n'));
    assert.equal(t.chars, text.length);
  });

  it('cuts inside one huge chunk at a line boundary and by characters', () => {
    const t = empty();
    appendOutput(t, 'stdout', 'x'.repeat(100) + '\n' + 'y'.repeat(50) + '\n', 10, 60);
    assert.equal(t.chunks.map((c) => c.text).join(''), 'y'.repeat(50) + '\n');
    assert.equal(t.totalChars, 152);
    assert.equal(t.lines, 1);
  });

  it('tailSlice returns the last n characters across chunks and streams', () => {
    const t = empty();
    appendOutput(t, 'stdout', 'abc');
    appendOutput(t, 'stderr', 'DEF');
    appendOutput(t, 'stdout', 'gh');
    assert.deepEqual(
      tailSlice(t, 4).map((c) => [c.stream, c.text]),
      [
        ['stderr', 'EF'],
        ['stdout', 'gh'],
      ],
    );
  });
});
