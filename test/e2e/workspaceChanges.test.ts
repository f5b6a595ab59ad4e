/**
 * "N files changed" in a real VS Code (code-server) driven in headless Chromium, with a scripted model on
 * loopback and the workspace mounted `readwrite` in bubblewrap: the model's code creates a file, changes
 * one and deletes one (the last through a subprocess); the card lists exactly those three, Open shows the
 * new file in an editor, Diff opens VS Code's diff editor, Revert (after the person confirms) removes the new
 * file and Revert All puts the other two back byte for byte; the model's next request has the same list, and
 * "Rewind to here" on the next card puts the Python state and the files back (after the person confirms), the
 * model's next request says so, and Redo brings them back; every text meets WCAG AA in the dark, light and both high
 * contrast themes (screenshots of each) and nothing sticks out at 240 px.
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

describe('e2e: what the code changed in the workspace — "3 files changed" on the card, Open, and the model told', function () {
  this.timeout(600_000);
  const e2e = useCodeServer({
    name: 'workspaceChanges',
    wire: ['openai-compatible', 'ollama'],
    settings: (url) => ({
      'codeact.provider': 'openai-compatible',
      'codeact.baseURL': url,
      'codeact.model': MODEL,
      'codeact.sandbox.kind': 'bubblewrap',
      'codeact.sandbox.mountWorkspace': 'readwrite',
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

  it('lists the created, changed and deleted files on the card; Open shows the new file; the model reads the list', async () => {
    const ws = e2e.ws.folder;
    const code = changesCode(ws);
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    e2e.wire.push(turn().call('execute_tool_code', { code }), turn().text('Wrote the summary and tidied the data folder.'));
    await e2e.panel.send('Summarise the customers into data/summary.txt and remove the customer file.');
    assert.equal(await e2e.panel.waitForTurn(0, ['completed'], UI), 'completed', await e2e.panel.text());
    assert.ok(existsSync(join(ws, 'data', 'summary.txt')) && !existsSync(join(ws, 'data', 'customers.json')), 'the code ran in the workspace');

    const frame = await e2e.panel.frame();
    const section = frame.locator('.card.exec').last().locator('.changes-section');
    await section.waitFor({ state: 'visible', timeout: UI });
    assert.equal(await section.locator('summary > span').first().textContent(), '3 files changed');
    const rows = await section
      .locator('li.change')
      .evaluateAll((els) => els.map((el) => `${el.className.replace(/^change change-/, '')} ${el.querySelector('.change-path')!.textContent}`));
    assert.deepEqual(rows, ['deleted data/customers.json', 'changed data/inventory.json', 'created data/summary.txt']);
    assert.deepEqual(
      await section.locator('li.change-deleted button').evaluateAll((els) => els.map((b) => b.textContent)),
      ['Diff', 'Revert'],
      'a deleted file has Diff and Revert, no Open',
    );

    // The model's next request has the same list with the result.
    const told = JSON.stringify(e2e.wire.turns.at(-1)!.body);
    assert.match(told, /workspace_changes[^]*deleted data\/customers\.json[^]*changed data\/inventory\.json[^]*created data\/summary\.txt/);

    await e2e.panel.scrollTo('section.card.exec .changes-section');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('95-workspace-changes-dark') });

    await section.locator('li.change-created').getByRole('button', { name: /^Open/ }).click();
    await e2e.wb.page.locator('.tabs-container .tab', { hasText: 'summary.txt' }).first().waitFor({ timeout: UI });
    await e2e.wb.closeActiveEditor();

    // Diff: the file before the execution against the file now, in VS Code's diff editor.
    await checkInventoryDiff(e2e, section, '95b-workspace-changes-diff');
  });

  it('Revert puts one file back after the person confirms; Revert All the rest, byte for byte', async () => {
    const ws = e2e.ws.folder;
    const frame = await e2e.panel.frame();
    const section = frame.locator('.card.exec').last().locator('.changes-section');
    const confirm = () => answerDialog(e2e, /to before this execution\?/, 'Revert', '98-workspace-changes-confirm');

    await section
      .locator('li.change-created')
      .getByRole('button', { name: /^Revert/ })
      .click();
    await confirm();
    await section.locator('li.change-created[data-reverted]').waitFor({ timeout: UI });
    assert.ok(!existsSync(join(ws, 'data', 'summary.txt')), 'the file the code made is gone');
    assert.deepEqual(
      await section.locator('li.change-created button').evaluateAll((els) => els.map((b) => b.textContent)),
      ['Diff'],
      'a reverted new file has nothing to open or revert',
    );
    assert.ok(!existsSync(join(ws, 'data', 'customers.json')), 'the others are not reverted yet');

    await section.getByRole('button', { name: /^Revert every file/ }).click();
    await confirm();
    await section.locator('li.change-deleted[data-reverted]').waitFor({ timeout: UI });
    await section.locator('li.change-changed[data-reverted]').waitFor({ timeout: UI });
    for (const f of ['customers.json', 'inventory.json'])
      assert.deepEqual(readFileSync(join(ws, 'data', f)), readFileSync(join(EXAMPLE, 'data', f)), `${f} is back byte for byte`);
    await e2e.panel.scrollTo('section.card.exec .changes-section');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('99-workspace-changes-reverted') });
  });

  it('Rewind to here puts the Python state and the files back after the person confirms; Redo brings them back; the model is told', async () => {
    const ws = e2e.ws.folder;
    const inventory = join(ws, 'data', 'inventory.json');
    const original = readFileSync(inventory);
    const code =
      `import os\nW = ${JSON.stringify(ws)}\nmarker = "turn 2"\n` +
      `open(W + "/data/summary.txt", "w").write("again\\n")\nos.remove(W + "/data/inventory.json")\n"done"`;
    e2e.wire.push(turn().call('execute_tool_code', { code }), turn().text('Rewrote the summary and removed the inventory.'));
    await e2e.panel.send('Write the summary again and remove the inventory file.');
    assert.equal(await e2e.panel.waitForTurn(1, ['completed'], UI), 'completed', await e2e.panel.text());
    assert.ok(!existsSync(inventory) && existsSync(join(ws, 'data', 'summary.txt')));

    const frame = await e2e.panel.frame();
    const card = frame.locator('.card.exec').last();
    const confirm = (title: RegExp, action: string, shot?: string) => answerDialog(e2e, title, action, shot);
    await card.hover();
    await card.locator('button.rewind-here').click();
    await confirm(/Rewind to before this execution\?/, 'Code Only', '100-rewind-confirm');
    const note = card.locator('.rewound-note');
    await note.waitFor({ state: 'visible', timeout: UI });
    assert.equal(
      (await note.locator('.rewound-text').textContent())?.trim(),
      'Rewound to before this execution. Python state restored. Files: 1 file put back, 1 file removed.',
    );
    assert.deepEqual(readFileSync(inventory), original, 'inventory.json is back byte for byte');
    assert.ok(!existsSync(join(ws, 'data', 'summary.txt')), 'summary.txt is gone (the first card reverted it before turn 2)');
    await e2e.panel.scrollTo('.rewound-note:not([hidden])');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('101-rewind-done-dark') });
    await applyTheme(
      e2e.panel,
      THEMES.find((t) => t.slug === 'light')!,
    );
    await e2e.panel.sidebar.screenshot({ path: artifactPath('101-rewind-done-light') });
    await applyTheme(e2e.panel, THEMES[0]);

    // The model's next request says what was rewound; its code finds the variable gone.
    e2e.wire.push(turn().call('execute_tool_code', { code: '"marker" in globals()' }), turn().text('The marker is gone.'));
    await e2e.panel.send('Is the marker still there?');
    assert.equal(await e2e.panel.waitForTurn(2, ['completed'], UI), 'completed', await e2e.panel.text());
    const told = JSON.stringify(e2e.wire.turns.at(-2)!.body);
    assert.match(told, /The user rewound the code to before execution 2\.[^]*Python state: restored/);
    const result = JSON.stringify(e2e.wire.turns.at(-1)!.body);
    assert.ok(result.includes('\\"value\\":false'), `the variable set by the rewound execution is gone: ${result.slice(-600)}`);

    // Redo: the state just before the rewind.
    // (The card rewound is no longer the last one: the note is found by itself.)
    const rewoundNote = frame.locator('.rewound-note:not([hidden])');
    await rewoundNote.getByRole('button', { name: 'Redo' }).click();
    await confirm(/Redo: go back to the state just before the rewind\?/, 'Redo');
    await rewoundNote.locator('.rewound-text', { hasText: /^Redone\./ }).waitFor({ timeout: UI });
    assert.ok(!existsSync(inventory) && readFileSync(join(ws, 'data', 'summary.txt'), 'utf8') === 'again\n', 'turn 2 files are back');

    // The conversation, from the last turn's message: the turn leaves the panel, its prompt is back in the chat box,
    // the whole conversation is kept in History, and the model's next request has neither the turn nor its answer.
    const turns = frame.locator('.turn');
    assert.equal(await turns.count(), 3);
    const message = turns.last().locator('.user-msg');
    await message.hover();
    await message.locator('button.turn-rewind').click();
    await confirm(/Rewind to before this message\?/, 'Conversation Only', '102-rewind-conversation-confirm');
    await frame
      .locator('.notice', { hasText: /Rewound the conversation to before turn 3; from there on, 1 turn is kept in History as ".*\(before rewind\)"/ })
      .waitFor({ timeout: UI });
    assert.equal(await turns.count(), 2);
    assert.equal(await frame.locator('textarea.prompt-input').inputValue(), 'Is the marker still there?');
    // At the end of what is left, where the conversation goes on.
    await frame.locator('.jump-latest').waitFor({ state: 'hidden', timeout: UI });
    await e2e.panel.sidebar.screenshot({ path: artifactPath('102-rewind-conversation-dark') });
    e2e.wire.push(turn().text('Nothing ran since.'));
    await e2e.panel.send('What changed?');
    assert.equal(await e2e.panel.waitForTurn(2, ['completed'], UI), 'completed', await e2e.panel.text());
    const after = JSON.stringify(e2e.wire.turns.at(-1)!.body);
    assert.match(
      after,
      /The user rewound the conversation to before their message \\"Is the marker still there\?\\" \(turn 3\): 1 turn was taken out of this conversation\. The Python session and the workspace files were not rewound with it\./,
    );
    assert.ok(!after.includes('The marker is gone.'), 'the turn rewound away is not in the history sent');
  });

  it('in every theme its texts meet WCAG AA; at 240 px nothing sticks out', async () => {
    await checkChangesLook(e2e, /change|rewound/, '96-workspace-changes', '97-workspace-changes-narrow');
  });
});
