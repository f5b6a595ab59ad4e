/**
 * Declaration errors are actionable, in a real VS Code (code-server 4.139 = VS Code 1.139, the current release)
 * driven in headless Chromium: a workspace whose `codeact.tools` has one broken entry (`"type": "objekt"` in its
 * inputSchema). VS Code's notification, the "Managed Tools" list and the log name the tool, the field, the bad
 * value, why, and the fix; the validator's own wording never shows; the other tools stay ready.
 *
 * Screenshots go to test-artifacts/e2e/ (50-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { makeWorkspace, SEND_NOTE_TOOL } from './support/workspace';

const UI = 60_000;

/** A tool whose inputSchema has a typo in its type. */
const BROKEN_TOOL = {
  name: 'search_orders',
  description: 'Search the orders.',
  command: ['python3', 'tools/e2e_tools.py', 'send_note'],
  inputSchema: { type: 'objekt', properties: { query: { type: 'string' } }, required: ['query'] },
};

/** What the user must read: the tool, the field, the bad value, why, and the fix. */
const EXPLAINED = /codeact\.tools\[4\] \(search_orders\): In inputSchema, "type": "objekt" is not a JSON Schema type\. Fix: write "object"/;
/** The validator's own wording, which must never reach the user. */
const RAW = /data\/type|must be equal to one of the allowed values|must match a schema in anyOf|invalid JSON Schema/;

describe('e2e: a broken codeact.tools entry says what to fix', function () {
  this.timeout(600_000);
  const e2e = useCodeServer({ name: 'declarations', workspace: () => makeWorkspace([SEND_NOTE_TOOL, BROKEN_TOOL]), minWaitMs: UI });

  it('the notification names the tool, the field, the bad value, why and the fix, and how many tools are ready', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    await e2e.wb.waitForNotification(/codeact\.tools/, UI);
    const toast = (await e2e.wb.notifications()).find((n) => /codeact\.tools/.test(n.message))!;
    assert.match(toast.message, /^CodeAct: A tool in codeact\.tools is broken and unavailable \(4 ready\)\./);
    assert.match(toast.message, EXPLAINED);
    assert.doesNotMatch(toast.message, RAW);
    assert.deepEqual(toast.buttons, ['Open Settings', 'Show Log']);
    // The other four tools are ready.
    assert.match(await e2e.panel.text(), /4 tools ready, 1 broken/);
    await e2e.wb.screenshot('50-broken-tool-notification');
    await e2e.wb.clearNotifications();
  });

  it('"CodeAct: Show Managed Tools" lists the broken entry with the same explanation; so does the log', async () => {
    await e2e.wb.runCommand('CodeAct: Show Managed Tools');
    const widget = e2e.wb.page.locator('.quick-input-widget');
    const row = widget.locator('.monaco-list-row', { hasText: 'codeact.tools[4]' }).first();
    await row.waitFor({ state: 'visible', timeout: UI });
    const text = (await row.innerText()).replace(/\s+/g, ' ');
    assert.match(text, /search_orders/);
    assert.match(text, /"type": "objekt" is not a JSON Schema type/);
    assert.doesNotMatch(text, RAW);
    await e2e.wb.screenshot('51-broken-tool-in-managed-tools');
    await e2e.wb.dismissQuickInput();

    await e2e.wb.runCommand('CodeAct: Show Log');
    let log = '';
    await waitUntil(
      async () => EXPLAINED.test((log = (await e2e.wb.panelText().catch(() => '')).replace(/\s+/g, ' '))),
      UI,
      () => `the log never explained the broken tool:\n${log.slice(-1500)}`,
      250,
    );
    assert.doesNotMatch(log, RAW);
    await e2e.wb.screenshot('52-broken-tool-in-log');
  });
});
