/**
 * An MCP server's form (elicitation) in a real VS Code (code-server) driven in headless
 * Chromium, with a real stdio MCP server (test/fixtures/mcp/elicitServer.mjs) declared in codeact.tools.
 *
 * "Run with Tools" runs a cell whose tool asks for a form, with a 3 s run timeout. With the panel open the
 * form is in the code card: an invalid email is refused there field by field, the corrected answer is
 * sent after the 3 s have passed, and the run completes. With the panel hidden the form comes as a
 * dialog and a quick input per field.
 *
 * Screenshots go to test-artifacts/e2e/ (70-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { useCodeServer } from './support/suite';
import { makeWorkspace, SEND_NOTE_TOOL } from './support/workspace';
import { writeFileSync } from 'node:fs';

const UI = 60_000;
const RUN = 120_000;
const TIMEOUT_S = 3;
const ROOT = join(__dirname, '..', '..');
const ASK_TOOL = { name: 'ask', mcp: { command: [process.execPath, join(ROOT, 'test', 'fixtures', 'mcp', 'elicitServer.mjs')], tool: 'ask' } };

const FILE = 'ask.py';
const CELLS = `# %% Ask for the recipient
r = await call_tool("ask", form="profile")
r["action"] + " " + r.get("content", {}).get("email", "-")
`;
const CELL = 1;
const CELL_LAST = 3;

describe('e2e: an MCP server asks for a form', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'elicitation',
    workspace: () => {
      const ws = makeWorkspace([SEND_NOTE_TOOL, ASK_TOOL]);
      writeFileSync(join(ws.folder, FILE), CELLS);
      return ws;
    },
    settings: { 'codeact.timeoutSeconds': TIMEOUT_S },
    minWaitMs: UI,
  });

  it('panel open: the form is in the code card; an invalid email is refused there; answered after the timeout, the run completes', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    const frame = await e2e.panel.frame(UI);
    await e2e.wb.openFile(FILE);
    await e2e.editor.focus();
    await e2e.editor.clickCodeLens(CELL, '▶ Run with Tools', UI);
    const form = frame.locator('.card.exec .elicitation[data-status="open"]');
    await form.waitFor({ state: 'visible', timeout: RUN });
    assert.match(await form.innerText(), /asks for input[\s\S]*While running the tool ask[\s\S]*Who should the report go to\?/);
    await form.getByLabel('Name').fill('Ada');
    await form.getByLabel('Email').fill('not-an-email');
    await form.getByRole('button', { name: 'Accept' }).click();
    const problem = form.locator('.elicit-problem:not([hidden])');
    await problem.first().waitFor({ state: 'visible', timeout: UI });
    assert.deepEqual(await problem.allInnerTexts(), ['Email must match format "email".']);
    await form.scrollIntoViewIfNeeded();
    await e2e.wb.screenshot('70-elicitation-invalid-email');
    // The person takes longer than the run's timeout: the clock does not run while the form is open.
    await new Promise((r) => setTimeout(r, TIMEOUT_S * 1000 + 1000));
    await form.getByLabel('Email').fill('ada@example.com');
    await form.getByRole('button', { name: 'Accept' }).click();
    const done = await e2e.editor.waitForDecoration(/^✓ "accept ada@example\.com"/, RUN);
    assert.equal(done.line, CELL_LAST);
    const card = frame.locator('.elicitation').last();
    assert.match(await card.locator('.approval-outcome').innerText(), /Sent to the server/);
    await e2e.wb.screenshot('71-elicitation-sent');
  });

  it("panel hidden: a dialog with the server's message, then a quick input per field, checked as typed", async () => {
    await e2e.wb.runCommand('View: Close Primary Side Bar');
    await e2e.wb.openFile(FILE);
    await e2e.editor.focus();
    await e2e.editor.clickCodeLens(CELL, '▶ Run with Tools', UI);
    const page = e2e.wb.page;
    const dialog = page.locator('.monaco-dialog-box').filter({ hasText: 'asks for input' });
    await dialog.waitFor({ state: 'visible', timeout: RUN });
    assert.match(await dialog.innerText(), /Who should the report go to\?/);
    await e2e.wb.screenshot('72-elicitation-dialog');
    await dialog.getByRole('button', { name: 'Fill In…' }).click();
    const quick = page.locator('.quick-input-widget');
    const input = quick.locator('input.input');
    const step = async (title: RegExp, text: string) => {
      await quick.locator('.quick-input-title', { hasText: title }).waitFor({ state: 'visible', timeout: UI });
      await input.fill(text);
      await input.press('Enter');
    };
    await step(/Name \(required\) \(1\/7\)/, 'Ada');
    await quick.locator('.quick-input-title', { hasText: /Email/ }).waitFor({ state: 'visible', timeout: UI });
    await input.fill('not-an-email');
    await quick.locator('.quick-input-message', { hasText: 'Email must match format "email".' }).waitFor({ state: 'visible', timeout: UI });
    await e2e.wb.screenshot('73-elicitation-quick-input-invalid');
    await input.fill('grace@example.com');
    await input.press('Enter');
    await step(/Age \(3\/7\)/, '');
    await step(/Urgent \(4\/7\)/, 'Yes');
    await step(/Team \(5\/7\)/, 'Operations');
    await step(/Site \(6\/7\)/, 'Berlin');
    await step(/Due \(7\/7\)/, '');
    const done = await e2e.editor.waitForDecoration(/^✓ "accept grace@example\.com"/, RUN);
    assert.equal(done.line, CELL_LAST);
  });
});
