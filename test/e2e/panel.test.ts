/**
 * The panel and editor as a demanding user sees them, in a real VS Code (code-server 4.139 =
 * VS Code 1.139, the current release) driven in headless Chromium, with the OpenAI provider pointed at a loopback Responses server
 * and no API key to start with:
 *   - point 8: the empty state's tools and examples come from the workspace, the walkthrough's tools step is
 *     done, and there is one "new conversation" button; point 5: a broken declaration is counted and said;
 *   - point 4: a failed turn says its message once, in its card, with the buttons that fit; retries count once
 *     and go away; the no-key message speaks VS Code and leaves no toast behind once the key is saved;
 *   - point 7: Run with Tools writes into a conversation named after the file, the panel follows it, and the
 *     history counts every turn;
 *   - point 2: a reload keeps the open conversation (with or without the page's saved state), scrolled where
 *     it was, and shows a run the reload cut off as interrupted.
 *
 * Screenshots: test-artifacts/e2e/3x-, 4x-, 5x-…. Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import type { Frame } from 'playwright-core';
import { fault, turn } from '../support/wire/turn';
import { artifactPath } from './support/env';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { SEND_NOTE_TOOL, makeWorkspace } from './support/workspace';

/** UI conditions get a minute: the machine is small and shared. */
const UI = 60_000;

/** A declaration whose input schema is not JSON Schema: the panel must count it as broken and say why. */
const BROKEN_TOOL = {
  name: 'broken_tool',
  description: 'Looks up nothing.',
  command: ['python3', 'tools/e2e_tools.py', 'send_note'],
  inputSchema: { type: 'objekt' },
};

const SLOW_CODE = `import time
print("slow report started", flush=True)
time.sleep(240)
`;

