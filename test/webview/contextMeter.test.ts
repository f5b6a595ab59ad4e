/**
 * The compaction divider and the context meter in the built panel, in headless Chromium: fixture events as
 * the engine emits them (`codeact.context.compacted`, `codeact.context.usage`), dark and light themes, a
 * 520 px panel and a 240 px sidebar. Screenshots go to test-artifacts/context-*.png.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PanelPage, type PanelServer } from './support/browser';
import { hostState } from './support/fixtures';
import { compactedConversation } from '../support/contextEvents';
import { usePanelBrowser } from './support/panelBrowser';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

describe('panel: compaction divider and context meter', function () {
  this.timeout(120_000);
  const ui = usePanelBrowser({ light: true, artifacts: ARTIFACTS });

  async function openWith(server: PanelServer, width: number, scheme: 'dark' | 'light'): Promise<PanelPage> {
    const p = await PanelPage.open(ui.browser, server.url, { width, height: 760 }, scheme);
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(compactedConversation(), 1000);
    await p.whenIdle();
    return p;
  }

  it('a hostile summary is sanitised like any model answer: no script, no handler, no remote load', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 520, height: 760 }, 'dark');
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const events = compactedConversation().map((e) =>
      e.type === 'codeact.context.compacted'
        ? { ...e, summary: '## Task\n<img src="http://127.0.0.1:9/x.png" onerror="window.hit=1"><script>window.hit=2</script>[x](javascript:window.hit=3)' }
        : e,
    );
    await p.sendEvents(events, 1000);
    await p.whenIdle();
    await p.page.getByRole('button', { name: 'Earlier turns summarised' }).click();
    const text = p.page.locator('.compaction-text');
    assert.equal(await text.locator('h2').innerText(), 'Task');
    assert.equal(await text.locator('script, img[src^="http"], [onerror]').count(), 0);
    assert.equal(await text.locator('a[href^="javascript"]').count(), 0);
    assert.equal(await p.page.evaluate(() => (window as unknown as { hit?: number }).hit), undefined);
    await p.page.close();
  });

  /** The divider opens and closes with its button (aria-expanded), and sits above the compacted turn's prompt. */
  async function checkDivider(p: PanelPage): Promise<void> {
    const dividers = p.page.locator('.compaction');
    assert.equal(await dividers.count(), 1);
    const turn3 = p.page.locator('.turn[data-turn-id="t3"]');
    assert.equal(await turn3.locator('.turn-body > :first-child').getAttribute('class'), 'compaction', "the boundary comes before the turn's prompt");
    assert.equal(await p.page.locator('.turn').count(), 3, 'the summarised turns are still shown');
    const button = p.page.getByRole('button', { name: 'Earlier turns summarised' });
    assert.equal(await button.getAttribute('aria-expanded'), 'false');
    assert.equal(await dividers.locator('.compaction-tokens').innerText(), '6,900 → 2,100 tokens');
    const cut = await dividers
      .locator('.compaction-toggle > span, .compaction-tokens')
      .evaluateAll((els) => els.filter((e) => e.scrollWidth > e.clientWidth + 1).length);
    assert.equal(cut, 0, "the divider's words are whole, not cut with an ellipsis");
    const body = dividers.locator('.compaction-body');
    assert.equal(await body.isVisible(), false);
    await button.click();
    assert.equal(await button.getAttribute('aria-expanded'), 'true');
    assert.equal(await body.isVisible(), true);
    assert.match(await body.innerText(), /Load sales\.csv and plot revenue per month\.[\s\S]*df: DataFrame \(1200, 5\)/);
    assert.match(await body.innerText(), /the last step stays verbatim/);
    assert.equal(await button.getAttribute('aria-controls'), await body.getAttribute('id'));
    // The summary is the model's markdown, rendered (and sanitised) as its answers are: headings, not "## ".
    assert.ok((await body.locator('.compaction-text h2').count()) >= 1, "the summary's headings are rendered");
    assert.doesNotMatch(await body.innerText(), /^## /m);
  }

  /** Used of total, the tick where compaction starts, the tooltip with the turn's and the conversation's tokens and cost. */
  async function checkMeter(p: PanelPage): Promise<void> {
    const meter = p.page.getByRole('meter');
    assert.ok(await meter.isVisible());
    const title = (await meter.getAttribute('title')) ?? '';
    const lines = title.split('\n');
    assert.equal(lines[0], '5,210 of 8,192 tokens (64%); compaction at 75%');
    assert.equal(lines[1], 'This turn: 5,210 in (1,024 cached) · 100 out · $0.0013');
    assert.equal(lines[2], 'Conversation: 15,110 in (3,072 cached) · 300 out · $0.0037');
    assert.match(lines[3], /^Costs at list prices as of 2026-\d\d-\d\d\.$/);
    assert.equal(await meter.getAttribute('aria-valuenow'), '64');
    assert.match((await meter.getAttribute('aria-label')) ?? '', /^Context window: 5,210 of 8,192 tokens/);
    const bar = (await p.page.locator('.meter-bar').boundingBox())!;
    const fill = (await p.page.locator('.meter-fill').boundingBox())!;
    const tick = (await p.page.locator('.meter-tick').boundingBox())!;
    assert.ok(Math.abs(fill.width - bar.width * (5210 / 8192)) <= 1, `fill ${fill.width} of ${bar.width}`);
    assert.ok(Math.abs(tick.x + tick.width / 2 - (bar.x + bar.width * 0.75)) <= 1.5, `tick at ${tick.x}, bar ${bar.x}+${bar.width}`);
    // The meter is inside the panel, beside Send.
    const vw = p.page.viewportSize()!.width;
    const box = (await meter.boundingBox())!;
    assert.ok(box.x >= 0 && box.x + box.width <= vw, `meter ${box.x}+${box.width} within ${vw}`);
    // Per turn: the footer of the compacted turn has its cost, and the cached tokens in its tooltip.
    const usage = p.page.locator('.turn[data-turn-id="t3"] .turn-usage');
    assert.equal(await usage.innerText(), '5.2k in · 100 out · $0.0013');
    assert.match((await usage.getAttribute('title')) ?? '', /Cached input tokens: 1,024/);
  }

  for (const [scheme, width] of [
    ['dark', 520],
    ['light', 520],
    ['dark', 240],
    ['light', 240],
  ] as const) {
    it(`shows the divider (expand, collapse) and the meter, ${scheme}, ${width} px`, async () => {
      const p = await openWith(scheme === 'dark' ? ui.dark : ui.light, width, scheme);
      await checkDivider(p);
      await checkMeter(p);
      const overflow = await p.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.equal(overflow, 0, 'nothing sticks out sideways');
      await p.page.locator('.compaction').scrollIntoViewIfNeeded();
      await p.page.screenshot({ path: join(ARTIFACTS, `context-${scheme}-${width}.png`) });
      // Keyboard: Enter on the focused button closes it again.
      await p.page.getByRole('button', { name: 'Earlier turns summarised' }).press('Enter');
      assert.equal(await p.page.getByRole('button', { name: 'Earlier turns summarised' }).getAttribute('aria-expanded'), 'false');
      assert.equal(await p.page.locator('.compaction-body').isVisible(), false);
      assert.deepEqual(p.errors, []);
      await p.page.close();
    });
  }

  it('keeps the divider and the meter across a reload (the panel state) and a reset (the saved conversation)', async () => {
    const p = await openWith(ui.dark, 520, 'dark');
    await p.page.reload();
    await p.page.waitForSelector('.compaction');
    await p.whenIdle();
    await checkDivider(p);
    await checkMeter(p);
    // The host replays the saved conversation (a reopened one): the same boundary and meter.
    await p.send({ type: 'reset', conversationId: 'conv-2', title: 'Reopened', seq: 1, events: compactedConversation() });
    await p.whenIdle();
    await checkDivider(p);
    await checkMeter(p);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('hides the meter until the host reports a window, and marks a window past the compaction point', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 520, height: 600 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([{ type: 'codeact.turn.started', turn_id: 'a', prompt: 'hi' }], 1000);
    assert.equal(await p.page.locator('.context-meter').isVisible(), false);
    await p.sendEvents([{ type: 'codeact.context.usage', used_tokens: 7000, window_tokens: 8192, compact_at_tokens: 6144 }], 1000);
    const meter = p.page.getByRole('meter');
    assert.ok(await meter.isVisible());
    assert.equal(((await meter.getAttribute('title')) ?? '').split('\n')[0], '7,000 of 8,192 tokens (85%); compaction at 75%');
    assert.match((await meter.getAttribute('class')) ?? '', /past-compaction/);
    assert.equal((await meter.getAttribute('title'))?.includes('Costs'), false, 'no usage yet, no cost');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });
});
