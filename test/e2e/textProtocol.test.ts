/**
 * The text protocol in a real VS Code (code-server 4.139 = VS Code 1.139, the current release) driven in headless Chromium:
 * an OpenAI-compatible server (a loopback wire server in Ollama's dialect, reached by the real OpenAI
 * SDK) rejects `tools` for the model. The chat panel says so once and goes on without tools: the model
 * writes ```python blocks that stream into code cards and run in the extension's local Python runtime
 * against the managed tools of a copy of examples/orders; the first run fails (a wrong SKU), the second
 * recovers with two tools, and the answer follows. No request after the rejection carries `tools`.
 *
 * Screenshots go to test-artifacts/e2e/ (40-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { fault, turn } from '../support/wire/turn';
import { messagesOf, systemOf, toolsOf } from '../support/textWire';
import { artifactPath } from './support/env';
import { execCards, noticeLines, wheelTo } from './support/execCards';
import { useCodeServer } from './support/suite';
import { throttle } from './support/throttle';
import { makeWorkspace } from './support/workspace';
import { REFUSALS } from '../../src/core/gateway/gateway';
import { OBSERVATION } from '../../src/core/agent/textHistory';

/** UI conditions get at least a minute: the machine is small and shared. */
const UI = 60_000;
/** A turn runs code twice in the local runtime (a session to start, a sandbox): give it more. */
const TURN = 180_000;

const MODEL = 'gemma2:2b';
const REJECTION = `registry.ollama.ai/library/${MODEL} does not support tools`;

const FAIL_CODE = 'stock = await call_tool("check_inventory", sku="led lamp")\nreturn stock["on_hand"]';
const RECOVER_CODE = [
  'hits = await call_tool("search_catalog", query="LED lamp")',
  'stock = await call_tool("check_inventory", sku=hits[0]["sku"])',
  'print(hits[0]["sku"], hits[0]["name"], stock["warehouse"])',
  'return stock["on_hand"]',
].join('\n');
const ANSWER = 'There are **85** LED desk lamps on hand (SKU LMP-LED-010).';

