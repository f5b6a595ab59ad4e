/**
 * The CodeAct notebook kernel in a real VS Code (code-server 4.139 = VS Code 1.139, the current release, its notebook editor and ipynb support, in
 * headless Chromium), on the default runtime (the local guest: Debian's /usr/bin/python3 with matplotlib
 * and pandas, bubblewrap when present), with examples/orders' managed tools:
 * - a workspace notebook selected to the CodeAct kernel and run with Run All: print, plot, DataFrame (from
 *   the first cell's variable), a managed-tool call, each in its cell; a failing cell at the user's line;
 * - Interrupt stopping a sleeping cell (the session keeps its variables), Restart clearing them;
 * - the agent, asked in the chat with the notebook active, inserting two cells that use the notebook's
 *   variables, running them and answering; Ctrl+Z removing the last inserted cell;
 * - save, close and reopen with the outputs still there.
 *
 * Screenshots: test-artifacts/e2e/95-…. Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { turn } from '../support/wire/turn';
import { textContrast } from './support/contrast';
import { artifactPath } from './support/env';
import { narrowLayoutProblems } from './support/layout';
import { NotebookDriver, type CellOutput } from './support/notebook';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { THEMES, applyTheme } from './support/themes';
import { makeWorkspaceWith, notebook } from './support/workspace';

const UI = 60_000;
const MODEL = 'qwen2.5-coder:7b';

const ANALYSIS = [
  'orders = [3, 5, 8]\nprint("orders:", len(orders))',
  'import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 2.5))\nplt.bar(["a", "b", "c"], orders)\nplt.title("orders")\nplt.show()',
  'import pandas as pd\ndf = pd.DataFrame({"n": orders, "sku": ["CHR-ERG-100", "CHR-ERG-200", "CHR-STD-050"]})\ndf',
  'stock = await call_tool("check_inventory", sku=df["sku"][0])\nprint("warehouse:", stock["warehouse"])',
  'total = None\n\nprint(total + 1)',
];

const SLOW = ['kept = 7', 'import time\nprint("sleeping", flush=True)\ntime.sleep(300)', 'print("after the sleep")', 'print("kept is", kept)'];

/** The model's two cells: they use the notebook's `df` and `orders`. */
const AGENT_A = 'largest = int(df["n"].max())\nprint("largest:", largest)';
const AGENT_B = 'print("orders total:", sum(orders))';

const kinds = (outs: CellOutput[]) => outs.map((o) => o.kind);

