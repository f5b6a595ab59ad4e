/**
 * Review mode (codeact.sandbox.reviewWrites) in a real VS Code (code-server) driven in headless Chromium, with a
 * scripted model on loopback and the workspace mounted `readwrite` in bubblewrap: the model's code creates a file,
 * changes one and deletes one (through a subprocess); none of it reaches the workspace; the card says "3 files
 * changed · staged, not in the workspace yet" with Keep on each row and Keep All; the model is told the changes are
 * staged. Keep (after the person confirms) puts one file in the workspace, Revert gives the code back a deleted one,
 * Keep All the rest; the label counts what is still staged, then says "reviewed". Every text meets WCAG AA in the
 * dark, light and both high contrast themes (screenshots of each) and nothing sticks out at 240 px. CodeAct: Review
 * Staged Changes… lists what two runs staged in one quick pick and keeps them all; both cards then say kept.
 *
 * Skips with one line when code-server, Chromium or bubblewrap is missing.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { turn } from '../support/wire/turn';
import { answerDialog, changesCode, checkChangesLook, checkInventoryDiff } from './support/changesLook';
import { artifactPath } from './support/env';
import { useCodeServer } from './support/suite';
import { THEMES, applyTheme } from './support/themes';

const UI = 60_000;
const MODEL = 'qwen2.5-coder:7b';
const EXAMPLE = join(__dirname, '..', '..', 'examples', 'orders');

describe('e2e: review mode — the code’s writes are staged on its card until kept', function () {
  this.timeout(600_000);
  const e2e = useCodeServer({
    name: 'reviewMode',
    wire: ['openai-compatible', 'ollama'],
    settings: (url) => ({
      'codeact.provider': 'openai-compatible',
      'codeact.baseURL': url,
      'codeact.model': MODEL,
      'codeact.sandbox.kind': 'bubblewrap',
      'codeact.sandbox.mountWorkspace': 'readwrite',
      'codeact.sandbox.reviewWrites': true,
    }),
    minWaitMs: UI,
  });

  before(async function () {
    const reason = await probeBubblewrap();
    if (reason) {
      console.log(`      skipped: ${reason}`);
      this.skip();
    }
  });

  const label = async () => {
    const frame = await e2e.panel.frame();
    return frame.locator('.card.exec').last().locator('.changes-section summary > span').first().textContent();
  };

  it('stages what the code wrote: nothing in the workspace, the card lists it with Keep, the model is told', async () => {
    const ws = e2e.ws.folder;
    const code = changesCode(ws, 'sorted(os.listdir(W + "/data"))');
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    e2e.wire.push(turn().call('execute_tool_code', { code }), turn().text('Wrote the summary and tidied the data folder.'));
    await e2e.panel.send('Summarise the customers into data/summary.txt and remove the customer file.');
    assert.equal(await e2e.panel.waitForTurn(0, ['completed'], UI), 'completed', await e2e.panel.text());
    // The code saw its own writes; the workspace has none of them.
    assert.ok(!existsSync(join(ws, 'data', 'summary.txt')), 'summary.txt is not in the workspace');
    assert.ok(existsSync(join(ws, 'data', 'customers.json')), 'customers.json is still in the workspace');
    assert.deepEqual(readFileSync(join(ws, 'data', 'inventory.json')), readFileSync(join(EXAMPLE, 'data', 'inventory.json')));

    const frame = await e2e.panel.frame();
    const section = frame.locator('.card.exec').last().locator('.changes-section');
    await section.waitFor({ state: 'visible', timeout: UI });
    assert.equal(await label(), '3 files changed · staged, not in the workspace yet');
    const rows = await section
      .locator('li.change')
      .evaluateAll((els) => els.map((el) => `${el.className.replace(/^change change-/, '')} ${el.querySelector('.change-path')!.textContent}`));
    assert.deepEqual(rows, ['deleted data/customers.json', 'changed data/inventory.json', 'created data/summary.txt']);
    assert.deepEqual(await section.locator('li.change-created button').evaluateAll((els) => els.map((b) => b.textContent)), ['Diff', 'Open', 'Keep', 'Revert']);
    await section.getByRole('button', { name: /^Keep every staged file/ }).waitFor({ state: 'visible', timeout: UI });

    const told = JSON.stringify(e2e.wire.turns.at(-1)!.body);
    assert.match(told, /created data\/summary\.txt[^]*staged for the user's review/);

    await e2e.panel.scrollTo('section.card.exec .changes-section');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('103-review-staged-dark') });
    await applyTheme(
      e2e.panel,
      THEMES.find((t) => t.slug === 'light')!,
    );
    await e2e.panel.sidebar.screenshot({ path: artifactPath('103-review-staged-light') });
    await applyTheme(e2e.panel, THEMES[0]);

    // Diff: the file before the execution against the code's staged version, in VS Code's diff editor.
    await checkInventoryDiff(e2e, section, '103b-review-staged-diff');
  });

  it('Keep puts one file in the workspace after the person confirms; Revert gives one back to the code; Keep All the rest', async () => {
    const ws = e2e.ws.folder;
    const frame = await e2e.panel.frame();
    const section = frame.locator('.card.exec').last().locator('.changes-section');
    const confirm = (title: RegExp, action: string, shot?: string) => answerDialog(e2e, title, action, shot);

    await section.locator('li.change-created').getByRole('button', { name: /^Keep/ }).click();
    await confirm(/Keep data\/summary\.txt in the workspace\?/, 'Keep', '104-review-keep-confirm');
    await section.locator('li.change-created[data-reverted="kept"]').waitFor({ timeout: UI });
    assert.equal(readFileSync(join(ws, 'data', 'summary.txt'), 'utf8'), '3 customers\n');
    assert.ok(existsSync(join(ws, 'data', 'customers.json')), 'the deletion is still only staged');
    assert.equal(await label(), '3 files changed · 2 still staged');
    assert.deepEqual(
      await section.locator('li.change-created button').evaluateAll((els) => els.map((b) => b.textContent)),
      ['Diff', 'Open'],
      'a kept file has nothing left to keep or revert',
    );

    // Revert the deletion: the code's view has the file again, the workspace never lost it.
    await section
      .locator('li.change-deleted')
      .getByRole('button', { name: /^Revert/ })
      .click();
    await confirm(/to before this execution\?/, 'Revert');
    await section.locator('li.change-deleted[data-reverted="true"]').waitFor({ timeout: UI });
    assert.equal(await label(), '3 files changed · 1 still staged');

    await section.getByRole('button', { name: /^Keep every staged file/ }).click();
    await confirm(/Keep data\/inventory\.json in the workspace\?/, 'Keep');
    await section.locator('li.change-changed[data-reverted="kept"]').waitFor({ timeout: UI });
    assert.equal(await label(), '3 files changed · reviewed');
    assert.deepEqual(
      readFileSync(join(ws, 'data', 'inventory.json')),
      Buffer.concat([readFileSync(join(EXAMPLE, 'data', 'inventory.json')), Buffer.from('\n')]),
    );
    assert.deepEqual(readFileSync(join(ws, 'data', 'customers.json')), readFileSync(join(EXAMPLE, 'data', 'customers.json')));
    await section.getByRole('button', { name: /^Keep every staged file/ }).waitFor({ state: 'hidden', timeout: UI });

    // The code sees the workspace's customers.json again.
    e2e.wire.push(
      turn().call('execute_tool_code', { code: `import os\nos.path.exists(${JSON.stringify(join(ws, 'data', 'customers.json'))})` }),
      turn().text('It is back.'),
    );
    await e2e.panel.send('Is the customer file there?');
    assert.equal(await e2e.panel.waitForTurn(1, ['completed'], UI), 'completed', await e2e.panel.text());
    assert.ok(JSON.stringify(e2e.wire.turns.at(-1)!.body).includes('\\"value\\":true'), 'the code sees the file again');
  });

  it('in every theme its texts meet WCAG AA; at 240 px nothing sticks out', async () => {
    await checkChangesLook(e2e, /change/, '105-review-kept', '106-review-narrow');
  });

  it('Review Staged Changes lists what every run staged, in one place; Keep All puts it in the workspace after the person confirms; each card says kept', async () => {
    const ws = e2e.ws.folder;
    const write = (name: string, text: string) => ({ code: `open(${JSON.stringify(join(ws, 'data', name))}, "w").write(${JSON.stringify(text)})` });
    e2e.wire.push(
      turn().call('execute_tool_code', write('first.txt', 'one\n')),
      turn().call('execute_tool_code', write('second.txt', 'two\n')),
      turn().text('Wrote two notes.'),
    );
    await e2e.panel.send('Write two notes.');
    assert.equal(await e2e.panel.waitForTurn(2, ['completed'], UI), 'completed', await e2e.panel.text());
    assert.ok(!existsSync(join(ws, 'data', 'first.txt')) && !existsSync(join(ws, 'data', 'second.txt')), 'both are only staged');

    await e2e.wb.runCommand('CodeAct: Review Staged Changes…');
    const pick = e2e.wb.quickInput;
    await pick.locator('.quick-input-title', { hasText: 'Review Staged Changes (2 files not in the workspace yet)' }).waitFor({ timeout: UI });
    const rows = await pick.locator('.monaco-list-row:visible .label-name').evaluateAll((els) => els.map((e) => (e as HTMLElement).innerText.trim()));
    // (the separator's label is a row of its own in some VS Code versions)
    assert.deepEqual(
      rows.filter((r) => r !== 'Staged files'),
      ['Keep All in the Workspace', 'Revert All', 'data/first.txt', 'data/second.txt'],
    );
    await e2e.wb.screenshot('107-review-staged-changes');
    // One file: its Diff, the workspace's side (none: it is new) against the code's staged text.
    assert.ok(await e2e.wb.answerQuickPick(/Review Staged Changes/, 'data/first.txt'));
    await pick.locator('.quick-input-title', { hasText: 'created data/first.txt' }).waitFor({ timeout: UI });
    assert.ok(await e2e.wb.answerQuickPick(/created data\/first\.txt/, 'Diff'));
    await e2e.wb.page.locator('.tabs-container .tab', { hasText: 'first.txt (workspace ↔ staged)' }).first().waitFor({ timeout: UI });
    await e2e.wb.page.locator('.monaco-diff-editor .editor.modified .view-lines', { hasText: 'one' }).first().waitFor({ timeout: UI });
    // No hover over the text (the breadcrumbs' tooltip of the folder clicked last).
    await e2e.wb.page.mouse.move(900, 600);
    await e2e.wb.page.keyboard.press('Escape');
    await e2e.wb.page
      .locator('.monaco-hover:visible, .workbench-hover:visible')
      .first()
      .waitFor({ state: 'hidden', timeout: 5_000 })
      .catch(() => undefined);
    await e2e.wb.screenshot('107a-review-staged-diff');
    await e2e.wb.closeActiveEditor();
    assert.ok(!existsSync(join(ws, 'data', 'first.txt')), 'a diff keeps nothing');

    await e2e.wb.runCommand('CodeAct: Review Staged Changes…');
    await pick.locator('.quick-input-title', { hasText: 'Review Staged Changes (2 files not in the workspace yet)' }).waitFor({ timeout: UI });
    assert.ok(await e2e.wb.answerQuickPick(/Review Staged Changes/, 'Keep All in the Workspace'));
    await answerDialog(e2e, /Keep 2 files in the workspace\?/, 'Keep', '107b-review-staged-keep-all');
    await e2e.wb.waitForNotification(/Kept 2 files in the workspace\./, UI);
    assert.equal(readFileSync(join(ws, 'data', 'first.txt'), 'utf8'), 'one\n');
    assert.equal(readFileSync(join(ws, 'data', 'second.txt'), 'utf8'), 'two\n');
    const frame = await e2e.panel.frame();
    const cards = frame.locator('.card.exec');
    for (const i of [-2, -1]) {
      const section = cards.nth((await cards.count()) + i).locator('.changes-section');
      await section.locator('li.change-created[data-reverted="kept"]').waitFor({ timeout: UI });
      assert.equal(await section.locator('summary > span').first().textContent(), '1 file changed · reviewed');
    }

    // Nothing is left: the command says so.
    await e2e.wb.clearNotifications();
    await e2e.wb.runCommand('CodeAct: Review Staged Changes…');
    await e2e.wb.waitForNotification(/nothing is staged\. Every change the code made is kept or reverted\./, UI);
  });
});
