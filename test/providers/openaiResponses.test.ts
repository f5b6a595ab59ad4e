/**
 * OpenAI Responses adapter against the loopback Responses server, with hand-written turns.
 */
import assert from 'node:assert/strict';
import { logsOf } from '../../src/common/events';
import type { ConversationItem } from '../../src/core/providers/shared/types';
import { EXECUTE_TOOL_CODE, assertCodeItemOrder, providerFor, runTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

type Json = Record<string, any>;
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

describe('providers: OpenAI Responses', () => {
  let server: WireServer;
  beforeEach(async () => {
    server = await startServerFor('openai');
  });
  afterEach(async () => {
    await server.close();
  });

  it('function tool round trip: execute_tool_code, then function_call_output in the next request', async () => {
    const code = 'rows = await call_tool("orders", status="open")\nprint(len(rows))\n';
    server.push(turn().text('Let me check.').call('execute_tool_code', { code }, { id: 'call_abc', chunkSize: 7 }), turn().text('There are 3 open orders.'));
    const provider = await providerFor('openai', server);
    const history: ConversationItem[] = [userMessage('How many open orders?')];
    const t1 = await runTurn(provider, { history, tools: [EXECUTE_TOOL_CODE], system: 'You orchestrate tools with code.' });

    assert.deepEqual(
      t1.result.functionCalls.map((c) => [c.call_id, c.name, JSON.parse(c.arguments)]),
      [['call_abc', 'execute_tool_code', { code }]],
    );
    assert.equal(t1.result.stopReason, 'tool_use');
    const fcId = t1.result.functionCalls[0].item_id;
    assert.deepEqual(
      t1.rec.forItem(fcId).map((e) => e.type),
      [
        'response.output_item.added',
        ...Array(Math.ceil(JSON.stringify({ code }).length / 7)).fill('response.function_call_arguments.delta'),
        'response.function_call_arguments.done',
        'response.output_item.done',
      ],
    );
    assert.equal(t1.rec.text(), 'Let me check.');

    const body0 = server.turns[0].body;
    assert.equal(body0.instructions, 'You orchestrate tools with code.');
    assert.equal(body0.stream, true);
    assert.deepEqual(body0.tools, [
      { type: 'function', name: 'execute_tool_code', description: EXECUTE_TOOL_CODE.description, parameters: EXECUTE_TOOL_CODE.parameters, strict: false },
    ]);
    assert.equal(body0.include, undefined);
    assert.equal(server.turns[0].headers.authorization, 'Bearer test-key-wire');

    const t2 = await runTurn(provider, {
      history: [...history, ...t1.result.items, { type: 'function_call_output', call_id: 'call_abc', output: '{"value": 3}' }],
      tools: [EXECUTE_TOOL_CODE],
    });
    assert.equal(t2.rec.text(), 'There are 3 open orders.');
    assert.equal(t2.result.stopReason, 'end_turn');
    assert.deepEqual(t2.result.functionCalls, []);
    const input: Json[] = server.turns[1].body.input;
    assert.deepEqual(
      input.map((x) => x.type ?? x.role),
      ['user', 'message', 'function_call', 'function_call_output'],
    );
    // The provider's own item goes back (its fc_ id, not ours).
    const rawId = (t1.result.items.find((i) => i.type === 'function_call')!.replay!.parts[0].data as Json).id;
    assert.ok(rawId !== fcId && /^fc_/.test(rawId));
    assert.deepEqual(input[2], { id: rawId, type: 'function_call', arguments: JSON.stringify({ code }), call_id: 'call_abc', name: 'execute_tool_code' });
    assert.deepEqual(input[3], { type: 'function_call_output', call_id: 'call_abc', output: '{"value": 3}' });
    // Usage per turn, from response.completed.
    assert.deepEqual(t2.result.usage, { input_tokens: 100, output_tokens: 20, total_tokens: 120 });
    assert.deepEqual(t2.rec.events[t2.rec.events.length - 1], {
      type: 'response.completed',
      response: { id: t2.result.responseId, usage: t2.result.usage, container_id: null },
    });
  });

  it('keeps non-ASCII text whole across byte boundaries and delta boundaries', async () => {
    const text = 'Grüße, naïve café — 東京 😀👍🏽 done';
    server.push(turn().text(text, { chunkSize: 1 }).with({ chunkBytes: 3 }));
    const provider = await providerFor('openai', server);
    const { rec } = await runTurn(provider, { history: [userMessage('hi')] });
    assert.equal(rec.text(), text);
    assert.equal(rec.ofType('response.output_text.done')[0].text, text);
  });

  it('hosted code_interpreter: container auto with memory_limit and file_ids, include, logs, images, files; container reused', async () => {
    const code = 'import matplotlib\nprint("saved")';
    server.push(
      turn()
        .code({ code, stdout: 'saved\n', images: [PNG], files: [{ id: 'cfile_1', mime_type: 'text/csv' }], chunkSize: 3 })
        .text('Here is the plot: [data.csv](sandbox:/mnt/data/data.csv)', {
          citations: [{ file_id: 'cfile_1', filename: 'data.csv', start_index: 18, end_index: 55 }],
        })
        .with({ container: 'cntr_abc123' }),
      turn().code({ code: 'print(1)', stdout: '1\n' }),
    );
    const provider = await providerFor('openai', server);
    const t1 = await runTurn(provider, { history: [userMessage('plot it')], hosted: { enabled: true, memoryLimit: '4g', fileIds: ['file-XYZ'] } });
    const body = server.turns[0].body;
    assert.deepEqual(body.tools, [{ type: 'code_interpreter', container: { type: 'auto', memory_limit: '4g', file_ids: ['file-XYZ'] } }]);
    assert.deepEqual(body.include, ['code_interpreter_call.outputs']);

    const [item] = t1.rec.codeItems();
    assert.equal(assertCodeItemOrder(t1.rec, item.id), code);
    assert.ok(item.id.startsWith('exec_'), "our id; the provider's ci_ id stays in the replay data");
    assert.equal(item.runtime, 'openai');
    assert.equal(item.container_id, 'cntr_abc123');
    assert.equal(logsOf(item), 'saved\n');
    assert.deepEqual(
      item.outputs.filter((o) => o.type === 'image'),
      [{ type: 'image', url: `data:image/png;base64,${PNG}` }],
    );
    assert.deepEqual(
      item.outputs.filter((o) => o.type === 'file'),
      [{ type: 'file', file_id: 'cfile_1', container_id: 'cntr_abc123', mime_type: 'text/csv' }],
    );
    assert.deepEqual(t1.result.files, [{ type: 'file', file_id: 'cfile_1', container_id: 'cntr_abc123', mime_type: 'text/csv', filename: 'data.csv' }]);
    assert.equal(t1.result.containerId, 'cntr_abc123');
    assert.equal(t1.rec.ofType('response.completed')[0].response.container_id, 'cntr_abc123');
    const msg = t1.rec.ofType('response.output_item.done').find((e) => e.item.type === 'message')!.item as { annotations?: Json[] };
    assert.equal(msg.annotations?.[0].type, 'container_file_citation');

    // Next turn: the same container, by id.
    const t2 = await runTurn(provider, {
      history: [userMessage('plot it'), ...t1.result.items, userMessage('again')],
      hosted: { enabled: true, containerId: t1.result.containerId },
    });
    assert.deepEqual(server.turns[1].body.tools, [{ type: 'code_interpreter', container: 'cntr_abc123' }]);
    assert.equal(t2.rec.codeItems()[0].container_id, 'cntr_abc123');
    // The hosted item from turn 1 goes back as the provider's own item.
    const replayed = server.turns[1].body.input.find((x: Json) => x.type === 'code_interpreter_call');
    assert.ok(/^ci_/.test(replayed.id));
    assert.equal(replayed.code, code);
  });

  it('downloads a container file through the containers API', async () => {
    server.files.set('cfile_9', { bytes: Buffer.from('a,b\n1,2\n'), contentType: 'text/csv' });
    const provider = await providerFor('openai', server);
    const got = await provider.downloadFile!({ type: 'file', file_id: 'cfile_9', container_id: 'cntr_1', filename: 'x.csv' });
    assert.equal(Buffer.from(got.bytes).toString(), 'a,b\n1,2\n');
    assert.equal(got.filename, 'x.csv');
    assert.equal(got.mimeType, 'text/csv');
    assert.equal(server.requests[0].path, '/v1/containers/cntr_1/files/cfile_9/content');
  });

  it('reasoning summaries are thinking text, never the answer', async () => {
    server.push(turn().thinking('First I think.', { chunkSize: 5 }).text('The answer.'));
    const provider = await providerFor('openai', server);
    const { rec, result } = await runTurn(provider, { history: [userMessage('q')] });
    assert.equal(rec.text(), 'The answer.');
    assert.equal(rec.text({ thinking: true }), 'First I think.');
    assert.ok(rec.ofType('response.reasoning_text.done').some((e) => e.text === 'First I think.'));
    rec.assertNoReasoningInOutputText();
    const thinkingItem = result.items.find((i) => i.type === 'message' && i.thinking);
    assert.equal(thinkingItem?.replay?.parts[0] && (thinkingItem.replay.parts[0].data as Json).type, 'reasoning');
  });

  it('an incomplete response (max_output_tokens) stops with max_tokens', async () => {
    server.push(turn().text('Partial').with({ stop: 'max_output_tokens' }));
    const provider = await providerFor('openai', server);
    const { result } = await runTurn(provider, { history: [userMessage('q')], maxOutputTokens: 5 });
    assert.equal(result.stopReason, 'max_tokens');
    assert.equal(server.turns[0].body.max_output_tokens, 5);
  });
});