describe('e2e: the panel as a demanding user sees it', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'panel',
    workspace: () => makeWorkspace([SEND_NOTE_TOOL, BROKEN_TOOL]),
    wire: ['openai'],
    settings: (url) => ({ 'codeact.provider': 'openai', 'codeact.model': 'gpt-5', 'codeact.baseURL': url, 'codeact.timeoutSeconds': 90 }),
    // No OpenAI key anywhere: the user sets one from the panel.
    env: { OPENAI_API_KEY: '' },
    minWaitMs: UI,
    // DIAG
    onFailure: async ({ cs, panel }) => {
      const { readdirSync, readFileSync } = await import('node:fs');
      const dir = `${cs.userDataDir}/User/globalStorage/codeact.codeact/conversations`;
      for (const file of (await import('node:fs')).existsSync(dir) ? readdirSync(dir) : []) {
        const lines = readFileSync(`${dir}/${file}`, 'utf8').split('\n');
        console.log(
          'DIAG',
          file,
          lines[0].slice(0, 120),
          lines.filter((l) => /turn\.(started|ended)/.test(l)).map((l) => l.slice(0, 160)),
        );
      }
      console.log(
        'DIAG page',
        await (
          await panel.frame()
        )
          .evaluate(() => {
            const a = (window as any).codeact.app;
            return JSON.stringify({
              turns: a.model.turns.map((t: any) => [t.prompt, t.status, t.interrupted]),
              conv: a.conversationId,
              seq: a.seq,
              dom: document.querySelectorAll('article.turn').length,
            });
          })
          .catch((e) => String(e)),
      );
    },
  });
  /** Turns sent to the chat conversation so far (the history must count each). */
  let chatTurns = 0;
  let chatTitle = '';

  /** Waits until the panel shows `n` turns (after a reload: the conversation came back). */
  async function waitForTurns(n: number): Promise<void> {
    let shown = 0;
    await waitUntil(
      async () => (shown = await e2e.panel.turnCount().catch(() => 0)) === n,
      UI,
      () => `the panel shows ${shown} turns, not the conversation's ${n}`,
      250,
    );
  }

  const buttonsOf = async (card: ReturnType<Frame['locator']>) => (await card.locator('button').allInnerTexts()).map((b) => b.trim());

  it('point 8 and 5: the empty state counts "4 tools ready, 1 broken" and says why; examples use the workspace\'s tools; the walkthrough\'s tools step is done; one "new conversation" button', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    const empty = await e2e.panel.emptyState();
    await empty.waitFor({ state: 'visible', timeout: UI });
    const f = await e2e.panel.frame();
    const text = await empty.innerText();
    assert.match(text, /4 tools ready, 1 broken/);
    assert.doesNotMatch(text, /managed tools declared/);
    await f.getByText('Why is broken_tool broken?').click();
    const why = await f.locator('.broken-tools').innerText();
    assert.match(why, /broken_tool\s+\S.{10,}/, `the broken declaration is named with its problem: ${why}`);
    const chip = (await f.locator('button.tools-chip').getAttribute('aria-label')) ?? '';
    assert.match(chip, /4 tools ready.*1 broken/, chip);

    const examples = await f.locator('.examples .example').allInnerTexts();
    assert.ok(
      examples.length >= 2 && examples.every((e) => /search_catalog|check_inventory|create_quote|send_note/.test(e)),
      `examples about this workspace's tools: ${JSON.stringify(examples)}`,
    );
    assert.ok(!examples.some((e) => /revenue|late/.test(e)), 'no examples about tools this workspace does not have');

    const inPage = await f.getByRole('button', { name: /^new conversation$/i }).count();
    const inTitle = await e2e.wb.page.locator('.part.sidebar [aria-label^="New Conversation"]').count();
    assert.equal(inPage + inTitle, 1, `one "new conversation" button (panel: ${inPage}, view title: ${inTitle})`);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('30-empty-state-broken-tool') });

    await e2e.wb.runCommand('Welcome: Open Walkthrough...');
    const walkthrough = e2e.wb.page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Get started with CodeAct' });
    await walkthrough.waitFor({ state: 'visible', timeout: UI });
    await walkthrough.click();
    const step = e2e.wb.page.locator('button.getting-started-step[data-step-id$="declareTools"]');
    await step.waitFor({ state: 'visible', timeout: UI });
    await waitUntil(
      async () => (await step.getAttribute('aria-checked')) === 'true',
      UI,
      () => 'the walkthrough\'s "Declare managed tools" step is not done although the workspace declares tools',
    );
    await e2e.wb.screenshot('31-walkthrough-tools-step-done');
    await e2e.wb.closeActiveEditor();
  });

  it("point 4: no key — the card says it in VS Code's words, once, with Set API Key… and Retry; no toast is left once the key is saved", async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    chatTitle = 'Which chairs are in stock?';
    await e2e.panel.send(chatTitle);
    chatTurns++;
    assert.equal(await e2e.panel.waitForTurn(-1, ['failed'], UI), 'failed');
    const f = await e2e.panel.frame();
    const card = f.locator('section.error-card').last();
    const message = await card.locator('.error-message').innerText();
    assert.match(message, /No API key for OpenAI/);
    assert.match(message, /Set API Key…/, 'the message names the button that fixes it');
    assert.doesNotMatch(message, /\(CLI\)/, 'no CLI advice in VS Code');
    assert.deepEqual(await buttonsOf(card), ['Set API Key…', 'Retry', 'Show Log']);
    const all = await e2e.panel.text();
    assert.equal(all.split('No API key for OpenAI').length - 1, 1, 'the message is said once in the panel');
    assert.equal(
      (await f.locator('article.turn').last().locator('.turn-status').innerText()).trim(),
      'Failed',
      'the footer names the outcome, not the message again',
    );
    assert.deepEqual(
      (await e2e.wb.notifications()).filter((n) => /API key/.test(n.message)),
      [],
      'no toast repeats the card',
    );
    await e2e.panel.sidebar.screenshot({ path: artifactPath('32-no-key-card') });

    await card.getByRole('button', { name: 'Set API Key…' }).click();
    await waitUntil(
      () => e2e.wb.answerQuickPick('CodeAct: Set API Key', 'OpenAI'),
      UI,
      () => 'Set API Key… did not ask which provider',
      250,
    );
    const input = e2e.wb.page.locator('.quick-input-widget input.input');
    await input.waitFor({ state: 'visible', timeout: UI });
    await input.fill('sk-e2e-typed-by-the-user');
    await input.press('Enter');
    await e2e.wb.waitForNotification(/OpenAI key is saved/, UI);
    assert.deepEqual(
      (await e2e.wb.notifications()).filter((n) => /No API key/.test(n.message)),
      [],
      'no "no key" toast is left once the key is saved',
    );
    await e2e.wb.clearNotifications();

    e2e.wire.push(turn().text('Two chairs are in stock: the ErgoFlex and the ErgoFlex Pro.'));
    const before = e2e.wire.turns.length;
    await card.getByRole('button', { name: 'Retry' }).click();
    chatTurns++;
    assert.equal(await e2e.panel.waitForTurn(-1, ['completed'], UI), 'completed', await e2e.panel.text());
    assert.equal(e2e.wire.turns.length, before + 1);
    assert.equal(e2e.wire.turns.at(-1)!.headers.authorization, 'Bearer sk-e2e-typed-by-the-user');
  });

  it('point 4: retries carry one counter and go away; the last error no longer promises retries and offers Retry; the footer keeps the model whole', async () => {
    for (let i = 0; i < 4; i++) e2e.wire.push(fault.status(429, { retryAfter: 1 }));
    await e2e.panel.send('Quote two ErgoFlex chairs for ACME-42');
    chatTurns++;
    const f = await e2e.panel.frame();
    const retry = f.locator('.notice-line:visible', { hasText: /attempt/ });
    let seen = '';
    await waitUntil(
      async () => {
        const texts = await retry.allInnerTexts().catch(() => []);
        seen = texts.join(' | ');
        return texts.length === 1 && /attempt [34] of 4/.test(texts[0]);
      },
      UI,
      () => `never saw one retry notice counting "attempt 3 of 4" or later: ${seen}`,
      100,
    );
    assert.equal(seen.match(/attempt/g)?.length, 1, `one counter: ${seen}`);
    assert.match(seen, /Retrying in \d+(\.\d)? s/);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('33-retrying') });

    assert.equal(await e2e.panel.waitForTurn(-1, ['failed'], UI), 'failed');
    assert.equal(await retry.count(), 0, 'the retry notice went away when the turn ended');
    const card = f.locator('section.error-card').last();
    const message = await card.locator('.error-message').innerText();
    assert.match(message, /rate-limiting/);
    assert.doesNotMatch(message, /CodeAct retries/, 'after the last retry, no promise of more');
    assert.deepEqual(await buttonsOf(card), ['Retry', 'Show Log']);
    const footer = f.locator('article.turn').last().locator('footer.turn-footer');
    assert.equal((await footer.locator('.turn-status').innerText()).trim(), 'Failed');
    const modelLines = await footer
      .locator('.turn-meta')
      .evaluate((el) => new Set(Array.from(el.firstElementChild?.getClientRects() ?? [], (r) => Math.round(r.top))).size);
    assert.equal(modelLines, 1, 'the model name is on one line');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('34-rate-limited-card') });

    e2e.wire.push(turn().text('Quote Q-1001 is ready: 2 × ErgoFlex, 578.00 EUR.'));
    await card.getByRole('button', { name: 'Retry' }).click();
    chatTurns++;
    assert.equal(await e2e.panel.waitForTurn(-1, ['completed'], UI), 'completed');
  });

  it('point 4: an unknown model offers Select Model… and "Open Settings: Model", which opens the Settings editor at codeact.model', async () => {
    e2e.wire.push(fault.status(404, { message: 'The model `gpt-5` does not exist or you do not have access to it.', code: 'model_not_found' }));
    await e2e.panel.send('Summarise the quote');
    chatTurns++;
    assert.equal(await e2e.panel.waitForTurn(-1, ['failed'], UI), 'failed');
    const card = (await e2e.panel.frame()).locator('section.error-card').last();
    assert.deepEqual(await buttonsOf(card), ['Select Model…', 'Open Settings: Model', 'Show Log']);
    await card.getByRole('button', { name: 'Open Settings: Model' }).click();
    const row = e2e.wb.page.locator('.settings-editor [data-key="codeact.model"]').first();
    await row.waitFor({ state: 'visible', timeout: UI });
    const query = await e2e.wb.page.locator('.settings-editor .suggest-input-container .view-lines').innerText();
    assert.match(query.replace(/\u00a0/g, ' '), /codeact\.model/);
    await e2e.wb.screenshot('35-open-settings-at-model');
    await e2e.wb.closeActiveEditor();
  });

  it('point 7: Run with Tools writes into a conversation named after the file, the panel follows the new card, and the history counts every turn', async () => {
    await e2e.wb.openFile('order_desk.py');
    await e2e.editor.focus();
    await e2e.wb.runCommand('CodeAct: Run with Tools');
    assert.match((await e2e.editor.waitForDecoration(/✓|✗/, 120_000)).text, /^✓ /);
    const f = await e2e.panel.frame();
    await waitUntil(
      async () => (await f.locator('.conv-title').innerText()) === 'order_desk.py',
      UI,
      () => 'the panel did not switch to the "order_desk.py" conversation',
    );
    assert.equal(await e2e.panel.turnCount(), 1, 'the run is the only turn of its conversation');
    assert.match(await f.locator('article.turn .user-msg').innerText(), /Run with Tools[\s\S]*order_desk\.py/);

    // Again, from the bottom of the conversation: the panel follows the new card.
    await e2e.wb.runCommand('CodeAct: Run with Tools');
    await e2e.panel.waitForTurn(1, ['completed'], 120_000);
    await waitUntil(
      () =>
        f.evaluate(() => {
          const cards = document.querySelectorAll('section.card.exec');
          const card = cards[cards.length - 1]?.getBoundingClientRect();
          const view = document.querySelector('.scroller')!.getBoundingClientRect();
          return !!card && card.bottom > view.top && card.top < view.bottom && document.querySelector('.scroller')!.classList.contains('stuck');
        }),
      UI,
      () => 'the new card of the second run is not in view',
      200,
    );
    await e2e.panel.sidebar.screenshot({ path: artifactPath('40-run-with-tools-conversation') });

    const entries = await e2e.panel.history();
    const runs = entries.filter((e) => e.title === 'order_desk.py');
    assert.equal(runs.length, 1, `one conversation for the file: ${JSON.stringify(entries)}`);
    assert.match(runs[0].meta, /\b2 turns\b/);
    assert.ok(runs[0].current);
    const chat = entries.find((e) => e.title === chatTitle);
    assert.ok(chat, `the chat conversation is in the history: ${JSON.stringify(entries)}`);
    assert.match(chat.meta, new RegExp(`\\b${chatTurns} turns\\b`), `every turn of the chat counts (failed ones too): ${chat.meta}`);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('41-history-counts') });
    await e2e.panel.closeHistory();
  });

  it('point 2: a reload keeps the open conversation, scrolled where it was, and shows the run it cut off as interrupted', async () => {
    // Back to the chat, and a slow run.
    await e2e.panel.history();
    await (await e2e.panel.frame()).locator('aside.history-panel .history-open', { hasText: chatTitle }).click();
    await waitUntil(
      async () => (await e2e.panel.turnCount()) === chatTurns,
      UI,
      () => 'the chat conversation did not reopen',
    );
    e2e.wire.push(turn().call('execute_tool_code', { code: SLOW_CODE }));
    await e2e.panel.send('Run the slow report');
    chatTurns++;
    await e2e.panel.waitForText(/slow report started/, UI);
    // The user scrolls up to read the second turn.
    await e2e.panel.scrollTo('article.turn:nth-of-type(2)');
    await new Promise((r) => setTimeout(r, 800));
    const top = async () =>
      (await e2e.panel.frame()).evaluate(() => {
        const view = document.querySelector('.scroller')!.getBoundingClientRect();
        const first = Array.from(document.querySelectorAll<HTMLElement>('article.turn')).find((t) => t.getBoundingClientRect().bottom > view.top + 1);
        return first?.getAttribute('aria-label') ?? '';
      });
    const before = await top();
    assert.equal(before, 'Turn 2');

    await e2e.wb.page.reload();
    await e2e.wb.page.waitForSelector('.monaco-workbench', { timeout: UI });
    if (!(await e2e.panel.sidebar.isVisible())) await e2e.wb.runCommand('CodeAct: Open Chat');
    await waitForTurns(chatTurns);
    const f = await e2e.panel.frame();
    assert.equal(await f.locator('.conv-title').innerText(), chatTitle);
    const last = f.locator('article.turn').last();
    await waitUntil(
      async () => (await last.getAttribute('data-interrupted')) === 'true',
      UI,
      () => 'the run the reload cut off is not shown as interrupted',
    );
    assert.match(await last.locator('.turn-status').innerText(), /Interrupted/);
    assert.notEqual(await last.getAttribute('data-status'), 'running');
    let after = '';
    await waitUntil(
      async () => (after = await top()) === before,
      UI,
      () => `the view came back at ${after}, not at ${before}`,
    );
    await e2e.panel.sidebar.screenshot({ path: artifactPath('50-reload-keeps-conversation') });
    await e2e.panel.scrollTo('article.turn:last-of-type');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('51-reload-interrupted-turn') });
  });

  it("point 2: without the page's saved state (a new window, a reset view), the host still brings the conversation back", async () => {
    await (
      await e2e.panel.frame()
    ).evaluate(() => {
      // The page's own memory goes: what VS Code keeps for the view is emptied and no longer written.
      const app = (window as unknown as { codeact: { app: { api: { setState(s: unknown): void } } } }).codeact.app;
      app.api.setState(undefined);
      app.api.setState = () => {};
    });
    await e2e.wb.page.reload();
    await e2e.wb.page.waitForSelector('.monaco-workbench', { timeout: UI });
    if (!(await e2e.panel.sidebar.isVisible())) await e2e.wb.runCommand('CodeAct: Open Chat');
    await waitForTurns(chatTurns);
    assert.equal(await (await e2e.panel.frame()).locator('.conv-title').innerText(), chatTitle);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('52-reload-without-page-state') });
  });
});
