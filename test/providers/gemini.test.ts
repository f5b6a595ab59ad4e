/**
 * Gemini adapter against the loopback Gemini server (`data:` lines with CRLF).
 */
import assert from 'node:assert/strict';
import { logsOf } from '../../src/common/events';
import type { ConversationItem } from '../../src/core/providers/shared/types';
import { EXECUTE_TOOL_CODE, assertCodeItemOrder, providerFor, runTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

type Json = Record<string, any>;
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

describe('providers: Gemini', () => {
  let server: WireServer;
  beforeEach(async () => {
    server = await startServerFor('gemini');
  });
  afterEach(async () => {
    await server.close();
  });

  it('function call round trip: thoughtSignature echoed, functionResponse with the call id', async () => {
    const code = 'print(await call_tool("weather", city="Zürich"))';
    server.push(
      turn().text('Checking. ').call('execute_tool_code', { code }, { id: 'oqeiriep', signature: 'SIG/+==' }),
      turn().text('It is sunny in Zürich.', { chunkSize: 3 }),
    );
    const provider = await providerFor('gemini', server);
    const history: ConversationItem[] = [userMessage('Weather in Zürich?')];
    const t1 = await runTurn(provider, { history, tools: [EXECUTE_TOOL_CODE], system: 'be brief' });
    assert.deepEqual(
      t1.result.functionCalls.map((c) => [c.call_id, c.name, JSON.parse(c.arguments)]),
      [['oqeiriep', 'execute_tool_code', { code }]],
    );
    assert.equal(t1.result.stopReason, 'tool_use');
    assert.deepEqual(
      t1.rec.forItem(t1.result.functionCalls[0].item_id).map((e) => e.type),
      ['response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done'],
    );
    const req0 = server.turns[0];
    assert.equal(req0.query.alt, 'sse');
    assert.equal(req0.path, '/v1beta/models/gemini-3-flash-preview:streamGenerateContent');
    assert.equal(req0.headers['x-goog-api-key'], 'test-key-wire');
    assert.deepEqual(req0.body.systemInstruction, { parts: [{ text: 'be brief' }], role: 'user' });
    assert.deepEqual(req0.body.tools, [
      { functionDeclarations: [{ name: 'execute_tool_code', description: EXECUTE_TOOL_CODE.description, parametersJsonSchema: EXECUTE_TOOL_CODE.parameters }] },
    ]);

    const t2 = await runTurn(provider, {
      history: [...history, ...t1.result.items, { type: 'function_call_output', call_id: 'oqeiriep', output: 'sunny' }],
      tools: [EXECUTE_TOOL_CODE],
    });
    assert.equal(t2.rec.text(), 'It is sunny in Zürich.');
    assert.equal(t2.result.stopReason, 'end_turn');
    const contents: Json[] = server.turns[1].body.contents;
    assert.deepEqual(contents, [
      { role: 'user', parts: [{ text: 'Weather in Zürich?' }] },
      {
        role: 'model',
        parts: [
          { text: 'Checking. ' },
          { functionCall: { name: 'execute_tool_code', args: { code }, id: 'oqeiriep' }, thoughtSignature: 'SIG/+==' },
          { text: '', thoughtSignature: 'EoECCv4BAQw51segFinal==' },
        ],
      },
      { role: 'user', parts: [{ functionResponse: { name: 'execute_tool_code', response: { output: 'sunny' }, id: 'oqeiriep' } }] },
    ]);
  });

  it('codeExecution: failed outcome maps to status/exit code and the traceback; images attach to the item', async () => {
    const tb = 'Traceback (most recent call last):\n  File "<string>", line 2, in <module>\nZeroDivisionError: division by zero\n';
    server.push(
      turn()
        .code({ code: 'import matplotlib\nplt.plot([1])', stdout: '', images: [PNG], id: 'c1' })
        .code({ code: 'x = 1\n1/0', stderr: tb, exitCode: 1, id: 'c2' })
        .code({ code: 'while True: pass', outcome: 'OUTCOME_DEADLINE_EXCEEDED' })
        .text('Done.'),
    );
    const provider = await providerFor('gemini', server);
    const { rec, result } = await runTurn(provider, { history: [userMessage('go')], hosted: { enabled: true } });
    assert.deepEqual(server.turns[0].body.tools, [{ codeExecution: {} }]);
    const items = rec.codeItems();
    assert.equal(items.length, 3);
    for (const i of items) assertCodeItemOrder(rec, i.id);
    assert.deepEqual([items[0].status, items[0].exit_code], ['completed', 0]);
    assert.deepEqual(items[0].outputs, [{ type: 'image', url: `data:image/png;base64,${PNG}` }]);
    assert.deepEqual([items[1].status, items[1].exit_code], ['failed', 1]);
    assert.equal(logsOf(items[1]), tb);
    assert.deepEqual({ ...items[1].error }, { type: 'ZeroDivisionError', message: 'division by zero', traceback: tb, line: 2 });
    assert.deepEqual([items[2].status, items[2].exit_code, items[2].error?.type], ['failed', null, 'Timeout']);
    assert.ok(items[2].id, 'an id is generated when Gemini gives none');
    assert.equal(rec.text(), 'Done.');
    assert.equal(result.items.length, 4);
  });

  it('thought parts are thinking text, never the answer', async () => {
    server.push(turn().thinking('Let me think about it.', { chunkSize: 6 }).text('42', { signature: 'TXTSIG' }));
    const provider = await providerFor('gemini', server);
    const { rec, result } = await runTurn(provider, { history: [userMessage('answer?')] });
    assert.equal(rec.text(), '42');
    assert.equal(rec.text({ thinking: true }), 'Let me think about it.');
    assert.ok(rec.ofType('response.reasoning_text.done').some((e) => e.text === 'Let me think about it.'));
    rec.assertNoReasoningInOutputText();
    assert.deepEqual(
      result.items.map((i) => i.type === 'message' && i.thinking === true),
      [true, false],
    );
    // Replay: thought summaries are not sent back; signed text is.
    server.push(turn().text('ok'));
    await runTurn(provider, { history: [userMessage('answer?'), ...result.items, userMessage('and?')] });
    assert.deepEqual(server.turns[1].body.contents[1], {
      role: 'model',
      parts: [
        { text: '42', thoughtSignature: 'TXTSIG' },
        { text: '', thoughtSignature: 'EoECCv4BAQw51segFinal==' },
      ],
    });
  });

  it('a finishReason STOP mid-stream does not end the turn; the end of the body does', async () => {
    server.push(turn().text('First part, ').text('second part.').call('lookup', { q: 1 }).with({ midStreamStop: true }));
    const provider = await providerFor('gemini', server);
    const { rec, result } = await runTurn(provider, {
      history: [userMessage('x')],
      tools: [{ name: 'lookup', description: 'd', parameters: { type: 'object' } }],
    });
    assert.equal(rec.text(), 'First part, second part.');
    assert.equal(result.functionCalls.length, 1);
    assert.equal(result.rawStopReason, 'STOP');
  });

  it('UTF-8 split across network chunks stays whole', async () => {
    const text = 'Ünïcödé — 日本語テキスト 🎉🎉 Ωmega';
    server.push(turn().text(text, { chunkSize: 5 }).with({ chunkBytes: 1 }));
    const provider = await providerFor('gemini', server);
    const { rec } = await runTurn(provider, { history: [userMessage('x')] });
    assert.equal(rec.text(), text);
  });

  it('a thought-phase execution repeated without `thought` (Gemini 2.5) is one item, not two', async () => {
    server.push(turn().code({ code: 'print(2+2)', stdout: '4\n', thought: true }).code({ code: 'print(2+2)', stdout: '4\n' }).text('4'));
    const provider = await providerFor('gemini', server);
    const { rec, result } = await runTurn(provider, { history: [userMessage('x')], hosted: { enabled: true } });
    assert.equal(rec.codeItems().length, 1);
    assert.equal(rec.ofType('response.code_interpreter_call.in_progress').length, 1);
    const item = result.items.find((i) => i.type === 'code_interpreter_call')!;
    // Both copies are kept for replay.
    assert.equal(item.replay?.parts.filter((p) => (p.data as Json).executableCode).length, 2);
  });
});
