/**
 * An approval waits for the person, and the editor says the same duration as its hover
 * (point 8), in a real VS Code (code-server 4.139 = VS Code 1.139, the current release) driven in headless Chromium.
 *
 * "Run with Tools" runs a cell that calls `send_note` (approval "ask") with a 3 s timeout. While the card waits,
 * the editor's inline status, the cell's CodeLens and the status bar say so; the person answers after the 3 s
 * have passed, and the run still completes, its tool call timed without the wait. Stop during a pending
 * approval leaves the card "No answer: the run was stopped" (and the log says so), not "Denied". With the
 * panel hidden, the question comes as a modal dialog.
 *
 * Screenshots go to test-artifacts/e2e/ (40-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import type { Locator } from 'playwright-core';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { makeWorkspaceWith } from './support/workspace';

const UI = 60_000;
const RUN = 120_000;
/** The run's timeout: the person takes longer than this to answer. */
const TIMEOUT_S = 3;

const FILE = 'notes.py';
const CELLS = `# %% Send the note
note = await call_tool("send_note", customer_id="ACME-42", text="Your quote is ready.")
print("sent", note["note_id"])
note["note_id"]

# %% Send another
other = await call_tool("send_note", customer_id="ACME-7", text="Second note.")
other["note_id"]

# %% Add up, slowly
import time
time.sleep(1.2)
sum(range(1, 11))
`;
const CELL1 = 1;
const CELL1_LAST = 4;
const CELL2 = 6;
const CELL2_LAST = 8;
const CELL3 = 10;
const CELL3_LAST = 13;
/** The duration at the end of an inline result: "· 7 ms", or "· 1.25 s" from a second on. */
const DURATION = / · (\d+ ms|\d+\.\d\d? s)$/;

