/**
 * Sessions in a real VS Code (code-server 4.139 = VS Code 1.139, the current release) driven in headless Chromium: a
 * Python file with two `# %%` cells, run one after the other with "Run with Tools". The second cell
 * uses what the first defined and shows its value inline; the chat panel's "Session variables" view
 * lists the variables; "CodeAct: Restart Session" ends the session, and the second cell then fails
 * with a NameError, shown inline and as a diagnostic.
 *
 * Screenshots go to test-artifacts/e2e/ (20-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import type { ChatPanel } from './support/chatPanel';
import { artifactPath } from './support/env';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { makeWorkspaceWith } from './support/workspace';

/** UI conditions get at least a minute: the machine is small and shared. */
const UI = 60_000;
/** A run includes starting the session's guest (and the sandbox): give it more. */
const RUN = 120_000;

const FILE = 'readings.py';
// Lines are 1-based below, as the editor shows them.
const CELLS = `# %% Load the readings
readings = [10, 20, 30]
total = sum(readings)


def mean(xs):
    return sum(xs) / len(xs)


print(f"loaded {len(readings)} readings")

# %% Summarise them
doubled = total * 2
f"total={total}, doubled={doubled}, mean={mean(readings):.1f}"
`;
const CELL1_MARKER = 1;
const CELL1_LAST = 10; // print(...)
const CELL2_MARKER = 12;
const CELL2_USES_TOTAL = 13; // doubled = total * 2
const CELL2_LAST = 14; // the f-string, the cell's value
const CELL2_VALUE = '"total=60, doubled=120, mean=20.0"';
/** The duration at the end of an inline result: "· 7 ms", or "· 1.25 s" from a second on. */
const DURATION = / · (\d+ ms|\d+\.\d\d? s)$/;

