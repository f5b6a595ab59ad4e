/**
 * Turns never collide (issue 12, point 1), in a real VS Code (code-server 4.100.3 = VS Code 1.100) driven in
 * headless Chromium. The model is a scripted loopback server speaking the OpenAI Chat Completions streaming
 * format (the `openai-compatible` provider, as Ollama or vLLM) that names every tool call `call_0`, turn after
 * turn, as local servers do. Turn 1's card keeps its code, tool calls, output and result after turn 2, and
 * again when the conversation is reopened from the history.
 *
 * Screenshots go to test-artifacts/e2e/ (30-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';
import { ChatPanel } from './support/chatPanel';
import { CodeServer, packageExtension } from './support/codeServer';
import { skipUnlessE2E } from './support/env';
import { waitUntil } from './support/procs';
import { Workbench, launchChromium } from './support/workbench';
import { makeWorkspace, type Workspace } from './support/workspace';

const UI = 60_000;
const RUN = 120_000;
const MODEL = 'qwen2.5-coder:7b';

const CODE1 = `stock = await call_tool("check_inventory", sku="CHR-ERG-100")
print("turn one checked", stock["sku"])
return "alpha-result-" + str(stock["on_hand"])`;

const CODE2 = `chairs = await call_tool("search_catalog", query="standing desk", max_price=900)
print("turn two found", len(chairs))
return "beta-result-" + str(len(chairs))`;

interface Card {
  code: string;
  result: string;
  output: string;
  tools: string[];
  status: string;
}

/** The execution cards of each turn of the panel, as a user reads them. */
async function cardsByTurn(panel: ChatPanel): Promise<Card[][]> {
  const f = await panel.frame();
  return f.evaluate(() =>
    Array.from(document.querySelectorAll('article.turn')).map((t) =>
      Array.from(t.querySelectorAll<HTMLElement>('section.card.exec')).map((c) => ({
        code: (c.querySelector('pre.code') as HTMLElement | null)?.innerText.replace(/\u00a0/g, ' ').trim() ?? '',
        result: (c.querySelector('.result-section') as HTMLElement | null)?.innerText ?? '',
        output: (c.querySelector('.output-section') as HTMLElement | null)?.innerText ?? '',
        tools: Array.from(c.querySelectorAll('li.tool-call .tool-name')).map((n) => n.textContent ?? ''),
        status: c.dataset.status ?? '',
      })),
    ),
  );
}

function assertTurnOne(cards: Card[][], when: string): void {
  const [one] = cards[0];
  assert.equal(cards[0].length, 1, `${when}: turn 1 has its one card`);
  assert.equal(one.code, CODE1, `${when}: turn 1's card keeps its code`);
  assert.match(one.result, /alpha-result-12/, `${when}: turn 1's card keeps its result`);
  assert.match(one.output, /turn one checked CHR-ERG-100/, `${when}: turn 1's card keeps its output`);
  assert.deepEqual(one.tools, ['check_inventory'], `${when}: turn 1's card keeps its tool call`);
  assert.equal(one.status, 'done');
}

function assertTurnTwo(cards: Card[][], when: string): void {
  const [two] = cards[1];
  assert.equal(cards[1].length, 1, `${when}: turn 2 has a card of its own`);
  assert.equal(two.code, CODE2);
  assert.match(two.result, /beta-result-\d/);
  assert.doesNotMatch(two.result, /alpha/);
  assert.deepEqual(two.tools, ['search_catalog']);
}

