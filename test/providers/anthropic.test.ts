/**
 * Anthropic Messages adapter against the loopback Anthropic server: client tools, thinking, and hosted
 * code execution in every tool version (partial-JSON code deltas unescaped as they stream).
 */
import assert from 'node:assert/strict';
import { logsOf, type TextEditorItem } from '../../src/common/events';
import type { ConversationItem } from '../../src/core/providers/shared/types';
import { EXECUTE_TOOL_CODE, assertCodeItemOrder, providerFor, runTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

type Json = Record<string, any>;

function wellFormed(s: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
}

describe('providers: Anthropic', () => {
  let server: WireServer;
  beforeEach(async () => {
    server = await startServerFor('anthropic');
  });
  afterEach(async () => {
    await server.close();
  });

  it('client tool round trip: tool_use via input_json_delta, then tool_result in a user turn', async () => {
    const code = 'print("hi")';
    server.push(
      turn()
        .thinking('Use the tool.', { signature: 'SIG123' })
        .text('Sure.')
        .call('execute_tool_code', { code }, { id: 'toolu_01A', chunkSize: 3 })
        .with({ pad: true }),
      turn().text('It printed hï — 日本 😀.', { chunkSize: 3 }).with({ chunkBytes: 3, pad: true }),
    );
    const provider = await providerFor('anthropic', server);
    const history: ConversationItem[] = [userMessage('say hi with code')];
    const t1 = await runTurn(provider, { history, tools: [EXECUTE_TOOL_CODE], system: 'sys prompt' });
    assert.deepEqual(
      t1.result.functionCalls.map((c) => [c.call_id, c.name, c.arguments]),
      [['toolu_01A', 'execute_tool_code', JSON.stringify({ code })]],
    );
    assert.equal(
      t1.rec
        .ofType('response.function_call_arguments.delta')
        .map((d) => d.delta)
        .join(''),
      JSON.stringify({ code }),
    );
    assert.equal(t1.result.stopReason, 'tool_use');
    assert.equal(t1.rec.text(), 'Sure.');
    assert.equal(t1.rec.text({ thinking: true }), 'Use the tool.');
    t1.rec.assertNoReasoningInOutputText();

    const req0 = server.turns[0];
    // The installed SDK sends the key as a bearer token (older ones used x-api-key) and its API version.
    assert.ok(req0.headers['x-api-key'] === 'test-key-wire' || req0.headers.authorization === 'Bearer test-key-wire');
    assert.ok(req0.headers['anthropic-version']);
    assert.equal(req0.headers['anthropic-beta'], undefined);
    assert.equal(req0.body.system, 'sys prompt');
    assert.equal(req0.body.max_tokens, 8192);
    assert.deepEqual(req0.body.tools, [{ name: 'execute_tool_code', description: EXECUTE_TOOL_CODE.description, input_schema: EXECUTE_TOOL_CODE.parameters }]);
    assert.deepEqual(req0.body.tool_choice, { type: 'auto' });

    const t2 = await runTurn(provider, {
      history: [...history, ...t1.result.items, { type: 'function_call_output', call_id: 'toolu_01A', output: 'hi\n' }],
      tools: [EXECUTE_TOOL_CODE],
    });
    assert.equal(t2.rec.text(), 'It printed hï — 日本 😀.');
    assert.deepEqual(server.turns[1].body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'say hi with code' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Use the tool.', signature: 'SIG123' },
          { type: 'text', text: 'Sure.' },
          { type: 'tool_use', id: 'toolu_01A', name: 'execute_tool_code', input: { code } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01A', content: 'hi\n' }] },
    ]);
  });

  it('code_execution_20250522: code deltas are plain code, unescaped from partial JSON split inside escapes', async () => {
    const code = 'print("h\u00e9 \ud83d\ude00")\nx = \'a\\\\b\'\t# done';
    // The partial JSON uses \u escapes and splits them (and \n, \", \\) across deltas.
    const json = JSON.stringify({ code }).replace('\u00e9', '\\u00e9').replace('\ud83d\ude00', '\\ud83d\\ude00');
    const chunks = [];
    for (let i = 0; i < json.length; i += 2) chunks.push(json.slice(i, i + 2));
    server.push(turn().code({ code, stdout: 'h\u00e9 \ud83d\ude00\n', chunks, id: 'srvtoolu_01X' }).text('Done.'));
    const provider = await providerFor('anthropic', server);
    const { rec, result } = await runTurn(provider, { history: [userMessage('run')], hosted: { enabled: true, toolVersion: 'code_execution_20250522' } });
    assert.equal(assertCodeItemOrder(rec, rec.codeItems()[0].id), code);
    assert.notEqual(rec.codeItems()[0].id, 'srvtoolu_01X', "the item id is ours; the provider's stays in the replay data");
    const deltas = rec.ofType('response.code_interpreter_call_code.delta').map((d) => d.delta);
    assert.ok(deltas.length > 10, 'the code streams in many deltas');
    for (const d of deltas) {
      assert.ok(!d.includes('\\u') && !d.includes('{"code'), `delta ${JSON.stringify(d)} is plain code`);
      assert.ok(wellFormed(d), `delta ${JSON.stringify(d)} has no lone surrogate`);
    }
    const item = rec.codeItems()[0];
    assert.equal(item.tool, 'code_execution');
    assert.equal(item.runtime, 'anthropic');
    assert.equal(logsOf(item), 'h\u00e9 \ud83d\ude00\n');
    assert.equal(item.exit_code, 0);
    assert.equal(server.turns[0].headers['anthropic-beta'], 'code-execution-2025-05-22');
    assert.deepEqual(server.turns[0].body.tools, [{ type: 'code_execution_20250522', name: 'code_execution' }]);
    assert.ok(result.containerId?.startsWith('container_'));
  });

  it('code_execution_20250825 bash: stdout and stderr apart, return_code as exit_code, output files, container reused', async () => {
    server.push(
      turn()
        .code({
          code: 'python3 -c "import sys; print(1); sys.exit(\'boom\')"',
          stdout: '1\n',
          stderr: 'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nSystemExit: boom\n',
          exitCode: 1,
          id: 'srvtoolu_01B',
          files: [{ id: 'file_011OUT' }],
        })
        .text('It failed.')
        .with({ container: 'container_011REUSE' }),
      turn().code({ code: 'ls', stdout: 'out.csv\n', id: 'srvtoolu_01C' }).text('ok'),
    );
    const provider = await providerFor('anthropic', server);
    const hosted = { enabled: true };
    const t1 = await runTurn(provider, { history: [userMessage('run')], hosted });
    assert.equal(server.turns[0].headers['anthropic-beta'], 'code-execution-2025-08-25');
    assert.deepEqual(server.turns[0].body.tools, [{ type: 'code_execution_20250825', name: 'code_execution' }]);
    const item = t1.rec.codeItems()[0];
    assert.equal(assertCodeItemOrder(t1.rec, item.id), 'python3 -c "import sys; print(1); sys.exit(\'boom\')"');
    assert.equal(item.tool, 'bash_code_execution');
    assert.equal(logsOf(item), '1\n');
    assert.equal(logsOf(item, 'stderr'), 'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nSystemExit: boom\n');
    assert.deepEqual(
      item.outputs.map((o) => [o.type, o.type === 'logs' ? (o.stream ?? 'stdout') : '']),
      [
        ['logs', 'stdout'],
        ['logs', 'stderr'],
        ['file', ''],
      ],
    );
    assert.equal(item.exit_code, 1);
    assert.equal(item.status, 'failed');
    assert.equal(item.error?.type, 'SystemExit');
    assert.equal(item.error?.message, 'boom');
    assert.deepEqual(t1.result.files, [{ type: 'file', file_id: 'file_011OUT' }]);
    assert.equal(t1.result.containerId, 'container_011REUSE');

    const t2 = await runTurn(provider, {
      history: [userMessage('run'), ...t1.result.items, userMessage('again')],
      hosted: { ...hosted, containerId: t1.result.containerId },
    });
    const body = server.turns[1].body;
    assert.equal(body.container, 'container_011REUSE');
    // The server tool blocks of turn 1 go back verbatim, in their original order.
    assert.deepEqual(
      body.messages[1].content.map((b: Json) => b.type),
      ['server_tool_use', 'bash_code_execution_tool_result', 'text'],
    );
    assert.deepEqual(body.messages[1].content[0], {
      type: 'server_tool_use',
      id: 'srvtoolu_01B',
      name: 'bash_code_execution',
      input: { command: 'python3 -c "import sys; print(1); sys.exit(\'boom\')"' },
    });
    assert.equal(body.messages[1].content[1].tool_use_id, 'srvtoolu_01B');
    assert.equal(t2.rec.codeItems()[0].exit_code, 0);
    assert.equal(t2.rec.codeItems()[0].status, 'completed');
  });

  it('text editor operations are text_editor_call items, with their errors', async () => {
    server.push(
      turn()
        .editor({ command: 'create', path: '/tmp/a.py', input: { file_text: 'print(1)\n' }, result: { is_file_update: false }, id: 'srvtoolu_E1' })
        .editor({
          command: 'str_replace',
          path: '/tmp/a.py',
          input: { old_str: 'nope', new_str: 'x' },
          error: { code: 'string_not_found', message: 'old_str not found' },
          id: 'srvtoolu_E2',
        })
        .editor({
          command: 'view',
          path: '/tmp/a.py',
          result: { file_type: 'text', content: 'print(1)\n', num_lines: 1, start_line: 1, total_lines: 1 },
          id: 'srvtoolu_E3',
        })
        .text('Edited.'),
    );
    const provider = await providerFor('anthropic', server);
    const { rec, result } = await runTurn(provider, { history: [userMessage('edit')], hosted: { enabled: true, toolVersion: 'code_execution_20260120' } });
    const items = rec
      .ofType('response.output_item.done')
      .map((e) => e.item)
      .filter((i): i is TextEditorItem => i.type === 'text_editor_call');
    assert.deepEqual(
      items.map((i) => [i.command, i.path, i.status, i.error?.code ?? null]),
      [
        ['create', '/tmp/a.py', 'completed', null],
        ['str_replace', '/tmp/a.py', 'failed', 'string_not_found'],
        ['view', '/tmp/a.py', 'completed', null],
      ],
    );
    // Our ids; the provider's (srvtoolu_E1…) stay in the replay data, for the wire.
    assert.ok(items.every((i) => /^edit_/.test(i.id)) && new Set(items.map((i) => i.id)).size === 3);
    assert.deepEqual(
      result.items.filter((i) => i.type === 'text_editor_call').map((i) => (i.replay!.parts[0].data as Json).id),
      ['srvtoolu_E1', 'srvtoolu_E2', 'srvtoolu_E3'],
    );
    assert.equal(items[0].input.file_text, 'print(1)\n');
    assert.equal(items[1].error?.message, 'old_str not found');
    assert.equal((items[2].result as Json).content, 'print(1)\n');
    assert.equal(server.turns[0].headers['anthropic-beta'], undefined);
    assert.equal(rec.codeItems().length, 0);
    assert.equal(result.items.filter((i) => i.type === 'text_editor_call').length, 3);
  });

  it('a tool error result fails the item with the error code', async () => {
    server.push(turn().code({ code: 'sleep 999', toolError: 'execution_time_exceeded', id: 'srvtoolu_T' }).text('Too slow.'));
    const provider = await providerFor('anthropic', server);
    const { rec } = await runTurn(provider, { history: [userMessage('x')], hosted: { enabled: true } });
    const item = rec.codeItems()[0];
    assert.equal(item.status, 'failed');
    assert.equal(item.exit_code, null);
    assert.deepEqual(item.error, { type: 'execution_time_exceeded', message: 'The code ran longer than the sandbox allows.' });
  });

  it('container_upload blocks for input files, with the Files API beta', async () => {
    server.push(turn().text('ok'));
    const provider = await providerFor('anthropic', server);
    await runTurn(provider, { history: [userMessage('analyse')], hosted: { enabled: true, fileIds: ['file_011IN'] } });
    const req = server.turns[0];
    assert.equal(req.headers['anthropic-beta'], 'code-execution-2025-08-25,files-api-2025-04-14');
    assert.deepEqual(req.body.messages[0].content, [
      { type: 'text', text: 'analyse' },
      { type: 'container_upload', file_id: 'file_011IN' },
    ]);
  });

  it('downloads an output file through the Files API', async () => {
    server.files.set('file_011OUT', { bytes: Buffer.from([1, 2, 3, 250]), contentType: 'application/octet-stream', filename: 'out.bin' });
    const provider = await providerFor('anthropic', server);
    const got = await provider.downloadFile!({ type: 'file', file_id: 'file_011OUT' });
    assert.deepEqual([...got.bytes], [1, 2, 3, 250]);
    assert.equal(got.filename, 'out.bin');
    assert.ok(server.requests.some((r) => r.path === '/v1/files/file_011OUT/content' && String(r.headers['anthropic-beta']).includes('files-api-2025-04-14')));
  });

  it('pause_turn is reported, and an unknown tool version is refused clearly', async () => {
    server.push(turn().text('Working…').with({ stop: 'pause_turn' }));
    const provider = await providerFor('anthropic', server);
    const { result } = await runTurn(provider, { history: [userMessage('long job')], hosted: { enabled: true } });
    assert.equal(result.stopReason, 'pause_turn');
    await assert.rejects(
      provider.streamTurn(
        { model: 'claude-sonnet-4-6', history: [userMessage('x')], tools: [], hosted: { enabled: true, toolVersion: 'bash_2024' } },
        () => {},
      ),
      (e: Error & { code?: string }) => e.code === 'bad_request' && /Unknown Anthropic code execution tool version "bash_2024"/.test(e.message),
    );
  });
});
