/**
 * An approval shows the whole arguments, in a real VS Code (code-server 4.139 = VS Code 1.139, the current release) driven in headless Chromium:
 * with the panel hidden, an approval whose arguments do not fit in the modal dialog says how much it
 * leaves out and offers "Open Full Arguments"; that opens every argument in a read-only editor, and the
 * question comes back as a notification (which leaves the editor free to read); "Allow Once" there runs
 * the call.
 *
 * Screenshots go to test-artifacts/e2e/ (47-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { makeWorkspaceWith } from './support/workspace';

const UI = 60_000;
const RUN = 120_000;
const FILE = 'long_note.py';
const IBAN = 'IBAN-DE89-3704-0044-0532-0130-00';
const CELLS = `# %% Send a long note
note = await call_tool("send_note", customer_id="ACME-42", text=("lorem ipsum " * 250) + "pay to ${IBAN}")
note["note_id"]
`;

describe('e2e: an approval dialog that cannot show everything opens the rest', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({ name: 'approval-full', workspace: () => makeWorkspaceWith({ [FILE]: CELLS }), minWaitMs: UI });

  it('says what it leaves out, opens the full arguments read-only, and asks again in a notification', async () => {
    const { wb, editor } = e2e;
    await wb.runCommand('View: Close Primary Side Bar');
    await wb.openFile(FILE);
    await editor.focus();
    await editor.clickCodeLens(1, '▶ Run with Tools', UI);
    const dialog = wb.page.locator('.monaco-dialog-box').filter({ hasText: 'allow the tool "send_note"' });
    await dialog.waitFor({ state: 'visible', timeout: RUN });
    const text = await dialog.innerText();
    assert.match(
      text,
      /NOT SHOWN HERE: 1 argument \(all or part of it\), \d+ lines?, [\d,]+ characters\. "Open Full Arguments" shows all of them in an editor before you decide\. Allowing here approves all of them/,
    );
    assert.ok(!text.includes(IBAN), 'the end of the text does not fit in the dialog');
    await wb.screenshot('47-approval-dialog-not-shown');
    await dialog.getByRole('button', { name: 'Open Full Arguments' }).click();

    // Every argument, in an editor that refuses edits.
    const doc = wb.page.locator('.editor-group-container.active .monaco-editor').first();
    const docText = async () => (await doc.innerText().catch(() => '')).replace(/\u00a0/g, ' ');
    await waitUntil(
      async () => /"customer_id": "ACME-42"/.test(await docText()),
      UI,
      () => 'the full arguments did not open in an editor',
      200,
    );
    // VS Code 1.139 draws a tab's name and extension in separate elements (innerText "approval-1\n.json").
    assert.match((await wb.page.locator('.tabs-container .tab.active').innerText()).replace(/\s+/g, ''), /approval-\d+\.json/);
    await doc.click();
    await wb.page.keyboard.press('Control+Home');
    await wb.page.keyboard.press('ArrowDown');
    await wb.page.keyboard.press('ArrowDown');
    await wb.page.keyboard.press('End');
    await waitUntil(
      async () => (await docText()).includes(IBAN),
      UI,
      () => `the end of the arguments (${IBAN}) is not in the editor`,
      200,
    );
    await wb.page.keyboard.type('EDITED');
    await wb.page.waitForTimeout(500);
    assert.ok(!(await docText()).includes('EDITED'), 'the document is read-only');
    const toast = await wb.waitForNotification(/allow the tool "send_note"\? All of its arguments are open in the editor/, UI);
    await wb.screenshot('48-approval-full-arguments-open');
    await toast.getByRole('button', { name: 'Allow Once' }).click();

    await wb.openFile(FILE);
    const done = await editor.waitForDecoration(/^✓ "NOTE-ACME-42-\d+"/, RUN);
    assert.equal(done.line, 3);
  });
});
