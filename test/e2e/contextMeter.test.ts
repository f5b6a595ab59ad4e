/**
 * The compaction divider and the context meter, in a real VS Code (code-server) in headless Chromium: a saved conversation that
 * was compacted (the events the engine writes: `codeact.context.compacted`, `codeact.context.usage`) is
 * reopened from the history. The panel shows every turn, the "Earlier turns summarised" divider whose
 * summary opens and closes, and the context meter with its tooltip; a window reload keeps them.
 * (Fixture events written to the conversation store, not a live compaction: the engine is built apart.)
 *
 * Screenshots: test-artifacts/e2e/90-…. Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { compactedConversation } from '../support/contextEvents';
import { artifactPath } from './support/env';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';

const UI = 60_000;
const TITLE = 'Revenue per month';

describe('e2e: compaction divider and context meter', function () {
  this.timeout(600_000);
  const e2e = useCodeServer({ name: 'context-meter', minWaitMs: UI });

  it('reopens a compacted conversation: every turn, the divider (expand, collapse), the meter and its tooltip; a reload keeps them', async () => {
    const store = new TranscriptStore(join(e2e.cs.userDataDir, 'User', 'globalStorage', 'codeact.codeact', 'conversations'));
    const convo = store.create({ title: TITLE, provider: 'openai', model: 'gpt-5-mini' });
    for (const e of compactedConversation()) convo.appendEvent(e);

    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.history();
    await (await e2e.panel.frame()).locator('aside.history-panel .history-open', { hasText: TITLE }).click();
    await waitUntil(
      async () => (await e2e.panel.turnCount().catch(() => 0)) === 3,
      UI,
      () => 'the compacted conversation did not reopen with its 3 turns',
    );

    const check = async (shot: string) => {
      const f = await e2e.panel.frame();
      await f.locator('.compaction').waitFor({ state: 'visible', timeout: UI });
      assert.equal(await f.locator('.compaction').count(), 1);
      assert.equal(
        await f.locator('article.turn[data-turn-id="t3"] .turn-body > :first-child').getAttribute('class'),
        'compaction',
        'the divider is above the compacted turn',
      );
      assert.equal(await f.locator('.compaction-tokens').innerText(), '6,900 → 2,100 tokens');
      const button = f.getByRole('button', { name: 'Earlier turns summarised' });
      assert.equal(await button.getAttribute('aria-expanded'), 'false');
      await button.click();
      assert.equal(await button.getAttribute('aria-expanded'), 'true');
      assert.match(await f.locator('.compaction-body').innerText(), /Load sales\.csv and plot revenue per month\./);
      const meter = f.getByRole('meter');
      await meter.waitFor({ state: 'visible', timeout: UI });
      const title = (await meter.getAttribute('title')) ?? '';
      assert.equal(title.split('\n')[0], '5,210 of 8,192 tokens (64%); compaction at 75%');
      assert.match(title, /Conversation: 15,110 in \(3,072 cached\) · 300 out · \$0\.0037/);
      await f.locator('.compaction').scrollIntoViewIfNeeded();
      await e2e.panel.sidebar.screenshot({ path: artifactPath(shot) });
      await button.click();
      assert.equal(await button.getAttribute('aria-expanded'), 'false');
      assert.equal(await f.locator('.compaction-body').isVisible(), false);
    };
    await check('90-compaction-divider-and-meter');

    await e2e.wb.page.reload();
    await e2e.wb.page.waitForSelector('.monaco-workbench', { timeout: UI });
    if (!(await e2e.panel.sidebar.isVisible())) await e2e.wb.runCommand('CodeAct: Open Chat');
    await waitUntil(
      async () => (await e2e.panel.turnCount().catch(() => 0)) === 3,
      UI,
      () => 'the conversation did not come back after the reload',
    );
    await check('91-compaction-after-reload');
  });
});