describe('e2e: an approval waits for the person', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'approvals',
    workspace: () => makeWorkspaceWith({ [FILE]: CELLS }),
    settings: { 'codeact.timeoutSeconds': TIMEOUT_S },
    minWaitMs: UI,
  });

  /** The status bar entry that says an approval waits. */
  function statusItem(): Locator {
    return e2e.wb.page.locator('.part.statusbar .statusbar-item', { hasText: 'CodeAct: approve' }).first();
  }

  it('Run with Tools: the editor and the status bar say it waits; answered after the timeout, the run completes and the call is timed without the wait', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    await e2e.wb.openFile(FILE);
    await e2e.editor.focus();
    await e2e.editor.clickCodeLens(CELL1, '▶ Run with Tools', UI);
    const card = await e2e.panel.waitForApproval(RUN);
    const asked = Date.now();
    assert.match(await card.innerText(), /send_note[\s\S]*ACME-42/);

    // The editor says what the run waits for, and where to answer.
    const waiting = await e2e.editor.waitForDecoration(/waiting for your approval/, UI);
    assert.match(waiting.text, /^⚑ waiting for your approval of "send_note"/);
    assert.equal(waiting.line, CELL1_LAST, 'at the end of the running cell');
    await waitUntil(
      async () => (await e2e.editor.codeLenses()).some((l) => l.title.includes('Approve "send_note"…') && l.line === CELL1),
      UI,
      () => 'no "Approve" CodeLens above the cell',
      250,
    );
    await statusItem().waitFor({ state: 'visible', timeout: UI });
    assert.match(await statusItem().innerText(), /CodeAct: approve "send_note"\?/);
    await e2e.wb.screenshot('40-approval-waiting-inline-and-status-bar');

    // The person takes longer than the run's timeout to decide.
    await new Promise((r) => setTimeout(r, Math.max(0, TIMEOUT_S * 1000 + 2500 - (Date.now() - asked))));
    assert.equal(await card.getAttribute('data-status'), 'pending', 'the card still waits');
    assert.ok(!(await e2e.editor.decorations()).some((d) => /^[✓✗]/.test(d.text)), 'the run did not end (no timeout while the person decides)');

    // The status bar opens the approval (the panel is visible: its card), and the person allows it.
    await statusItem().click();
    await e2e.panel.decide('Allow once');
    const done = await e2e.editor.waitForDecoration(/^[✓✗] /, RUN);
    assert.equal(done.text.replace(DURATION, ''), '✓ "NOTE-ACME-42-20"', `the run completed: ${done.text}`);
    assert.equal(done.line, CELL1_LAST);
    await statusItem().waitFor({ state: 'hidden', timeout: UI });
    // The tool call's duration leaves the person's time out.
    const f = await e2e.panel.frame();
    const row = f.locator('section.card.exec').last().locator('li.tool-call').first();
    // (The panel shows the call's end a moment after the editor: its events come in batches.)
    let took = '';
    await waitUntil(
      async () =>
        (took = (
          await row
            .locator('.tool-duration')
            .innerText()
            .catch(() => '')
        ).trim()) !== '',
      UI,
      () => 'the send_note call shows no duration in the panel',
      200,
    );
    const ms = /^(\d+) ms$/.test(took) ? Number(took.split(' ')[0]) : /^[\d.]+ s$/.test(took) ? Number(took.split(' ')[0]) * 1000 : NaN;
    assert.ok(ms < TIMEOUT_S * 1000, `the send_note call took ${took}, without the ${TIMEOUT_S}+ s the person took`);
    assert.equal(await row.getAttribute('data-status'), 'ok');
    await row.scrollIntoViewIfNeeded();
    await e2e.wb.screenshot('41-approval-answered-after-the-timeout');
  });

  it('the hover says the same duration as the inline result (point 8)', async () => {
    await e2e.editor.clickCodeLens(CELL3, '▶ Run with Tools', UI);
    const inline = await e2e.editor.waitForDecoration(/^✓ 55 · /, RUN);
    assert.equal(inline.line, CELL3_LAST);
    const duration = DURATION.exec(inline.text)![1];
    assert.match(duration, /^1\.\d\d s$/, 'a run of more than a second, in seconds');
    const hover = await e2e.editor.hoverLine(CELL3_LAST);
    assert.match(
      hover,
      new RegExp(`CodeAct · completed · local[^\\n]* · ${duration.replace('.', '\\.')}\\b`),
      `the hover shows ${duration} as the inline result does:\n${hover}`,
    );
    await e2e.wb.screenshot('42-hover-same-duration-as-inline');
    await e2e.wb.page.keyboard.press('Escape');
  });

  it('Stop during a pending approval: the card and the log say "no answer: the run was stopped", not "Denied"', async () => {
    await e2e.editor.clickCodeLens(CELL2, '▶ Run with Tools', UI);
    const pending = await e2e.panel.waitForApproval(RUN);
    // The card by its id: once answered it is no longer the pending one.
    const card = (await e2e.panel.frame()).locator(`section.card.approval[data-approval-id="${await pending.getAttribute('data-approval-id')}"]`);
    await e2e.editor.waitForDecoration(/waiting for your approval/, UI);
    await e2e.editor.clickCodeLens(CELL2, 'Stop', UI);
    let status = '';
    await waitUntil(
      async () => (status = (await card.getAttribute('data-status')) ?? '') === 'expired',
      UI,
      () => `the card never expired (status ${status})`,
      250,
    );
    const outcome = (await card.locator('.approval-outcome').innerText()).trim();
    assert.equal(outcome, 'No answer: the run was stopped.');
    assert.doesNotMatch(await card.innerText(), /Denied/);
    const stopped = await e2e.editor.waitForDecoration(/^✗ /, RUN);
    assert.equal(stopped.line, CELL2_LAST);
    await card.scrollIntoViewIfNeeded();
    await e2e.wb.screenshot('43-approval-no-answer-stopped');

    await e2e.wb.runCommand('CodeAct: Show Log');
    let log = '';
    await waitUntil(
      async () => /approval appr_\w+: tool send_note -> no answer: the run was stopped/.test((log = await e2e.wb.panelText().catch(() => ''))),
      UI,
      () => `the log never said "no answer: the run was stopped":\n${log.slice(-1500)}`,
      250,
    );
    assert.doesNotMatch(log, /send_note -> deny/);
    await e2e.wb.screenshot('44-log-no-answer');
    await e2e.wb.runCommand('View: Hide Panel');
  });

  it('with the panel hidden, the question comes as a modal dialog, and the status bar still says it waits', async () => {
    await e2e.wb.runCommand('View: Close Primary Side Bar');
    await e2e.wb.openFile(FILE);
    await e2e.editor.focus();
    await e2e.editor.clickCodeLens(CELL2, '▶ Run with Tools', UI);
    const dialog = e2e.wb.page.locator('.monaco-dialog-box').filter({ hasText: 'allow the tool "send_note"' });
    await dialog.waitFor({ state: 'visible', timeout: RUN });
    await statusItem().waitFor({ state: 'visible', timeout: UI });
    // The editor says so too, in place of the earlier run's stale result.
    const waiting = await e2e.editor.waitForDecoration(/waiting for your approval/, UI);
    assert.equal(waiting.line, CELL2_LAST);
    assert.ok(
      !(await e2e.editor.decorations()).some((d) => d.line === CELL2_LAST && /^✗/.test(d.text)),
      "the stopped run's result is gone while this one runs",
    );
    await e2e.wb.screenshot('45-approval-modal-panel-hidden');
    await new Promise((r) => setTimeout(r, TIMEOUT_S * 1000 + 1000));
    await dialog.getByRole('button', { name: 'Allow Once' }).click();
    const done = await e2e.editor.waitForDecoration(/^✓ "NOTE-ACME-7-12"/, RUN);
    assert.equal(done.line, CELL2_LAST);
  });
});
