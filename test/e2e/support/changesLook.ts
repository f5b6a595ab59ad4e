/**
 * What the e2e tests of a card's workspace changes share (workspaceChanges, reviewMode): the model's code that
 * creates, changes and deletes (through a subprocess) a file of the orders example, the person's answer to a
 * confirmation, the diff editor's two sides, and the look of the list in every theme and at 240 px.
 */
import assert from 'node:assert/strict';
import type { Locator } from 'playwright-core';
import { textContrast } from './contrast';
import { artifactPath } from './env';
import { narrowLayoutProblems } from './layout';
import type { CodeServerSuite } from './suite';
import { THEMES, applyTheme } from './themes';

const UI = 60_000;

/** Code that writes data/summary.txt, appends to data/inventory.json and deletes data/customers.json (a subprocess), then evaluates `last`. */
export function changesCode(ws: string, last = '"written"'): string {
  return (
    `import os, subprocess, sys\nW = ${JSON.stringify(ws)}\n` +
    `open(W + "/data/summary.txt", "w").write("3 customers\\n")\n` +
    `open(W + "/data/inventory.json", "a").write("\\n")\n` +
    `subprocess.run([sys.executable, "-c", "import os; os.remove('data/customers.json')"], cwd=W, check=True)\n` +
    last
  );
}

/** Waits for the workbench dialog whose text matches `title`, takes screenshot `shot` if asked, and clicks `action`. */
export async function answerDialog(e2e: CodeServerSuite, title: RegExp, action: string, shot?: string): Promise<void> {
  const dialog = e2e.wb.page.locator('.monaco-dialog-box').filter({ hasText: title });
  await dialog.waitFor({ state: 'visible', timeout: UI });
  if (shot) await e2e.wb.screenshot(shot);
  await dialog.getByRole('button', { name: action, exact: true }).click();
}

/** Clicks Diff on the card's changed inventory.json and checks VS Code's diff editor shows both sides; screenshot `shot`. */
export async function checkInventoryDiff(e2e: CodeServerSuite, section: Locator, shot: string): Promise<void> {
  await section
    .locator('li.change-changed')
    .getByRole('button', { name: /^Compare/ })
    .click();
  await e2e.wb.page.locator('.tabs-container .tab', { hasText: 'inventory.json (before the execution' }).first().waitFor({ timeout: UI });
  // Both sides drawn: the earlier text (the store's copy) on the left, the file now on the right.
  const diff = e2e.wb.page.locator('.monaco-diff-editor').first();
  await diff.locator('.editor.original .view-lines', { hasText: 'on_hand' }).waitFor({ timeout: UI });
  await diff.locator('.editor.modified .view-lines', { hasText: 'on_hand' }).waitFor({ timeout: UI });
  await e2e.wb.screenshot(shot);
  await e2e.wb.closeActiveEditor();
}

/**
 * In every theme the texts matching `what` meet WCAG AA (a screenshot `<themed>-<theme>` of each), and at 240 px
 * nothing sticks out (screenshot `narrow`).
 */
export async function checkChangesLook(e2e: CodeServerSuite, what: RegExp, themed: string, narrow: string): Promise<void> {
  const failures: string[] = [];
  for (const theme of THEMES) {
    await applyTheme(e2e.panel, theme);
    const f = await e2e.panel.frame();
    const bad = (await f.evaluate(textContrast)).filter((s) => s.ratio < s.needed && what.test(s.what));
    if (bad.length) failures.push(`${theme.label}:\n${bad.map((s) => `${s.what}: ${s.ratio}:1 (${s.fg} on ${s.bg}, needs ${s.needed}:1)`).join('\n')}`);
    await e2e.panel.scrollTo('section.card.exec .changes-section');
    await e2e.panel.sidebar.screenshot({ path: artifactPath(`${themed}-${theme.slug}`) });
  }
  await applyTheme(e2e.panel, THEMES[0]);
  assert.deepEqual(failures, [], `texts below WCAG AA contrast:\n${failures.join('\n\n')}`);

  const before = await e2e.wb.sidebarWidth();
  await e2e.wb.setSidebarWidth(240);
  try {
    const f = await e2e.panel.frame();
    await e2e.panel.scrollTo('section.card.exec .changes-section');
    assert.deepEqual(await f.evaluate(narrowLayoutProblems), []);
    await e2e.panel.sidebar.screenshot({ path: artifactPath(narrow) });
  } finally {
    await e2e.wb.setSidebarWidth(before);
  }
}
