/**
 * The packaged extension in a real VS Code (code-server 4.139 = VS Code 1.139, the current release), driven in headless
 * Chromium like a user would: the command palette, the chat view, approval cards, Stop, Run with Tools
 * and Workspace Trust. The model is a loopback wire server speaking the OpenAI Chat Completions
 * streaming format (the `openai-compatible` provider, as with Ollama or vLLM); the code really runs in
 * the extension's local Python runtime and calls the managed tools of a copy of examples/orders.
 *
 * Screenshots go to test-artifacts/e2e/. Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';
import { ChatPanel } from './support/chatPanel';
import { CodeServer, fileSize, packageExtension } from './support/codeServer';
import { Editor } from './support/editor';
import { skipUnlessE2E } from './support/env';
import { processesWith, waitUntil } from './support/procs';
import { throttle, type Throttle } from './support/throttle';
import { Workbench, launchChromium } from './support/workbench';
import { makeWorkspace, type Workspace } from './support/workspace';

const MODEL = 'qwen2.5-coder:7b';

function providerSettings(baseUrl: string): Record<string, unknown> {
  return {
    'codeact.provider': 'openai-compatible',
    'codeact.baseURL': baseUrl,
    'codeact.model': MODEL,
    'codeact.timeoutSeconds': 90,
  };
}

const SEARCH_CODE = `import asyncio

chairs = await call_tool("search_catalog", query="ergonomic office chair", max_price=600)
stock = await asyncio.gather(*(call_tool("check_inventory", sku=c["sku"]) for c in chairs))
for c, s in zip(chairs, stock):
    print(f"{c['sku']}: {c['name']} at {c['price']:.2f} EUR, {s['on_hand']} on hand")
best = min((c for c, s in zip(chairs, stock) if s["in_stock"]), key=lambda c: c["price"])
return best
`;

const NOTE_CODE = `note = await call_tool("send_note", customer_id="ACME-42", text="Your quote is ready.")
print("sent", note["note_id"])
return note
`;

describe('e2e: CodeAct in code-server + headless Chromium', function () {
  this.timeout(240_000);
  let ws: Workspace | undefined;
  let wire: WireServer | undefined;
  let slow: Throttle | undefined;
  let cs: CodeServer | undefined;
  let browser: Browser | undefined;
  let wb: Workbench;
  let panel: ChatPanel;
  let editor: Editor;

  before(async function () {
    skipUnlessE2E(this);
    const vsix = await packageExtension();
    console.log(`      packaged ${vsix} (${(fileSize(vsix) / 1024).toFixed(0)} KiB)`);
    ws = makeWorkspace();
    wire = await startServerFor('openai-compatible', 'openai');
    // Events reach the extension 40 ms apart, so the code visibly streams into the panel.
    slow = await throttle(wire, 40);
    cs = await CodeServer.start({ vsix, workspace: ws.folder, settings: providerSettings(slow.url), name: 'trusted' });
    browser = await launchChromium();
    wb = await Workbench.open(browser, cs.folderUrl);
    // A user who trusts this folder answers the Workspace Trust dialog.
    await wb.trustFolder();
    panel = new ChatPanel(wb);
    editor = new Editor(wb);
  });

  after(async function () {
    if (wb && this.currentTest?.state === 'failed') await wb.screenshot('zz-trusted-failure').catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    await slow?.close();
    await wire?.close();
    ws?.dispose();
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && wb) {
      const path = await wb.screenshot(`failed-${this.currentTest.title.replace(/\W+/g, '-').slice(0, 60)}`).catch(() => '');
      console.log(`      screenshot of the failure: ${path}`);
    }
  });

  it('opens the chat from the command palette and shows the empty state', async () => {
    await wb.runCommand('CodeAct: Open Chat');
    const empty = await panel.emptyState();
    await empty.waitFor({ state: 'visible', timeout: 30_000 });
    const text = await empty.innerText();
    assert.match(text, /Put your tools to work/);
    assert.match(text, new RegExp(`Model: ${MODEL.replace(/[.:]/g, '\\$&')}`));
    assert.match(text, /4 tools ready/, 'the three tools of examples/orders plus send_note');
    assert.match(text, /search_catalog, check_inventory, create_quote, send_note/);
    assert.doesNotMatch(text, /not trusted/);
    await wb.screenshot('01-chat-empty-state');

    // Activation time, as the extension logs it to its "CodeAct" output channel.
    await wb.runCommand('CodeAct: Show Log');
    const log = await waitForPanelText(wb, /CodeAct activated in [\d.]+ ms/);
    const ms = /CodeAct activated in ([\d.]+) ms/.exec(log)![1];
    await wb.screenshot('01b-codeact-log');
    await wb.runCommand('View: Hide Panel');
    const vscodeMs = await wb.activationTime('CodeAct');
    console.log(
      `      activation: ${vscodeMs ?? '?'} ms as VS Code measures it (Show Running Extensions: loading the bundle + activate), ${ms} ms inside activate()`,
    );
  });

  it('looks finished at the default sidebar width: opens at the top, no control sticks out of its box', async () => {
    const problems = await panel.overflowing();
    const titleTop = await (await panel.frame()).locator('.empty-title').evaluate((el) => el.getBoundingClientRect().top);
    if (titleTop < 0) problems.push(`the empty state opens scrolled down: its title is ${Math.round(-titleTop)} px above the top of the view`);
    assert.deepEqual(problems, [], 'layout problems of the chat view at the default sidebar width');
  });

  it('sends a prompt: the code streams in, the tool calls, output and answer show', async () => {
    wire!.push(
      turn()
        .call('execute_tool_code', { code: SEARCH_CODE }, { chunkSize: 6 })
        .with({ usage: { input: 812, output: 164 } }),
      turn()
        .text('The cheapest ergonomic office chair in stock is the **ErgoFlex Office Chair** (CHR-ERG-100) at 289.00 EUR, with 12 on hand.', { chunkSize: 5 })
        .with({ usage: { input: 1030, output: 38 } }),
    );
    const before = wire!.turns.length;
    await panel.send('Which ergonomic office chair under 600 EUR is in stock?');

    // While the model writes: a card in "writing" state whose code grows.
    let partial = '';
    await waitUntil(
      async () => {
        const statuses = await panel.execStatuses().catch(() => []);
        partial = await panel.lastCode().catch(() => '');
        return statuses.at(-1) === 'writing' && partial.length > 20 && partial.length < SEARCH_CODE.length - 20;
      },
      30_000,
      () => `never saw the code streaming into a "writing" card (last code seen: ${JSON.stringify(partial)})`,
      60,
    );
    await wb.screenshot('02-code-streaming');
    assert.ok(
      SEARCH_CODE.startsWith(partial.replace(/\n+$/, '')) || normalise(SEARCH_CODE).startsWith(normalise(partial)),
      `the streamed code is a prefix of the code: ${JSON.stringify(partial)}`,
    );

    const status = await panel.waitForTurn(-1, ['completed'], 90_000);
    assert.equal(status, 'completed', await panel.text());
    assert.equal(normalise(await panel.lastCode()), normalise(SEARCH_CODE));
    const calls = await panel.lastToolCalls();
    assert.deepEqual(
      calls.map((c) => `${c.name}:${c.status}`),
      ['search_catalog:ok', 'check_inventory:ok', 'check_inventory:ok'],
    );
    const output = await panel.lastOutput();
    assert.match(output, /CHR-ERG-100: ErgoFlex Office Chair at 289\.00 EUR, 12 on hand/);
    assert.match(output, /CHR-ERG-200: ErgoFlex Pro Office Chair at 449\.00 EUR, 1 on hand/);
    assert.deepEqual(await panel.execStatuses().then((s) => s.at(-1)), 'done');
    const card = await panel.lastTurnExecCards();
    assert.match(await card.last().innerText(), /Result/i);
    assert.match(await panel.lastAnswer(), /ErgoFlex Office Chair.*289\.00 EUR/s);
    // The model saw the execution's result on its second request.
    assert.equal(wire!.turns.length - before, 2);
    const second = JSON.stringify(wire!.turns.at(-1)!.body.messages);
    assert.match(second, /CHR-ERG-100/);
    // Expand a tool call to show its arguments and result, then take the picture.
    const f = await panel.frame();
    await f.locator('section.card.exec').last().locator('li.tool-call summary').first().click();
    await wb.screenshot('03-answer-with-tool-calls');
  });

  it('asks before a tool marked "ask" runs; "Allow once" lets it complete', async () => {
    wire!.push(turn().call('execute_tool_code', { code: NOTE_CODE }, { chunkSize: 24 }), turn().text('Done: the note went to ACME-42.'));
    await panel.send('Tell ACME-42 their quote is ready.');
    const card = await panel.waitForApproval(60_000);
    const cardText = await card.innerText();
    assert.match(cardText, /Allow send_note to run\?/);
    assert.match(cardText, /ACME-42/);
    assert.match(cardText, /Your quote is ready\./);
    assert.deepEqual(await panel.execStatuses().then((s) => s.at(-1)), 'waiting');
    const onScreen = await card.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return r.top >= 0 && r.top < window.innerHeight;
    });
    if (!onScreen) console.log('      note: the pending approval card was below the fold (the panel did not follow the transcript); scrolled to it');
    await card.scrollIntoViewIfNeeded();
    await wb.screenshot('04-approval-card');

    await panel.decide('Allow once');
    const status = await panel.waitForTurn(-1, ['completed'], 60_000);
    assert.equal(status, 'completed', await panel.text());
    const resolved = (await panel.frame()).locator('section.card.approval').last();
    assert.equal(await resolved.getAttribute('data-status'), 'resolved');
    assert.match(await resolved.innerText(), /Allowed once/);
    assert.deepEqual(await panel.lastToolCalls(), [{ name: 'send_note', status: 'ok' }]);
    assert.match(await panel.lastOutput(), /sent NOTE-ACME-42-20/);
    assert.match(await panel.lastAnswer(), /the note went to ACME-42/);
    await wb.screenshot('05-approved-and-done');
  });

  it('Stop ends a long run and its whole process tree', async () => {
    const marker = `codeact-e2e-stop-${randomBytes(4).toString('hex')}`;
    const code = `import subprocess, sys, time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "${marker}"])
print("child started", child.pid, flush=True)
time.sleep(300)
`;
    wire!.push(turn().call('execute_tool_code', { code }, { chunkSize: 40 }));
    await panel.send('Run the slow job.');
    await waitUntil(
      () => processesWith(marker).length > 0,
      60_000,
      () => `the marker process (${marker}) never started; panel:\n${''}`,
    );
    await panel.waitForText(/child started/, 30_000);
    const running = processesWith(marker);
    await wb.screenshot('06-long-run');

    await panel.clickStop();
    const status = await panel.waitForTurn(-1, ['stopped'], 30_000);
    assert.equal(status, 'stopped', await panel.text());
    await waitUntil(
      () => processesWith(marker).length === 0,
      15_000,
      () => `Stop left processes behind: ${JSON.stringify(processesWith(marker))} (were ${JSON.stringify(running)})`,
    );
    // The composer is back: Send instead of Stop.
    const f = await panel.frame();
    await f.getByRole('button', { name: 'Send', exact: true }).waitFor({ state: 'visible', timeout: 10_000 });
    await wb.screenshot('07-stopped');
    // The card of a stopped run says so (not "Failed").
    assert.equal((await panel.execStatuses()).at(-1), 'stopped', 'status of the execution card of the stopped run');
  });

  it('"CodeAct: Run with Tools" on order_desk.py shows the result inline and in the panel', async () => {
    await wb.openFile('order_desk.py');
    await editor.focus();
    await wb.runCommand('CodeAct: Run with Tools');
    const deco = await editor.waitForDecoration(/✓|✗/, 90_000);
    assert.match(deco.text, /^✓ /, `the run failed: ${deco.text}`);
    assert.match(deco.text, /"quote_id"/);
    assert.match(deco.text, /· (\d+ ms|\d+\.\d\d? s)$/, 'the duration follows the value');
    const lines = await editor.lines();
    const last = lines.findIndex((l) => l.startsWith('return quote'));
    assert.ok(last >= 0, `"return quote" is on screen: ${JSON.stringify(lines)}`);
    await wb.screenshot('08-run-with-tools-inline');

    // The run also shows in the panel, as the first "Run with Tools" turn of the file's own conversation, with its tool calls.
    const f = await panel.frame();
    await waitUntil(
      async () => (await f.locator('.conv-title').innerText()) === 'order_desk.py',
      60_000,
      () => 'the panel did not switch to the "order_desk.py" conversation',
    );
    await panel.waitForTurn(0, ['completed'], 60_000);
    const t = f.locator('article.turn').nth(0);
    assert.equal(await t.getAttribute('data-status'), 'completed');
    assert.match(await t.locator('.user-msg').innerText(), /Run with Tools[\s\S]*order_desk\.py/);
    const calls = await panel.lastToolCalls();
    assert.equal(calls.filter((c) => c.name === 'search_catalog').length, 2);
    assert.equal(calls.filter((c) => c.name === 'create_quote').length, 1);
    assert.ok(
      calls.every((c) => c.status === 'ok'),
      JSON.stringify(calls),
    );
    assert.match(await panel.lastOutput(), /Quote Q-\d+ for Acme Robotics/);

    // Hovering the result shows stdout and the value.
    const hover = await editor.hoverLine(deco.line);
    assert.match(hover, /stdout/);
    assert.match(hover, /quote_id/);
    await wb.screenshot('09-run-with-tools-hover');
  });
});

describe('e2e: CodeAct in an untrusted folder', function () {
  this.timeout(180_000);
  let ws: Workspace | undefined;
  let wire: WireServer | undefined;
  let cs: CodeServer | undefined;
  let browser: Browser | undefined;
  let wb: Workbench;
  let panel: ChatPanel;

  before(async function () {
    skipUnlessE2E(this);
    const vsix = await packageExtension();
    ws = makeWorkspace(undefined, 'codeact-e2e-untrusted-');
    wire = await startServerFor('openai-compatible', 'openai');
    cs = await CodeServer.start({
      vsix,
      workspace: ws.folder,
      // Trust is on, the folder was never trusted, and VS Code does not ask: Restricted Mode.
      settings: { ...providerSettings(wire.url), 'security.workspace.trust.startupPrompt': 'never', 'workbench.colorTheme': 'Default Light Modern' },
      name: 'untrusted',
    });
    browser = await launchChromium();
    wb = await Workbench.open(browser, cs.folderUrl);
    panel = new ChatPanel(wb);
  });

  after(async function () {
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    await wire?.close();
    ws?.dispose();
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && wb) {
      const path = await wb.screenshot(`failed-untrusted-${this.currentTest.title.replace(/\W+/g, '-').slice(0, 50)}`).catch(() => '');
      console.log(`      screenshot of the failure: ${path}`);
    }
  });

  it('shows the restriction in the chat, and "Run with Tools" explains it with "Manage Workspace Trust"', async () => {
    await waitUntil(
      () => wb.inRestrictedMode(),
      20_000,
      () => 'the status bar never showed Restricted Mode',
    );
    assert.equal(await wb.trustDialog(1000), undefined, 'no trust prompt with startupPrompt: never');

    await wb.runCommand('CodeAct: Open Chat');
    const empty = await panel.emptyState();
    await empty.waitFor({ state: 'visible', timeout: 30_000 });
    const text = await empty.innerText();
    assert.match(text, /Restricted mode/);
    assert.match(text, /not trusted/);
    assert.match(text, /Declare the tools the code may call/, 'workspace-declared tools are ignored without trust');
    const f = await panel.frame();
    await f.getByRole('note').getByRole('button', { name: 'Manage Workspace Trust' }).waitFor({ state: 'visible' });
    await wb.screenshot('10-untrusted-chat');
    const overflow = await panel.overflowing();

    // Sending a prompt is refused with one notice in the panel (no toast on top of it), and nothing reaches the model.
    await panel.send('Which orders are late?');
    await waitUntil(
      async () => (await panel.notices()).some((n) => /not trusted/.test(n.text)),
      15_000,
      () => 'no notice in the panel',
    );
    await panel.send('Which orders are late, really?');
    await new Promise((r) => setTimeout(r, 500));
    const notices = await panel.notices();
    assert.equal(notices.filter((n) => /not trusted/.test(n.text)).length, 1, 'the same notice is shown once');
    assert.equal((await wb.notifications()).filter((x) => /not trusted/.test(x.message)).length, 0, 'no toast repeats the panel notice');
    const notice = notices.find((n) => /not trusted/.test(n.text))!;
    assert.ok(notice.buttons.includes('Manage Workspace Trust'), JSON.stringify(notice));
    assert.equal(await panel.turnCount(), 0, 'no turn started');
    assert.equal(wire!.requests.length, 0, 'no request reached the model');
    await wb.screenshot('11-untrusted-send-refused');
    await wb.clearNotifications();

    // Run with Tools from the palette on order_desk.py.
    await wb.openFile('order_desk.py');
    await new Editor(wb).focus();
    await wb.runCommand('CodeAct: Run with Tools');
    const toast = await wb.waitForNotification(/Running code with tools is disabled because this workspace is not trusted/, 20_000);
    const n = (await wb.notifications()).find((x) => /Running code with tools/.test(x.message))!;
    assert.deepEqual(n.buttons, ['Manage Workspace Trust']);
    await wb.screenshot('12-untrusted-run-with-tools');

    // The button opens VS Code's Workspace Trust editor.
    await toast.getByRole('button', { name: 'Manage Workspace Trust' }).click();
    await wb.page.locator('.tabs-container .tab.active', { hasText: 'Workspace Trust' }).waitFor({ timeout: 15_000 });
    const trustEditor = wb.page.locator('.editor-instance .workspace-trust-editor').first();
    await waitUntil(
      async () => /Restricted Mode/.test(await trustEditor.innerText().catch(() => '')),
      15_000,
      () => 'the Workspace Trust editor never said "Restricted Mode"',
    );
    await wb.screenshot('13-manage-workspace-trust');
    assert.equal(wire!.requests.length, 0);
    // Last, as it is cosmetic: the restriction notices and buttons fit the default sidebar width.
    assert.deepEqual(overflow, [], 'controls sticking out of their boxes in the untrusted panel');
  });
});

function normalise(code: string): string {
  return code
    .replace(/\u00a0/g, ' ')
    .replace(/\s+$/g, '')
    .replace(/[ \t]+\n/g, '\n');
}

async function waitForPanelText(wb: Workbench, re: RegExp, timeoutMs = 20_000): Promise<string> {
  let text = '';
  await waitUntil(
    async () => {
      text = await wb.panelText().catch(() => '');
      return re.test(text);
    },
    timeoutMs,
    () => `the panel never showed ${re}; it shows:\n${text.slice(-1500)}`,
    200,
  );
  return text;
}
