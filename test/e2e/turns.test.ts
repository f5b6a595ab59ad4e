/**
 * Turns never collide, in a real VS Code (code-server 4.139 = VS Code 1.139, the current release) driven in
 * headless Chromium. The model is a scripted loopback server speaking the OpenAI Chat Completions streaming
 * format (the `openai-compatible` provider, as Ollama or vLLM) that names every tool call `call_0`, turn after
 * turn, as local servers do. Turn 1's card keeps its code, tool calls, output and result after turn 2, and
 * again when the conversation is reopened from the history.
 *
 * Exported as a notebook from the panel, the conversation opens and runs in a plain Jupyter kernel (point 8).
 *
 * Screenshots go to test-artifacts/e2e/ (30-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { turn } from '../support/wire/turn';
import type { ChatPanel } from './support/chatPanel';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';

const UI = 60_000;
/** Runs a notebook in a plain Jupyter kernel (Debian's nbclient + ipykernel), as `jupyter nbconvert --execute` does. */
const EXECUTE =
  'import sys, json, nbformat, nbclient\nnb = nbformat.read(sys.argv[1], as_version=4)\nnbclient.NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True).execute()\nprint(json.dumps(nb))';
const JUPYTER_PYTHON = '/usr/bin/python3';
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
  const e2e = useCodeServer({
    name: 'turns',
    wire: ['openai-compatible', 'ollama'],
    settings: (url) => ({ 'codeact.provider': 'openai-compatible', 'codeact.baseURL': url, 'codeact.model': MODEL, 'codeact.timeoutSeconds': 90 }),
    minWaitMs: UI,
  });

  it('turn 1\'s card keeps its code, tool call, output and result after turn 2 reuses "call_0"', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    // Every response has the same id too, and every call is call_0: nothing of the provider's is unique.
    e2e.wire.push(
      turn().call('execute_tool_code', { code: CODE1 }, { id: 'call_0', chunkSize: 16 }).with({ id: 'chatcmpl-0' }),
      turn().text('Turn one: 12 ErgoFlex chairs on hand.').with({ id: 'chatcmpl-0' }),
    );
    await e2e.panel.send('How many ErgoFlex chairs are on hand?');
    assert.equal(await e2e.panel.waitForTurn(0, ['completed'], RUN), 'completed', await e2e.panel.text());
    assertTurnOne(await cardsByTurn(e2e.panel), 'after turn 1');

    e2e.wire.push(
      turn().call('execute_tool_code', { code: CODE2 }, { id: 'call_0', chunkSize: 16 }).with({ id: 'chatcmpl-0' }),
      turn().text('Turn two: standing desks found.').with({ id: 'chatcmpl-0' }),
    );
    await e2e.panel.send('And standing desks under 900 EUR?');
    assert.equal(await e2e.panel.waitForTurn(1, ['completed'], RUN), 'completed', await e2e.panel.text());
    const cards = await cardsByTurn(e2e.panel);
    assertTurnOne(cards, 'after turn 2');
    assertTurnTwo(cards, 'after turn 2');
    // Both calls went to the model as call_0, each answered with its own result.
    const tool = (e2e.wire.turns.at(-1)!.body.messages as { role: string; tool_call_id?: string; content?: string }[]).filter((m) => m.role === 'tool');
    assert.deepEqual(
      tool.map((m) => m.tool_call_id),
      ['call_0', 'call_0'],
    );
    assert.match(tool[0].content!, /alpha-result-12/);
    assert.match(tool[1].content!, /beta-result-/);
    const f = await e2e.panel.frame();
    await f.locator('article.turn').first().scrollIntoViewIfNeeded();
    await e2e.wb.screenshot('30-turns-call0-twice');
  });

  it('reopened from the history, each turn still has its own card', async () => {
    await e2e.wb.runCommand('CodeAct: New Conversation');
    await waitUntil(
      async () => (await e2e.panel.turnCount().catch(() => -1)) === 0,
      UI,
      () => 'the new conversation did not start empty',
      250,
    );
    const f = await e2e.panel.frame();
    await f.getByRole('button', { name: 'Conversation history' }).click();
    const entry = f.locator('button.history-open', { hasText: 'How many ErgoFlex chairs' }).first();
    await entry.waitFor({ state: 'visible', timeout: UI });
    await entry.click();
    await waitUntil(
      async () => (await e2e.panel.turnCount().catch(() => 0)) === 2,
      UI,
      () => 'the reopened conversation did not show its two turns',
      250,
    );
    await waitUntil(
      async () => (await cardsByTurn(e2e.panel)).every((t) => t.length > 0),
      UI,
      () => 'the reopened turns have no cards',
      250,
    );
    const cards = await cardsByTurn(e2e.panel);
    assertTurnOne(cards, 'reopened from the history');
    assertTurnTwo(cards, 'reopened from the history');
    await (await e2e.panel.frame()).locator('article.turn').first().scrollIntoViewIfNeeded();
    await e2e.wb.screenshot('31-turns-reopened-from-history');
  });

  it('exported as a notebook, the conversation runs in a plain Jupyter kernel with the recorded tool results', async function () {
    if (spawnSync(JUPYTER_PYTHON, ['-c', 'import nbclient, ipykernel'], { encoding: 'utf8' }).status !== 0) {
      console.log('      nbclient/ipykernel missing (apt-get install python3-nbclient python3-ipykernel): skipping the notebook run');
      this.skip();
    }
    const notebooks = () => readdirSync(e2e.ws.folder).filter((f) => f.endsWith('.ipynb'));
    assert.deepEqual(notebooks(), []);
    await e2e.wb.runCommand('CodeAct: Export Conversation as Notebook');
    // VS Code's own save dialog (in the browser, a path in the quick input): accept the name it proposes.
    const input = e2e.wb.page.locator('.quick-input-widget input.input');
    await input.waitFor({ state: 'visible', timeout: UI });
    await waitUntil(
      async () => /\.ipynb$/.test(await input.inputValue()),
      UI,
      () => 'the save dialog proposes no .ipynb name',
      250,
    );
    await input.press('Enter');
    await e2e.wb.waitForNotification(/exported to .*\.ipynb/, UI);
    await e2e.wb.screenshot('32-turns-exported-notebook');
    await waitUntil(
      async () => notebooks().length === 1,
      UI,
      () => `no notebook in the workspace: ${readdirSync(e2e.ws.folder).join(', ')}`,
      250,
    );
    const file = join(e2e.ws.folder, notebooks()[0]);
    assert.ok(existsSync(file));
    const run = spawnSync(JUPYTER_PYTHON, ['-c', EXECUTE, file], { encoding: 'utf8', timeout: 180_000, cwd: e2e.ws.folder });
    assert.equal(run.status, 0, `the notebook did not run in a plain kernel: ${run.stderr.slice(-2000)}`);
    const nb = JSON.parse(run.stdout) as {
      cells: {
        cell_type: string;
        source: string | string[];
        outputs?: { output_type: string; text?: string | string[]; data?: Record<string, unknown>; ename?: string; evalue?: string }[];
      }[];
    };
    const text = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join('') : (v ?? ''));
    const code = nb.cells.filter((c) => c.cell_type === 'code');
    const errors = code.flatMap((c) => c.outputs ?? []).filter((o) => o.output_type === 'error');
    assert.deepEqual(
      errors.map((e) => `${e.ename}: ${e.evalue}`),
      [],
      'no cell fails in a plain kernel',
    );
    const shown = code
      .flatMap((c) => c.outputs ?? [])
      .map((o) => text(o.text) + text(o.data?.['text/plain'] as string | string[] | undefined))
      .join('\n');
    assert.match(shown, /turn one checked CHR-ERG-100/, 'turn 1 prints with the recorded check_inventory result');
    assert.match(shown, /alpha-result-12/, "turn 1's return gives its value");
    assert.match(shown, /turn two found \d/, 'turn 2 runs with the recorded search_catalog result');
    assert.match(shown, /beta-result-\d/);
    assert.ok(
      nb.cells.some((c) => c.cell_type === 'markdown' && /call_tool/.test(text(c.source))),
      'a Markdown cell says what the cells need',
    );
  });
});
