/**
 * `codeact chat` through the built CLI, with the real SDKs pointed at loopback wire servers by
 * --base-url, exactly as a user would point it at a local Ollama or vLLM.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent } from '../../src/common/events';
import { runCli, scriptedModel } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';

const codeact = runCli;

describe('codeact chat', function () {
  this.timeout(60_000);
  let storage: string;
  let server: WireServer | undefined;
  beforeEach(() => (storage = mkdtempSync(path.join(tmpdir(), 'codeact-chat-'))));
  afterEach(async () => {
    rmSync(storage, { recursive: true, force: true });
    await server?.close();
    server = undefined;
  });

  it('--json follows the event vocabulary: code streams, runs with the managed tools, the answer streams; exit 0', async () => {
    server = await startServerFor('openai-compatible', 'ollama');
    server.push(turn().call('execute_tool_code', { code: 'r = await call_tool("check_inventory", sku="LMP-LED-010")\nreturn r["on_hand"]' }));
    server.push(turn().text('85 lamps are on hand.'));
    const r = await codeact(['chat', 'How many LED lamps?', ...scriptedModel(server.url, storage), '--workspace', 'examples/orders', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as CodeActEvent);
    const allowed = new Set([
      'response.output_text.delta',
      'response.output_text.done',
      'response.code_interpreter_call.in_progress',
      'response.code_interpreter_call_code.delta',
      'response.code_interpreter_call_code.done',
      'response.code_interpreter_call.interpreting',
      'response.code_interpreter_call.completed',
      'response.output_item.added',
      'response.output_item.done',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'codeact.output.delta',
      'codeact.output.display',
      'codeact.tool_call.started',
      'codeact.tool_call.completed',
      'codeact.approval.requested',
      'codeact.approval.resolved',
      'codeact.retry',
      'codeact.context.usage',
      'codeact.context.compacted',
      'codeact.usage.summary',
      'response.completed',
      'error',
    ]);
    for (const e of events) assert.ok(allowed.has(e.type), `unknown event type ${e.type}`);
    const exec = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call');
    assert.ok(exec && exec.type === 'response.output_item.done' && exec.item.type === 'code_interpreter_call');
    const execItem = exec.item;
    assert.equal(execItem.value, 85);
    const order = events.filter((e) => 'item_id' in e && e.item_id === execItem.id && e.type.startsWith('response.code_interpreter_call')).map((e) => e.type);
    assert.deepEqual(
      [...new Set(order)],
      [
        'response.code_interpreter_call.in_progress',
        'response.code_interpreter_call_code.delta',
        'response.code_interpreter_call_code.done',
        'response.code_interpreter_call.interpreting',
        'response.code_interpreter_call.completed',
      ],
    );
    assert.ok(events.some((e) => e.type === 'codeact.tool_call.completed' && e.name === 'check_inventory'));
    assert.equal(
      events
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => (e as { delta: string }).delta)
        .join(''),
      '85 lamps are on hand.',
    );
    assert.equal(events.filter((e) => e.type === 'response.completed').length, 2);
  });

  it('continues a saved conversation with --continue: the next request carries the earlier turns', async () => {
    server = await startServerFor('anthropic');
    server.push(turn().text('Noted: the code word is "plum".'));
    const first = await codeact(
      ['chat', 'Remember the code word plum.', '--provider', 'anthropic', '--model', 'claude-sonnet-4-6', '--base-url', server.url, '--storage', storage],
      { ANTHROPIC_API_KEY: 'sk-ant-test' },
    );
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /Noted: the code word is "plum"\./);
    const id = /\[(c_[A-Za-z0-9_]+)\]/.exec(first.stderr)?.[1];
    assert.ok(id, first.stderr);
    const listed = await codeact(['chat', '--list', '--storage', storage, '--json']);
    assert.equal(JSON.parse(listed.stdout)[0].id, id);

    server.push(turn().text('The code word is plum.'));
    const second = await codeact(['chat', 'What was the code word?', '--continue', id!, '--base-url', server.url, '--storage', storage], {
      ANTHROPIC_API_KEY: 'sk-ant-test',
    });
    assert.equal(second.code, 0, second.stderr);
    const messages = server.turns[1].body.messages as Array<{ role: string; content: unknown }>;
    assert.equal(messages.length, 3);
    assert.match(JSON.stringify(messages[0]), /Remember the code word plum/);
    assert.equal(messages[1].role, 'assistant');
    assert.match(JSON.stringify(messages[2]), /What was the code word/);
  });

  it('exits 2 when the key is missing, naming the variable; exit 1 on a model error', async () => {
    const missing = await codeact(['chat', 'hi', '--provider', 'openai', '--model', 'gpt-5', '--storage', storage]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /OPENAI_API_KEY/);
    server = await startServerFor('openai');
    server.push(fault.status(404, { message: 'The model `gpt-nope` does not exist', code: 'model_not_found' }));
    const bad = await codeact(['chat', 'hi', '--provider', 'openai', '--model', 'gpt-nope', '--base-url', server.url, '--storage', storage], {
      OPENAI_API_KEY: 'sk-test',
    });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /gpt-nope/);
  });

  it('exits 2 for usage errors', async () => {
    assert.equal((await codeact(['chat', '--storage', storage])).code, 2);
    assert.match((await codeact(['chat', 'hi', '--provider', 'nope', '--model', 'x', '--storage', storage])).stderr, /--provider must be one of/);
    assert.match(
      (await codeact(['chat', 'hi', '--provider', 'openai', '--model', 'x', '--mode', 'turbo', '--storage', storage])).stderr,
      /--mode must be one of "toolCode", "hosted", "code", not "turbo"/,
    );
  });
});