describe('e2e: turns never collide — a local server names every tool call "call_0"', function () {
  this.timeout(600_000);
  let ws: Workspace | undefined;
  let wire: WireServer | undefined;
  let cs: CodeServer | undefined;
  let browser: Browser | undefined;
  let wb: Workbench;
  let panel: ChatPanel;

  before(async function () {
    skipUnlessE2E(this);
    this.timeout(300_000);
    const vsix = await packageExtension();
    ws = makeWorkspace();
    wire = await startServerFor('openai-compatible', 'ollama');
    cs = await CodeServer.start({
      vsix,
      workspace: ws.folder,
      settings: { 'codeact.provider': 'openai-compatible', 'codeact.baseURL': wire.url, 'codeact.model': MODEL, 'codeact.timeoutSeconds': 90 },
      name: 'turns',
    });
    browser = await launchChromium();
    wb = await Workbench.open(browser, cs.folderUrl);
    wb.minWaitMs = UI;
    await wb.trustFolder();
    panel = new ChatPanel(wb);
  });

  after(async function () {
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    await wire?.close();
    ws?.dispose();
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && wb) {
      const path = await wb.screenshot(`failed-turns-${this.currentTest.title.replace(/\W+/g, '-').slice(0, 50)}`).catch(() => '');
      console.log(`      screenshot of the failure: ${path}`);
    }
  });

  it('turn 1\'s card keeps its code, tool call, output and result after turn 2 reuses "call_0"', async () => {
    await wb.runCommand('CodeAct: Open Chat');
    await panel.frame(UI);
    // Every response has the same id too, and every call is call_0: nothing of the provider's is unique.
    wire!.push(
      turn().call('execute_tool_code', { code: CODE1 }, { id: 'call_0', chunkSize: 16 }).with({ id: 'chatcmpl-0' }),
      turn().text('Turn one: 12 ErgoFlex chairs on hand.').with({ id: 'chatcmpl-0' }),
    );
    await panel.send('How many ErgoFlex chairs are on hand?');
    assert.equal(await panel.waitForTurn(0, ['completed'], RUN), 'completed', await panel.text());
    assertTurnOne(await cardsByTurn(panel), 'after turn 1');

    wire!.push(
      turn().call('execute_tool_code', { code: CODE2 }, { id: 'call_0', chunkSize: 16 }).with({ id: 'chatcmpl-0' }),
      turn().text('Turn two: standing desks found.').with({ id: 'chatcmpl-0' }),
    );
    await panel.send('And standing desks under 900 EUR?');
    assert.equal(await panel.waitForTurn(1, ['completed'], RUN), 'completed', await panel.text());
    const cards = await cardsByTurn(panel);
    assertTurnOne(cards, 'after turn 2');
    assertTurnTwo(cards, 'after turn 2');
    // Both calls went to the model as call_0, each answered with its own result.
    const tool = (wire!.turns.at(-1)!.body.messages as { role: string; tool_call_id?: string; content?: string }[]).filter((m) => m.role === 'tool');
    assert.deepEqual(tool.map((m) => m.tool_call_id), ['call_0', 'call_0']);
    assert.match(tool[0].content!, /alpha-result-12/);
    assert.match(tool[1].content!, /beta-result-/);
    const f = await panel.frame();
    await f.locator('article.turn').first().scrollIntoViewIfNeeded();
    await wb.screenshot('30-turns-call0-twice');
  });

  it('reopened from the history, each turn still has its own card', async () => {
    await wb.runCommand('CodeAct: New Conversation');
    await waitUntil(async () => (await panel.turnCount().catch(() => -1)) === 0, UI, () => 'the new conversation did not start empty', 250);
    const f = await panel.frame();
    await f.getByRole('button', { name: 'Conversation history' }).click();
    const entry = f.locator('button.history-open', { hasText: 'How many ErgoFlex chairs' }).first();
    await entry.waitFor({ state: 'visible', timeout: UI });
    await entry.click();
    await waitUntil(async () => (await panel.turnCount().catch(() => 0)) === 2, UI, () => 'the reopened conversation did not show its two turns', 250);
    await waitUntil(async () => (await cardsByTurn(panel)).every((t) => t.length > 0), UI, () => 'the reopened turns have no cards', 250);
    const cards = await cardsByTurn(panel);
    assertTurnOne(cards, 'reopened from the history');
    assertTurnTwo(cards, 'reopened from the history');
    await (await panel.frame()).locator('article.turn').first().scrollIntoViewIfNeeded();
    await wb.screenshot('31-turns-reopened-from-history');
  });
});