describe('e2e: sessions — # %% cells build on one another; the variables view; Restart Session', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'sessions',
    workspace: () => makeWorkspaceWith({ [FILE]: CELLS }),
    // No model is needed: Run with Tools runs the code itself.
    settings: { 'codeact.timeoutSeconds': 90 },
    minWaitMs: UI,
  });

  it('runs cell 1, then cell 2 uses its variables and shows the value inline', async () => {
    await e2e.wb.openFile(FILE);
    await e2e.editor.focus();
    // A "▶ Run with Tools" lens above each cell.
    await waitUntil(
      async () => (await e2e.editor.codeLenses().catch(() => [])).filter((l) => l.title === '▶ Run with Tools').length === 2,
      UI,
      () => 'the two "▶ Run with Tools" CodeLenses never showed',
      250,
    );
    assert.deepEqual(
      (await e2e.editor.codeLenses()).filter((l) => l.title === '▶ Run with Tools').map((l) => l.line),
      [CELL1_MARKER, CELL2_MARKER],
      'one lens above each # %% marker',
    );

    // Cell 1 with its CodeLens.
    await e2e.editor.clickCodeLens(CELL1_MARKER, '▶ Run with Tools', UI);
    const first = await e2e.editor.waitForDecoration(/^[✓✗]/, RUN);
    assert.match(first.text, new RegExp(`^✓${DURATION.source}$`), `cell 1 ran (no value: its last statement is a print): ${first.text}`);
    assert.equal(first.line, CELL1_LAST, 'the result sits at the end of cell 1');

    // Cell 2 with its CodeLens (while a run is on, the lenses say "Stop"; this waits for "▶ Run with Tools").
    await e2e.editor.clickCodeLens(CELL2_MARKER, '▶ Run with Tools', UI);
    const second = await e2e.editor.waitForDecoration(/^✓ "total=/, RUN);
    assert.match(second.text, new RegExp(`${DURATION.source}$`), 'the duration follows the value');
    assert.equal(second.text.replace(DURATION, ''), `✓ ${CELL2_VALUE}`, `cell 2 computed from cell 1's total, readings and mean: ${second.text}`);
    assert.equal(second.line, CELL2_LAST, 'the value sits at the end of cell 2');
    assert.deepEqual(await e2e.editor.errorSquiggleLines(), [], 'no diagnostic');
    await e2e.wb.screenshot('20-cells-inline-results');

    const hover = await e2e.editor.hoverLine(CELL2_LAST);
    assert.match(hover, /completed/);
    assert.match(hover, /total=60, doubled=120, mean=20\.0/);
    await e2e.wb.page.keyboard.press('Escape');
  });

  it("the chat panel's variables view lists the cell's variables with their types and summaries", async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    await waitUntil(
      async () => (await e2e.panel.variablesBadge().catch(() => '')) !== '',
      UI,
      () => 'the variables toggle never showed a count',
      250,
    );
    const badge = await e2e.panel.variablesBadge();
    await e2e.panel.openVariables(UI);
    const rows = await e2e.panel.waitForVariables((r) => ['readings', 'total'].every((n) => r.some((v) => v.name === n)), 'readings and total', UI);
    const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
    assert.deepEqual(byName.readings, { name: 'readings', type: 'list', summary: '[10, 20, 30]' });
    assert.deepEqual(byName.total, { name: 'total', type: 'int', summary: '60' });
    assert.deepEqual(byName.mean, { name: 'mean', type: 'function', summary: 'mean(xs)' });
    assert.deepEqual(byName.doubled, { name: 'doubled', type: 'int', summary: '120' });
    assert.deepEqual(
      rows.map((r) => r.name),
      ['doubled', 'mean', 'readings', 'total'],
      "the user's variables, sorted, and nothing of the guest's own",
    );
    assert.equal(badge, String(rows.length), 'the badge counts the variables');
    // What the session's rewind checkpoints hold, against their budgets (codeact.rewind.*).
    const held = (await e2e.panel.frame()).locator('section.variables-panel .variables-checkpoints');
    assert.match((await held.textContent({ timeout: UI })) ?? '', /^Rewind checkpoints: [1-9]\d* of 10 · (under 1 MB|[\d.]+ MB) of 1\.0 GB$/);
    const head = await e2e.panel.variablesHeader();
    assert.deepEqual(head, { title: 'Variables', source: FILE, buttons: ['Refresh variables', 'Restart session'] }, "the section names the document's session");
    await (await e2e.panel.frame()).locator('section.variables-panel').scrollIntoViewIfNeeded();
    await e2e.wb.screenshot('21-variables-view-dark');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('21b-variables-view-dark-sidebar') });
    assert.deepEqual(await variablesLayoutProblems(e2e.panel), [], 'layout of the variables view at the default sidebar width');
  });

  it('fits a narrow sidebar (300 px, and 240 px) and a light theme', async () => {
    const before = await e2e.wb.sidebarWidth();
    const narrow = await e2e.wb.setSidebarWidth(300);
    assert.ok(Math.abs(narrow - 300) <= 12, `the sidebar is about 300 px wide (${narrow})`);
    await e2e.panel.waitForVariables((r) => r.length === 4, 'its 4 rows at 300 px', UI);
    await e2e.wb.screenshot('22-variables-view-300px');
    assert.deepEqual(await variablesLayoutProblems(e2e.panel), [], 'layout of the variables view at 300 px');
    // Narrower than VS Code's default for this window, where a user squeezes the sidebar.
    const narrower = await e2e.wb.setSidebarWidth(240);
    console.log(`      sidebar: ${before} px by default, then ${narrow} px and ${narrower} px by dragging its sash`);
    assert.ok(Math.abs(narrower - 240) <= 12, `the sidebar is about 240 px wide (${narrower})`);
    await e2e.panel.waitForVariables((r) => r.length === 4, 'its 4 rows at 240 px', UI);
    await e2e.wb.screenshot('22b-variables-view-240px');
    assert.deepEqual(await variablesLayoutProblems(e2e.panel), [], 'layout of the variables view at 240 px');
    await e2e.wb.setSidebarWidth(before);

    await e2e.wb.setColorTheme('Light Modern', 'vs', UI);
    const f = await e2e.panel.frame(UI);
    await waitUntil(
      () => f.evaluate(() => document.body.classList.contains('vscode-light')).catch(() => false),
      UI,
      () => 'the chat webview never switched to the light theme',
      250,
    );
    await e2e.panel.waitForVariables((r) => r.length === 4, 'its 4 rows in the light theme', UI);
    await e2e.wb.screenshot('23-variables-view-light');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('23b-variables-view-light-sidebar') });
    await e2e.wb.setColorTheme('Dark Modern', 'vs-dark', UI);
  });

  it('"CodeAct: Restart Session" ends the session: cell 2 then fails with a NameError, inline', async () => {
    await e2e.wb.clearNotifications();
    await e2e.wb.runCommand('CodeAct: Restart Session');
    // With more than one live session the command asks which (this file's); with one it restarts it. Either
    // way it ends with a notification saying a live session was restarted.
    let asked = false;
    await waitUntil(
      async () => {
        if (await e2e.wb.answerQuickPick('CodeAct: Restart Session', FILE)) asked = true;
        return (await e2e.wb.notifications()).some((n) => /CodeAct: /.test(n.message) && /session/.test(n.message));
      },
      UI,
      () => 'Restart Session neither asked which session nor said what it did',
      250,
    );
    const said = (await e2e.wb.notifications()).find((n) => /session/.test(n.message))!.message;
    assert.match(said, /the Python session was restarted; its variables are gone/, `a live session was restarted${asked ? ' (picked from the list)' : ''}`);
    // The view follows: no variables, no count.
    await e2e.panel.waitForVariables((r) => r.length === 0, 'no rows after the restart', UI);
    await waitUntil(
      async () => (await e2e.panel.variablesBadge()) === '',
      UI,
      () => 'the count badge stayed after the restart',
      250,
    );
    assert.match(await e2e.panel.variablesText(), /No live session|No variables/i);
    await e2e.wb.screenshot('24-after-restart');
    await e2e.wb.clearNotifications();

    // Cell 2 again, this time with the command and the cursor in the cell.
    await e2e.wb.openFile(FILE);
    await e2e.editor.goToLine(CELL2_USES_TOTAL);
    await e2e.wb.runCommand('CodeAct: Run with Tools');
    const failed = await e2e.editor.waitForDecoration(/^✗ /, RUN);
    assert.equal(failed.text.replace(DURATION, ''), "✗ NameError: name 'total' is not defined");
    assert.equal(failed.line, CELL2_LAST, 'the ✗ sits at the end of cell 2');
    // The diagnostic is on the line that uses `total`, not at the end of the cell.
    await waitUntil(
      async () => (await e2e.editor.errorSquiggleLines()).includes(CELL2_USES_TOTAL),
      UI,
      () => 'no error squiggle on the line that uses total',
      250,
    );
    const decos = await e2e.editor.decorations();
    assert.ok(!decos.some((d) => d.text.includes('total=60')), `the old value is gone: ${JSON.stringify(decos)}`);
    await e2e.wb.screenshot('25-nameerror-after-restart');

    const hover = await e2e.editor.hoverLine(CELL2_LAST);
    assert.match(hover, /NameError: name 'total' is not defined/);
    assert.doesNotMatch(hover, /codeact_lib|codeact_guest|\/tmp\//, 'the traceback shows no frame of ours and no host path');
    await e2e.wb.page.keyboard.press('Escape');

    // The fresh session holds none of the old names.
    await e2e.panel.waitForVariables((r) => !r.some((v) => ['readings', 'total', 'mean'].includes(v.name)), 'none of the old variables', UI);
  });
});

