/**
 * The chat panel narrow, light and high-contrast, in a real VS Code (code-server 4.139
 * = VS Code 1.139, the current release) driven in headless Chromium. A conversation with code, tool calls, output, a result, an
 * answer with code and a table, an approval and an error card is read in Dark Modern, Light Modern and both
 * High Contrast themes (switched through the `workbench.colorTheme` setting): every text and badge must meet
 * WCAG AA contrast, computed from the rendered styles. At VS Code's narrowest sidebar (170 px) and at 240 px
 * nothing may be clipped sideways.
 *
 * Screenshots: test-artifacts/e2e/60-…. Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { fault, turn } from '../support/wire/turn';
import { textContrast, type ContrastSample } from './support/contrast';
import { artifactPath } from './support/env';
import { narrowLayoutProblems } from './support/layout';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { THEMES, applyTheme } from './support/themes';

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

describe('e2e: the panel narrow, light and high-contrast', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'themes',
    wire: ['openai-compatible', 'openai'],
    settings: (url) => ({ 'codeact.provider': 'openai-compatible', 'codeact.baseURL': url, 'codeact.model': MODEL, 'codeact.timeoutSeconds': 90 }),
    minWaitMs: UI,
  });

  /** The texts below WCAG AA in the current theme. */
  async function lowContrast(): Promise<ContrastSample[]> {
    const samples = await (await e2e.panel.frame()).evaluate(textContrast);
    assert.ok(samples.length > 10, `the contrast scan found text to measure (${samples.length})`);
    return samples.filter((s) => s.ratio < s.needed);
  }

  const report = (bad: ContrastSample[]) => bad.map((s) => `${s.what}: ${s.ratio}:1 (${s.fg} on ${s.bg}, needs ${s.needed}:1)`).join('\n');

  it('the empty state: every text meets WCAG AA contrast in Dark Modern, Light Modern and both High Contrast themes', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await (await e2e.panel.emptyState()).waitFor({ state: 'visible', timeout: UI });
    const failures: string[] = [];
    for (const theme of THEMES) {
      await applyTheme(e2e.panel, theme);
      const bad = await lowContrast();
      if (bad.length) failures.push(`${theme.label}:\n${report(bad)}`);
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`60-empty-state-${theme.slug}`) });
    }
    await applyTheme(e2e.panel, THEMES[0]);
    assert.deepEqual(failures, [], `texts below WCAG AA contrast:\n${failures.join('\n\n')}`);
  });

  it('a conversation (code, tool calls, output, result, answer, approval, error): every text and badge meets WCAG AA in the four themes; code lines have no grey band', async () => {
    e2e.wire.push(
      turn().call('execute_tool_code', { code: SEARCH_CODE }),
      turn()
        .text(ANSWER)
        .with({ usage: { input: 1812, output: 164 } }),
    );
    await e2e.panel.send('Which ergonomic office chair under 600 EUR is in stock?');
    assert.equal(await e2e.panel.waitForTurn(-1, ['completed'], 120_000), 'completed', await e2e.panel.text());
    e2e.wire.push(turn().call('execute_tool_code', { code: NOTE_CODE }), turn().text('Done: the note went to ACME-42.'));
    await e2e.panel.send('Tell ACME-42 their quote is ready.');
    await e2e.panel.decide('Allow once');
    assert.equal(await e2e.panel.waitForTurn(-1, ['completed'], 120_000), 'completed', await e2e.panel.text());
    e2e.wire.push(fault.status(404));
    await e2e.panel.send('And with the model I do not have?');
    assert.equal(await e2e.panel.waitForTurn(-1, ['failed'], 120_000), 'failed', await e2e.panel.text());
    await e2e.panel.openVariables(UI);
    const f = await e2e.panel.frame();
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
      await applyTheme(e2e.panel, theme);
      const bad = await lowContrast();
      if (bad.length) failures.push(`${theme.label}:\n${report(bad)}`);
      await e2e.panel.scrollTo('section.card.exec');
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`61-conversation-${theme.slug}`) });
      await e2e.panel.scrollTo('section.error-card', 'last');
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`61b-conversation-end-${theme.slug}`) });
    }
    await applyTheme(e2e.panel, THEMES[0]);
    assert.deepEqual(failures, [], `texts below WCAG AA contrast:\n${failures.join('\n\n')}`);
  });

  it("at 240 px and at VS Code's narrowest 170 px: nothing clipped sideways, one compact model control, durations in view, JSON whole tokens", async () => {
    // The variables section has its own narrow-width test (sessions.test.ts); here, the transcript.
    await (await e2e.panel.variablesToggle()).click();
    const before = await e2e.wb.sidebarWidth();
    const problems: string[] = [];
    for (const want of [240, 170]) {
      const got = await e2e.wb.setSidebarWidth(want);
      assert.ok(Math.abs(got - want) <= 12, `the sidebar is about ${want} px wide (${got})`);
      const f = await e2e.panel.frame();
      await waitUntil(
        async () => (await f.evaluate(() => document.documentElement.clientWidth)) <= want,
        UI,
        () => `the webview never got ${want} px wide`,
        200,
      );
      await e2e.panel.scrollTo('section.card.exec');
      for (const p of await f.evaluate(narrowLayoutProblems)) problems.push(`${want} px: ${p}`);
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`62-narrow-${want}px`) });
      await e2e.panel.scrollTo('section.card.exec .result-section');
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`62b-narrow-${want}px-result`) });
      await e2e.panel.scrollTo('section.error-card', 'last');
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`62c-narrow-${want}px-end`) });
    }
    await e2e.wb.setSidebarWidth(before);
    assert.deepEqual(problems, [], 'layout problems of the narrow panel');
  });
});
