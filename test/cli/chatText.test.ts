/**
 * `codeact chat` with a model whose server rejects `tools` (scripted on loopback, real OpenAI SDK):
 * the CLI says so once, continues in the text protocol (```python blocks), runs the order desk's real
 * command tools, fails once, recovers and answers; no request after the rejection carries `tools`.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../src/common/events';
import { runCli } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';
import { messagesOf, toolsOf } from '../support/textWire';
import { REFUSALS } from '../../src/core/gateway/gateway';
import { PROVIDER_MESSAGES } from '../../src/core/providers/shared/errors';
import { OBSERVATION } from '../../src/core/agent/textHistory';

const FAIL_CODE = 'r = await call_tool("check_inventory", sku="lamp")\nreturn r["on_hand"]';
const RECOVER_CODE =
  'hits = await call_tool("search_catalog", query="LED lamp")\nstock = await call_tool("check_inventory", sku=hits[0]["sku"])\nprint(hits[0]["name"])\nreturn stock["on_hand"]';
const ANSWER = '85 Arc LED Desk Lamps (LMP-LED-010) are on hand in Lyon.';

describe('codeact chat: text protocol', function () {
  this.timeout(90_000);
  let storage: string;
  let server: WireServer;
  beforeEach(async () => {
    storage = mkdtempSync(path.join(tmpdir(), 'codeact-chat-text-'));
    server = await startServerFor('openai-compatible', 'llamacpp');
  });
  afterEach(async () => {
    rmSync(storage, { recursive: true, force: true });
    await server.close();
  });

  const base = ['--provider', 'openai-compatible', '--model', 'local', '--workspace', 'examples/orders'];

  it('a server that rejects tools: told once, then a failing run, a recovering run with two tools, and the answer; no tools after the rejection', async () => {
    const id = 'chatcmpl-same-every-time';
    server.push(
      fault.status(500, { message: 'tools param requires --jinja flag' }),
      turn().text(`I will check the lamp.\n\`\`\`python\n${FAIL_CODE}\n\`\`\`\n`, { chunkSize: 6 }).with({ id }),
      turn().text(`Wrong SKU; searching first.\n\n\`\`\`python\n${RECOVER_CODE}\n\`\`\``, { chunkSize: 4 }).with({ id }),
      turn().text(ANSWER).with({ id }),
    );
    const r = await runCli(['chat', 'How many LED lamps are on hand?', ...base, '--base-url', server.url, '--storage', storage, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as CodeActEvent);

    // One notice, no error; every request after the rejection without tools.
    assert.ok(toolsOf('openai-compatible', server.turns[0].body));
    assert.equal(server.turns.length, 4);
    for (const t of server.turns.slice(1)) assert.equal(toolsOf('openai-compatible', t.body), undefined);
    const notices = events.filter((e) => e.type === 'codeact.retry');
    assert.equal(notices.length, 1);
    assert.match((notices[0] as { message: string }).message, /"local" does not accept tools.*--jinja/);
    assert.ok(!events.some((e) => e.type === 'error'));

    // The same events as with function calling: two code cards, the tool calls, the prose and the answer.
    const execs = events.flatMap((e) =>
      e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' ? [e.item as CodeInterpreterCallItem] : [],
    );
    assert.deepEqual(
      execs.map((x) => [x.status, x.code]),
      [
        ['failed', FAIL_CODE],
        ['completed', RECOVER_CODE],
      ],
    );
    assert.equal(execs[1].value, 85);
    assert.ok(execs[0].error!.message.includes(REFUSALS.invalidArguments('check_inventory')), execs[0].error!.message);
    for (const x of execs) {
      const streamed = events
        .filter((e) => e.type === 'response.code_interpreter_call_code.delta' && e.item_id === x.id)
        .map((e) => (e as { delta: string }).delta)
        .join('');
      assert.equal(streamed, x.code, 'the card streamed the code');
    }
    const tools = events
      .filter((e) => e.type === 'codeact.tool_call.completed')
      .map((e) => [(e as { name: string }).name, (e as { error?: string }).error === undefined]);
    assert.deepEqual(tools, [
      ['check_inventory', false],
      ['search_catalog', true],
      ['check_inventory', true],
    ]);
    const texts = events.filter((e) => e.type === 'response.output_text.done').map((e) => (e as { text: string }).text);
    assert.deepEqual(texts, ['I will check the lamp.', 'Wrong SKU; searching first.', ANSWER]);
    const observation = messagesOf('openai-compatible', server.turns[3].body).at(-1)!.text;
    assert.ok(
      observation.startsWith([OBSERVATION.ran('completed'), OBSERVATION.printed, '│ Arc LED Desk Lamp', OBSERVATION.returned('85')].join('\n')),
      observation,
    );

    // The transcript holds the same items as with function calling, and the CLI can continue it:
    // the next process probes tools again (the memory lasts one process), then replays the conversation as text.
    const file = readdirSync(storage).find((f) => f.endsWith('.jsonl'))!;
    const items = readFileSync(path.join(storage, file), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((l) => l.item)
      .map((l) => l.item.type);
    assert.deepEqual(items, ['message', 'message', 'function_call', 'function_call_output', 'message', 'function_call', 'function_call_output', 'message']);
    server.push(fault.status(500, { message: 'tools param requires --jinja flag' }), turn().text('Yes, 85.'));
    const more = await runCli(['chat', 'Sure?', '--continue', file.replace(/\.jsonl$/, ''), '--base-url', server.url, '--storage', storage]);
    assert.equal(more.code, 0, more.stderr);
    assert.match(more.stdout, /Yes, 85\./);
    assert.ok(more.stderr.includes(PROVIDER_MESSAGES.toolsUnsupported), more.stderr);
    const replayed = messagesOf('openai-compatible', server.turns[5].body);
    assert.deepEqual(
      replayed.map((m) => m.role),
      ['user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user'],
    );
    assert.equal(replayed[1].text, `I will check the lamp.\n\n\`\`\`python\n${FAIL_CODE}\n\`\`\``);
    assert.ok(replayed[2].text.startsWith(OBSERVATION.failed('RuntimeError')), replayed[2].text);
  });

  it('--protocol text sends no tools from the first request and prints the code and the answer', async () => {
    server.push(turn().text(`\`\`\`python\n${RECOVER_CODE}\n\`\`\``), turn().text(ANSWER));
    const r = await runCli(['chat', 'How many LED lamps?', ...base, '--protocol', 'text', '--base-url', server.url, '--storage', storage]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(server.turns.length, 2);
    for (const t of server.turns) assert.equal(toolsOf('openai-compatible', t.body), undefined);
    assert.ok(!/does not accept tools/.test(r.stderr));
    assert.ok(r.stdout.includes(RECOVER_CODE), r.stdout);
    assert.match(r.stdout, /→ search_catalog\(\{"query":"LED lamp"\}\) ✓/);
    assert.ok(r.stdout.includes(ANSWER));
    assert.match(
      (await runCli(['chat', 'hi', ...base, '--protocol', 'morse', '--storage', storage])).stderr,
      /--protocol must be one of "tools", "text", not "morse"/,
    );
  });
});
