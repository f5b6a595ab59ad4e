/**
 * Issue 12, point 6: the chat panel narrow, light and high-contrast, in a real VS Code (code-server 4.100.3
 * = VS Code 1.100) driven in headless Chromium. A conversation with code, tool calls, output, a result, an
 * answer with code and a table, an approval and an error card is read in Dark Modern, Light Modern and both
 * High Contrast themes (switched through the `workbench.colorTheme` setting): every text and badge must meet
 * WCAG AA contrast, computed from the rendered styles. At VS Code's narrowest sidebar (170 px) and at 240 px
 * nothing may be clipped sideways.
 *
 * Screenshots: test-artifacts/e2e/60-…. Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';
import { ChatPanel } from './support/chatPanel';
import { CodeServer, packageExtension } from './support/codeServer';
import { textContrast, type ContrastSample } from './support/contrast';
import { artifactPath, skipUnlessE2E } from './support/env';
import { narrowLayoutProblems } from './support/layout';
import { waitUntil } from './support/procs';
import { THEMES, applyTheme } from './support/themes';
import { Workbench, launchChromium } from './support/workbench';
import { makeWorkspace, type Workspace } from './support/workspace';

/** UI conditions get a minute: the machine is small and shared. */
const UI = 60_000;
const MODEL = 'qwen2.5-coder:7b';

const SEARCH_CODE = `import asyncio

chairs = await call_tool("search_catalog", query="ergonomic office chair", max_price=600)
stock = await asyncio.gather(*(call_tool("check_inventory", sku=c["sku"]) for c in chairs))
for c, s in zip(chairs, stock):
    print(f"{c['sku']}: {c['name']} at {c['price']:.2f} EUR, {s['on_hand']} on hand")
best = min((c for c, s in zip(chairs, stock) if s["in_stock"]), key=lambda c: c["price"])
return {"best": best, "checked": [s["sku"] for s in stock], "note": "cheapest chair that is in stock, with its warehouse and price"}
`;

const ANSWER = [
  'The cheapest ergonomic chair in stock is the **ErgoFlex Office Chair** (`CHR-ERG-100`) at 289.00 EUR.',
  '',
  '| SKU | Price | On hand |',
  '|---|---:|---:|',
  '| CHR-ERG-100 | 289.00 | 12 |',
  '| CHR-ERG-200 | 449.00 | 1 |',
  '',
  'To order it again:',
  '',
  '```python',
  'quote = await call_tool("create_quote", customer_id="ACME-42", lines=[{"sku": "CHR-ERG-100", "qty": 2}])',
  '```',
].join('\n');

const NOTE_CODE = `note = await call_tool("send_note", customer_id="ACME-42", text="Your quote is ready.")
print("sent", note["note_id"])
return note
`;