/** Controls and cells of the variables section that stick out of it, or out of the page. */
async function variablesLayoutProblems(panel: ChatPanel): Promise<string[]> {
  const f = await panel.frame();
  return f.evaluate(() => {
    const out: string[] = [];
    const section = document.querySelector('section.variables-panel');
    if (!section) return ['no variables section'];
    const s = section.getBoundingClientRect();
    const page = document.documentElement.clientWidth;
    if (s.right > page + 0.5) out.push(`the section sticks out of the page by ${Math.round(s.right - page)} px`);
    for (const el of Array.from(section.querySelectorAll<HTMLElement>('button, table, td, th, .variables-label'))) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (r.right > s.right + 0.5)
        out.push(
          `${el.tagName.toLowerCase()}.${el.className} "${(el.textContent ?? '').trim().slice(0, 30)}" sticks out by ${Math.round(r.right - s.right)} px`,
        );
    }
    for (const td of Array.from(section.querySelectorAll<HTMLElement>('td.var-name'))) {
      if (td.scrollWidth > td.clientWidth + 1) out.push(`the name "${td.textContent}" is cut off (${td.clientWidth} of ${td.scrollWidth} px)`);
    }
    const head = section.querySelector('.variables-head')?.getBoundingClientRect();
    const toggle = document.querySelector('button.variables-toggle')?.getBoundingClientRect();
    if (head && toggle && toggle.right > page + 0.5) out.push('the header toggle sticks out of the page');
    return out;
  });
}