describe('e2e: text protocol — a model whose server rejects tools, in the chat panel', function () {
  this.timeout(600_000);
  const e2e = useCodeServer({
    name: 'text-protocol',
    failureName: 'text',
    workspace: () => makeWorkspace(undefined, 'codeact-e2e-text-'),
    wire: ['openai-compatible', 'ollama'],
    // Events reach the extension 30 ms apart, so the blocks visibly stream into their cards.
    proxy: (wire) => throttle(wire, 30),
    settings: (url) => ({ 'codeact.provider': 'openai-compatible', 'codeact.baseURL': url, 'codeact.model': MODEL, 'codeact.timeoutSeconds': 90 }),
    minWaitMs: UI,
    // A wider sidebar than the default, so the screenshots show the cards' code and tool rows.
    setup: async ({ wb }) => {
      await wb.setSidebarWidth(520);
    },
  });

  it('says once that the model takes no tools, runs two ```python blocks (one fails, one recovers with two tools) and answers; no tools after the rejection', async () => {
    e2e.wire.push(
      fault.status(400, { message: REJECTION }),
      turn().text(`I will look the lamp up in the inventory.\n\n\`\`\`python\n${FAIL_CODE}\n\`\`\`\n`, { chunkSize: 6 }),
      turn().text(`That was not a SKU. I will search the catalog first.\n\`\`\`python\n${RECOVER_CODE}\n\`\`\``, { chunkSize: 6 }),
      turn().text(ANSWER, { chunkSize: 5 }),
    );
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    await e2e.panel.send('How many LED desk lamps are on hand?');
    const status = await e2e.panel.waitForTurn(-1, ['completed'], TURN);
    assert.equal(status, 'completed', await e2e.panel.text());

    // The requests the server received: tools once (rejected), then none, the text system prompt and the observations.
    const requests = e2e.wire.turns;
    assert.equal(requests.length, 4, `four requests: ${requests.map((r) => r.path).join(', ')}`);
    assert.ok(toolsOf('openai-compatible', requests[0].body), 'the first request offered execute_tool_code');
    assert.equal(requests[0].body.tools[0].function.name, 'execute_tool_code');
    for (const [i, r] of requests.slice(1).entries()) {
      assert.equal(toolsOf('openai-compatible', r.body), undefined, `request ${i + 2} carries no tools`);
      assert.equal(r.body.tool_choice, undefined, `request ${i + 2} carries no tool_choice`);
      assert.match(systemOf('openai-compatible', r.body), /write ONE fenced code block: a line ```python/);
      assert.equal(r.body.model, MODEL);
    }
    const third = messagesOf('openai-compatible', requests[2].body);
    assert.ok(third.at(-1)!.text.startsWith(OBSERVATION.failed('RuntimeError')), 'the failure went back as an observation');
    assert.ok(third.at(-1)!.text.includes(REFUSALS.invalidArguments('check_inventory')), third.at(-1)!.text);
    const fourth = messagesOf('openai-compatible', requests[3].body);
    assert.ok(
      fourth.at(-1)!.text.startsWith([OBSERVATION.ran('completed'), OBSERVATION.printed, '│ LMP-LED-010 Arc LED Desk Lamp Lyon'].join('\n')),
      fourth.at(-1)!.text,
    );
    assert.ok(fourth.at(-1)!.text.includes(`\n${OBSERVATION.returned('85')}`), fourth.at(-1)!.text);

    // The panel: one notice, two code cards (failed, then done) with their tool calls, and the answer.
    const notices = await noticeLines(e2e.panel);
    assert.equal(notices.length, 1, JSON.stringify(notices));
    assert.match(
      notices[0],
      new RegExp(`"${MODEL.replace(/[.:]/g, '\\$&')}" does not accept tools \\(function calling\\): ${REJECTION}. Continuing without tools`),
    );
    assert.doesNotMatch(notices[0], /Retrying in/, 'a change of course, not a retry');
    const cards = await execCards(e2e.panel);
    assert.deepEqual(
      cards.map((c) => c.status),
      ['failed', 'done'],
    );
    assert.deepEqual(
      cards.map((c) => normalise(c.code)),
      [FAIL_CODE, RECOVER_CODE],
    );
    assert.deepEqual(
      cards[0].tools.map((t) => [t.name, t.kind, t.status]),
      [['check_inventory', 'tool', 'error']],
    );
    assert.deepEqual(
      cards[1].tools.map((t) => [t.name, t.kind, t.status]),
      [
        ['search_catalog', 'tool', 'ok'],
        ['check_inventory', 'tool', 'ok'],
      ],
    );
    assert.equal(cards[1].toolsLabel.toLowerCase(), 'tool calls · 2');
    assert.match(cards[1].output, /LMP-LED-010 Arc LED Desk Lamp Lyon/);
    // The prose before each block, then the answer, as messages; no raw fence left in them (the blocks became cards).
    const messages = (await e2e.panel.lastAnswer()).split('\n').filter(Boolean);
    assert.deepEqual(messages, [
      'I will look the lamp up in the inventory.',
      'That was not a SKU. I will search the catalog first.',
      'There are 85 LED desk lamps on hand (SKU LMP-LED-010).',
    ]);

    await e2e.wb.screenshot('40-text-protocol-answer');
    // The notice and the failed run, from the top of the turn; then the run that recovered.
    await wheelTo(e2e.panel, '.notice-line');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('41-text-protocol-notice-and-failed-run') });
    await wheelTo(e2e.panel, 'section.card.exec', -1);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('42-text-protocol-recovered-run') });
  });

  it('the next turn starts without tools: the rejection is remembered for this model', async () => {
    const before = e2e.wire.turns.length;
    const turns = await e2e.panel.turnCount();
    e2e.wire.push(turn().text('Yes: 85 on hand, in the inventory a moment ago.'));
    await e2e.panel.send('Sure?');
    assert.equal(await e2e.panel.waitForTurn(turns, ['completed'], TURN), 'completed', await e2e.panel.text());
    assert.equal(e2e.wire.turns.length - before, 1, 'one request, no second try with tools');
    assert.equal(toolsOf('openai-compatible', e2e.wire.turns.at(-1)!.body), undefined);
    const history = messagesOf('openai-compatible', e2e.wire.turns.at(-1)!.body);
    assert.deepEqual(
      history.map((m) => m.role),
      ['user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user'],
    );
    assert.match(history[1].text, /```python\nstock = await call_tool\("check_inventory"/, 'the earlier code goes back as a ```python block');
    assert.deepEqual(await noticeLines(e2e.panel), [], 'no second notice');
    assert.match(await e2e.panel.lastAnswer(), /Yes: 85 on hand/);
  });
});

function normalise(s: string): string {
  return s.replace(/\u00a0/g, ' ').replace(/\n+$/, '');
}