describe('e2e: the panel narrow, light and high-contrast (issue 12, point 6)', function () {
  this.timeout(900_000);
  let ws: Workspace | undefined;
  let wire: WireServer | undefined;
  let cs: CodeServer | undefined;
  let browser: Browser | undefined;
  let wb: Workbench;
  let panel: ChatPanel;

  before(async function () {
    skipUnlessE2E(this);
    this.timeout(300_000);
    const vsix = await packageExtension();
    ws = makeWorkspace();
    wire = await startServerFor('openai-compatible', 'openai');
    cs = await CodeServer.start({
      vsix,
      workspace: ws.folder,
      settings: { 'codeact.provider': 'openai-compatible', 'codeact.baseURL': wire.url, 'codeact.model': MODEL, 'codeact.timeoutSeconds': 90 },
      name: 'themes',
    });
    browser = await launchChromium();
    wb = await Workbench.open(browser, cs.folderUrl);
    wb.minWaitMs = UI;
    await wb.trustFolder();
    panel = new ChatPanel(wb);
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    await wire?.close();
    ws?.dispose();
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && wb) {
      const path = await wb.screenshot(`failed-themes-${this.currentTest.title.replace(/\W+/g, '-').slice(0, 50)}`).catch(() => '');
      console.log(`      screenshot of the failure: ${path}`);
    }
  });

  /** The texts below WCAG AA in the current theme. */
  async function lowContrast(): Promise<ContrastSample[]> {
    const samples = await (await panel.frame()).evaluate(textContrast);
    assert.ok(samples.length > 10, `the contrast scan found text to measure (${samples.length})`);
    return samples.filter((s) => s.ratio < s.needed);
  }

  const report = (bad: ContrastSample[]) => bad.map((s) => `${s.what}: ${s.ratio}:1 (${s.fg} on ${s.bg}, needs ${s.needed}:1)`).join('\n');

  it('the empty state: every text meets WCAG AA contrast in Dark Modern, Light Modern and both High Contrast themes', async () => {
    await wb.runCommand('CodeAct: Open Chat');
    await (await panel.emptyState()).waitFor({ state: 'visible', timeout: UI });
    const failures: string[] = [];
    for (const theme of THEMES) {
      await applyTheme(panel, theme);
      const bad = await lowContrast();
      if (bad.length) failures.push(`${theme.label}:\n${report(bad)}`);
      await panel.sidebar.screenshot({ path: artifactPath(`60-empty-state-${theme.slug}`) });
    }
    await applyTheme(panel, THEMES[0]);
    assert.deepEqual(failures, [], `texts below WCAG AA contrast:\n${failures.join('\n\n')}`);
  });

  it('a conversation (code, tool calls, output, result, answer, approval, error): every text and badge meets WCAG AA in the four themes; code lines have no grey band', async () => {
    wire!.push(turn().call('execute_tool_code', { code: SEARCH_CODE }), turn().text(ANSWER).with({ usage: { input: 1812, output: 164 } }));
    await panel.send('Which ergonomic office chair under 600 EUR is in stock?');
    assert.equal(await panel.waitForTurn(-1, ['completed'], 120_000), 'completed', await panel.text());
    wire!.push(turn().call('execute_tool_code', { code: NOTE_CODE }), turn().text('Done: the note went to ACME-42.'));
    await panel.send('Tell ACME-42 their quote is ready.');
    await panel.decide('Allow once');
    assert.equal(await panel.waitForTurn(-1, ['completed'], 120_000), 'completed', await panel.text());
    wire!.push(fault.status(404));
    await panel.send('And with the model I do not have?');
    assert.equal(await panel.waitForTurn(-1, ['failed'], 120_000), 'failed', await panel.text());
    await panel.openVariables(UI);
    const f = await panel.frame();
    // The first card's tool calls open, to measure their arguments and results too.
    await f.locator('section.card.exec').first().locator('li.tool-call summary').first().click();

    // VS Code's default webview style paints <code> grey; inside code blocks that must not show.
    const bands = await f.evaluate(() =>
      Array.from(document.querySelectorAll('pre code'))
        .map((c) => getComputedStyle(c).backgroundColor)
        .filter((bg) => !/^rgba\(0, 0, 0, 0\)$|^transparent$/.test(bg)),
    );
    assert.deepEqual(bands, [], 'code blocks paint no background behind their lines');

    const failures: string[] = [];
    for (const theme of THEMES) {
      await applyTheme(panel, theme);
      const bad = await lowContrast();
      if (bad.length) failures.push(`${theme.label}:\n${report(bad)}`);
      await panel.scrollTo('section.card.exec');
      await panel.sidebar.screenshot({ path: artifactPath(`61-conversation-${theme.slug}`) });
      await panel.scrollTo('section.error-card', 'last');
      await panel.sidebar.screenshot({ path: artifactPath(`61b-conversation-end-${theme.slug}`) });
    }
    await applyTheme(panel, THEMES[0]);
    assert.deepEqual(failures, [], `texts below WCAG AA contrast:\n${failures.join('\n\n')}`);
  });

  it('at 240 px and at VS Code\'s narrowest 170 px: nothing clipped sideways, one compact model control, durations in view, JSON whole tokens', async () => {
    // The variables section has its own narrow-width test (sessions.test.ts); here, the transcript.
    await (await panel.variablesToggle()).click();
    const before = await wb.sidebarWidth();
    const problems: string[] = [];
    for (const want of [240, 170]) {
      const got = await wb.setSidebarWidth(want);
      assert.ok(Math.abs(got - want) <= 12, `the sidebar is about ${want} px wide (${got})`);
      const f = await panel.frame();
      await waitUntil(async () => (await f.evaluate(() => document.documentElement.clientWidth)) <= want, UI, () => `the webview never got ${want} px wide`, 200);
      await panel.scrollTo('section.card.exec');
      for (const p of await f.evaluate(narrowLayoutProblems)) problems.push(`${want} px: ${p}`);
      await panel.sidebar.screenshot({ path: artifactPath(`62-narrow-${want}px`) });
      await panel.scrollTo('section.card.exec .result-section');
      await panel.sidebar.screenshot({ path: artifactPath(`62b-narrow-${want}px-result`) });
      await panel.scrollTo('section.error-card', 'last');
      await panel.sidebar.screenshot({ path: artifactPath(`62c-narrow-${want}px-end`) });
    }
    await wb.setSidebarWidth(before);
    assert.deepEqual(problems, [], 'layout problems of the narrow panel');
  });
});