describe('e2e: the CodeAct notebook kernel and the agent in the open notebook', function () {
  this.timeout(1_200_000);
  const e2e = useCodeServer({
    name: 'notebook-kernel',
    wire: ['openai-compatible', 'openai'],
    workspace: () => makeWorkspaceWith({ 'analysis.ipynb': notebook(ANALYSIS), 'slow.ipynb': notebook(SLOW) }),
    settings: (url) => ({
      'codeact.provider': 'openai-compatible',
      'codeact.baseURL': url,
      'codeact.model': MODEL,
      'codeact.timeoutSeconds': 600,
      'codeact.python.path': '/usr/bin/python3',
      // The driver scrolls the cell list with the wheel: no animation between its steps, and longer steps.
      'workbench.list.smoothScrolling': false,
      'workbench.list.mouseWheelScrollSensitivity': 4,
    }),
    minWaitMs: UI,
  });
  let nb: NotebookDriver;

  it("runs a workspace notebook on the CodeAct kernel with Run All: each output in its cell, the error at the user's line", async () => {
    nb = new NotebookDriver(e2e.wb);
    await nb.open('analysis.ipynb');
    await nb.selectKernel('CodeAct');
    const before = await nb.cells();
    await nb.runAll();
    const after = await nb.waitForRun({ before, timeoutMs: 240_000 });
    assert.deepEqual(
      after.map((c) => c.executionOrder),
      [1, 2, 3, 4, 5],
    );
    assert.deepEqual(
      after.map((c) => c.state),
      ['success', 'success', 'success', 'success', 'error'],
    );
    assert.match(await nb.streamText(0, /orders: 3/), /^orders: 3\s*$/);
    const plot = await nb.outputs(1, { until: (o) => o.some((x) => (x.image?.naturalWidth ?? 0) > 0) });
    assert.deepEqual(kinds(plot), ['image']);
    assert.ok(plot[0].image!.naturalWidth >= 300, `the plot is drawn: ${JSON.stringify(plot[0].image)}`);
    // Cell 3 drew the DataFrame made from cell 1's variable.
    const table = await nb.outputs(2, { until: (o) => o.some((x) => x.kind === 'table') });
    assert.match(table.find((o) => o.kind === 'table')!.text, /n\s+sku[\s\S]*8\s+CHR-STD-050/);
    const tool = await nb.outputs(3, {
      until: (o) => o.some((x) => x.kind === 'markdown' && /check_inventory/.test(x.text)) && o.some((x) => x.kind === 'stream'),
    });
    assert.match(tool.find((o) => o.kind === 'markdown')!.text, /Managed tools · 1 call\s+✓ check_inventory \{"sku":"CHR-ERG-100"\} · (\d+ ms|[\d.]+ s) · ok/); // a busy machine takes over a second
    assert.match(tool.find((o) => o.kind === 'stream')!.text, /warehouse: Lyon/);
    const error = await nb.outputs(4, { until: (o) => o.some((x) => x.kind === 'error') });
    assert.match(error[0].text, /TypeError/);
    assert.match(error[0].text, /line 3[\s\S]*print\(total \+ 1\)/, "the traceback names the cell's own line 3");
    await e2e.wb.screenshot('95-notebook-run-all');
    await nb.revealCell(4);
    await e2e.wb.screenshot('95-notebook-error-cell');
  });

  it('Interrupt stops a sleeping cell and the one waiting after it; the variables stay; Restart clears them', async () => {
    await nb.open('slow.ipynb');
    await nb.selectKernel('CodeAct');
    await nb.runAll();
    await nb.waitForCellState(1, 'running', 120_000);
    assert.match(await nb.streamText(1, /sleeping/), /sleeping/);
    assert.equal(await nb.isRunning(), true);
    await nb.interrupt();
    await nb.waitForRun({ cells: [0, 1], timeoutMs: 120_000 });
    const cells = await nb.cells();
    const stopped = await nb.outputs(1, { until: (o) => o.some((x) => x.kind === 'error') });
    assert.match(stopped.find((o) => o.kind === 'error')!.text, /Interrupted: The run was stopped/);
    assert.equal(cells[1].state, 'error', 'the sleeping cell was stopped');
    assert.notEqual(cells[2].state, 'success', 'the cell after it did not run');
    assert.equal(cells[2].executionOrder, undefined);
    await e2e.wb.screenshot('95-notebook-interrupted');
    let order = cells[3].executionOrder;
    await nb.runCell(3);
    await nb.waitForRun({ cells: [3], before: cells, timeoutMs: 120_000 });
    assert.match(await nb.streamText(3, /kept is 7/), /kept is 7/, 'an interrupt keeps the session');
    order = (await nb.cell(3)).executionOrder;
    assert.ok(order && order >= 3);
    await nb.clickToolbar('Restart Notebook Session');
    await e2e.wb.waitForNotification(/Python session of slow\.ipynb was restarted/, UI);
    const beforeRestartRun = await nb.cells();
    await nb.runCell(3);
    const ran = await nb.waitForRun({ cells: [3], before: beforeRestartRun, timeoutMs: 120_000 });
    assert.equal(ran[3].state, 'error');
    assert.equal(ran[3].executionOrder, 1, 'numbers start again at 1');
    const err = await nb.outputs(3, { until: (o) => o.some((x) => x.kind === 'error') });
    assert.match(err.find((o) => o.kind === 'error')!.text, /NameError: name 'kept' is not defined/);
    await nb.close({ discard: true });
  });

  it("the agent, asked in the chat, adds two cells that use the notebook's variables, runs them, answers; Ctrl+Z removes the last", async () => {
    await nb.open('analysis.ipynb');
    await nb.focusCell(3);
    await e2e.wb.runCommand('CodeAct: Open Chat');
    const frame = await e2e.panel.frame();
    const bar = frame.locator('.notebook-target');
    await bar.waitFor({ state: 'visible', timeout: e2e.wb.wait(UI) });
    await frame.waitForFunction(() => /Working in analysis\.ipynb/.test(document.querySelector('.notebook-target')?.textContent ?? ''), undefined, {
      timeout: e2e.wb.wait(UI),
    });
    await e2e.wb.screenshot('95-notebook-chat-target');
    e2e.wire.push(
      turn().call('execute_tool_code', { code: AGENT_A }),
      turn().call('execute_tool_code', { code: AGENT_B }),
      turn().text('The largest order is **8**, and the orders add up to **16**.'),
    );
    const requestsBefore = e2e.wire.requests.length;
    await e2e.panel.send('Which order is the largest, and what do the orders add up to? Use the notebook.');
    assert.equal(await e2e.panel.waitForTurn(-1, ['completed'], 240_000), 'completed', await e2e.panel.text());
    // The model read the notebook with the prompt: the cells with their indexes, and a digest of their outputs.
    const first = JSON.stringify(e2e.wire.requests.slice(requestsBefore).find((r) => r.body?.messages)?.body ?? {});
    assert.match(first, /works in the user's open notebook \\"analysis\.ipynb\\"/);
    assert.match(first, /\[0\] code, ran as \[1\]\\n│ orders = \[3, 5, 8\]/);
    assert.match(first, /warehouse: Lyon/);
    // Two cells after the selected cell (index 3), in order; the failing cell moved down.
    await nb.waitForCellCount(7);
    const cells = await nb.cells();
    assert.equal(cells[4].source, AGENT_A);
    assert.equal(cells[5].source, AGENT_B);
    assert.equal(cells[6].source, ANALYSIS[4]);
    assert.deepEqual([cells[4].state, cells[5].state], ['success', 'success']);
    assert.deepEqual([cells[4].executionOrder, cells[5].executionOrder], [6, 7], "they ran on the notebook's session, after its five cells");
    assert.match(await nb.streamText(4, /largest: 8/), /largest: 8/);
    assert.match(await nb.streamText(5, /orders total: 16/), /orders total: 16/);
    assert.match(await e2e.panel.lastAnswer(), /largest order is 8/);
    // Each card links to its cell.
    const links = frame.locator('section.card.exec .badge.notebook-cell');
    assert.equal(await links.count(), 2);
    assert.match(await links.first().innerText(), /cell in analysis\.ipynb/);
    await e2e.wb.screenshot('95-notebook-agent-cells');
    // The Variables view shows the notebook's session.
    await e2e.panel.openVariables();
    const vars = await e2e.panel.waitForVariables(
      (rows) => ['df', 'orders', 'largest'].every((n) => rows.some((r) => r.name === n)),
      "the notebook's df, orders and the agent's largest",
    );
    assert.ok(vars.some((r) => r.name === 'df' && /DataFrame/.test(r.type)));
    assert.match((await e2e.panel.variablesHeader()).source, /analysis\.ipynb/);
    // The saved metadata marks them as the agent's (checked after the save below); Ctrl+Z removes the last one.
    await nb.undo();
    await nb.waitForCellCount(6);
    const left = await nb.cells();
    assert.equal(left[4].source, AGENT_A);
    assert.equal(left[5].source, ANALYSIS[4]);
  });

  it('the notebook bar and the cell links read in every theme (WCAG AA) and at 240 px', async () => {
    const failures: string[] = [];
    const f = await e2e.panel.frame();
    for (const theme of THEMES) {
      await applyTheme(e2e.panel, theme);
      const bad = (await (await e2e.panel.frame()).evaluate(textContrast)).filter((x) => x.ratio < x.needed);
      if (bad.length) failures.push(`${theme.label}:\n${bad.map((x) => `${x.what}: ${x.ratio}:1 (${x.fg} on ${x.bg}, needs ${x.needed}:1)`).join('\n')}`);
      await e2e.panel.scrollTo('section.card.exec .badge.notebook-cell', 'last');
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`96-notebook-chat-${theme.slug}`) });
    }
    await applyTheme(e2e.panel, THEMES[0]);
    const before = await e2e.wb.sidebarWidth();
    await e2e.wb.setSidebarWidth(240);
    await waitUntil(
      async () => (await f.evaluate(() => document.documentElement.clientWidth).catch(() => 999)) <= 240,
      UI,
      () => 'the webview never got 240 px wide',
      200,
    );
    const problems = await (await e2e.panel.frame()).evaluate(narrowLayoutProblems);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('96-notebook-chat-240px') });
    await e2e.wb.setSidebarWidth(before);
    assert.deepEqual(failures, [], `texts below WCAG AA contrast:\n${failures.join('\n\n')}`);
    assert.deepEqual(problems, [], 'layout problems of the narrow panel');
  });

  it('keeps the outputs through a save, a close and a reopen', async () => {
    await nb.open('analysis.ipynb');
    await nb.save();
    const saved = JSON.parse(readFileSync(join(e2e.ws.folder, 'analysis.ipynb'), 'utf8')) as {
      cells: Array<{ metadata: Record<string, any>; outputs: Array<{ output_type: string; data?: Record<string, unknown> }>; execution_count: number | null }>;
    };
    assert.equal(saved.cells.length, 6);
    assert.equal(saved.cells[4].metadata.codeact?.author, 'agent', "the agent's cell is marked in its metadata");
    assert.equal(saved.cells[0].outputs[0].output_type, 'stream');
    assert.ok(saved.cells[1].outputs.some((o) => o.output_type === 'display_data' && typeof o.data?.['image/png'] === 'string'));
    assert.ok(saved.cells[2].outputs.some((o) => o.output_type === 'execute_result' && 'text/html' in (o.data ?? {})));
    assert.equal(saved.cells[5].outputs[0].output_type, 'error');
    await nb.close();
    await nb.open('analysis.ipynb');
    const plot = await nb.outputs(1, { until: (o) => o.some((x) => (x.image?.naturalWidth ?? 0) > 0) });
    assert.deepEqual(kinds(plot), ['image']);
    assert.match(await nb.streamText(0, /orders: 3/), /orders: 3/);
    const table = await nb.outputs(2, { until: (o) => o.some((x) => x.kind === 'table') });
    assert.ok(table.some((o) => o.kind === 'table'));
    const reopened = await nb.cells();
    assert.deepEqual(
      reopened.slice(0, 4).map((c) => c.executionOrder),
      [1, 2, 3, 4],
      'the execution numbers are kept',
    );
    await e2e.wb.screenshot('95-notebook-reopened');
    // And it runs again (VS Code brings the kernel selection back; the session is a new one).
    await nb.runCell(0);
    const again = await nb.waitForRun({ cells: [0], before: reopened, timeoutMs: 120_000 });
    assert.equal(again[0].state, 'success');
    assert.equal(again[0].executionOrder, 1);
  });
});
