/**
 * The settings titles read 'CodeAct: Base URL', in a real VS Code (code-server 4.139 =
 * VS Code 1.139, the current release) driven in headless Chromium. VS Code's Settings editor builds a setting's label from its key
 * alone (it splits camelCase and upper-cases a short list of acronyms without "url"; a per-setting `title` is
 * not read for extensions), so the setting is `codeact.baseURL`: "Base URL", where `codeact.baseUrl` read
 * "Base Url". The user's settings here hold only the old key, `codeact.baseUrl`, which must still be read.
 *
 *   - the old `codeact.baseUrl` in the user's settings still sends the turn to its server;
 *   - an unknown model's "Open Settings: Base URL" opens the Settings editor at `codeact.baseURL`, whose
 *     label reads "Base URL" (a search result: VS Code prefixes the category it derives from the key);
 *   - browsing the tree, the section heading is the configuration's title, "CodeAct", and the setting
 *     "Base URL", with no category (the tree trims the one the heading already says).
 *
 * Screenshots: test-artifacts/e2e/36-settings-base-url.png (the tree) and 36b-settings-base-url-search.png. Skips with one line when code-server or
 * Chromium is missing.
 */
import assert from 'node:assert/strict';
import type { Locator } from 'playwright-core';
import { fault, turn } from '../support/wire/turn';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';

/** UI conditions get a minute: the machine is small and shared. */
const UI = 60_000;
const MODEL = 'qwen2.5-coder:7b';

describe('e2e: the Settings editor reads "Base URL"', function () {
  this.timeout(900_000);
  // The setting's old name only, as a user who set it before the rename has it.
  const e2e = useCodeServer({
    name: 'settings',
    wire: ['openai-compatible', 'openai'],
    settings: (url) => ({ 'codeact.provider': 'openai-compatible', 'codeact.baseUrl': url, 'codeact.model': MODEL, 'codeact.timeoutSeconds': 90 }),
    minWaitMs: UI,
  });

  /** The rendered category ("Codeact: ", or nothing) and label of a setting's row in the Settings editor. */
  async function labelOf(row: Locator): Promise<{ category: string; label: string }> {
    const clean = (s: string) => s.replace(/\u00a0/g, ' ').trim();
    return {
      category: clean(await row.locator('.setting-item-category').first().innerText()),
      label: clean(await row.locator('.setting-item-label').first().innerText()),
    };
  }

  it("a user's old codeact.baseUrl is still read: the turn goes to its server", async () => {
    e2e.wire.push(turn().text('Hello from the server your old setting names.'));
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.send('Say hello');
    assert.equal(await e2e.panel.waitForTurn(0, ['completed'], UI), 'completed');
    assert.equal(e2e.wire.turns.length, 1, 'the server named by codeact.baseUrl got the turn');
    assert.match(await e2e.panel.lastAnswer(), /Hello from the server your old setting names/);
  });

  it('"Open Settings: Base URL" opens the Settings editor at codeact.baseURL, labelled "Base URL"', async () => {
    e2e.wire.push(fault.status(404, { message: `The model \`${MODEL}\` does not exist.`, code: 'model_not_found' }));
    await e2e.panel.send('Summarise the quote');
    assert.equal(await e2e.panel.waitForTurn(1, ['failed'], UI), 'failed');
    const card = (await e2e.panel.frame()).locator('section.error-card').last();
    await card.getByRole('button', { name: 'Open Settings: Base URL' }).click();

    const row = e2e.wb.page.locator('.settings-editor .settings-tree-container [data-key="codeact.baseURL"]').first();
    await row.waitFor({ state: 'visible', timeout: UI });
    const query = await e2e.wb.page.locator('.settings-editor .suggest-input-container .view-lines').innerText();
    assert.match(query.replace(/\u00a0/g, ' '), /codeact\.baseURL/);
    // The old key is not a declared setting, so the search finds the one row.
    assert.equal(await e2e.wb.page.locator('.settings-editor .settings-tree-container [data-key="codeact.baseUrl"]').count(), 0);
    const { category, label } = await labelOf(row);
    assert.equal(label, 'Base URL');
    // A search result carries the category VS Code derives from the key's prefix: "codeact" -> "Codeact".
    assert.match(category, /^codeact:$/i);
    await e2e.wb.screenshot('36b-settings-base-url-search');
  });

  it('browsing the tree: the section heading is "CodeAct" and the setting reads "Base URL"', async () => {
    if (!(await e2e.wb.page.locator('.settings-editor').first().isVisible())) await e2e.wb.runCommand('Preferences: Open Settings (UI)');
    // Clear the search: the tree shows every setting, grouped under its table of contents.
    const search = e2e.wb.page.locator('.settings-editor .suggest-input-container .monaco-editor').first();
    await search.click();
    await e2e.wb.page.keyboard.press('ControlOrMeta+A');
    await e2e.wb.page.keyboard.press('Backspace');
    const toc = e2e.wb.page.locator('.settings-editor .settings-toc-container');
    await toc.waitFor({ state: 'visible', timeout: UI });
    const tocRow = (name: string) =>
      toc
        .locator('.monaco-list-row')
        .filter({ has: e2e.wb.page.getByText(name, { exact: true }) })
        .first();
    // The whole table of contents is back (not the search's "Extensions (1)").
    await tocRow('Commonly Used').waitFor({ state: 'visible', timeout: UI });
    await waitUntil(
      async () => {
        if (
          await tocRow('CodeAct')
            .isVisible()
            .catch(() => false)
        )
          return true;
        await tocRow('Extensions')
          .click()
          .catch(() => undefined);
        return false;
      },
      UI,
      () => 'the table of contents shows no "CodeAct" under "Extensions"',
      1000,
    );
    await tocRow('CodeAct').click();

    const tree = e2e.wb.page.locator('.settings-editor .settings-tree-container');
    const heading = tree
      .locator('.settings-group-title-label')
      .filter({ hasText: /^CodeAct$/ })
      .first();
    await heading.waitFor({ state: 'visible', timeout: UI });
    const row = tree.locator('[data-key="codeact.baseURL"]').first();
    // The group lists its settings by key; Base URL comes after the agent and approval settings, in view once the group is.
    await row.waitFor({ state: 'visible', timeout: UI });
    const { category, label } = await labelOf(row);
    assert.equal(label, 'Base URL');
    assert.equal(category, '', 'under the "CodeAct" heading the tree drops the category');
    await row.hover();
    await e2e.wb.screenshot('36-settings-base-url');
    await e2e.wb.closeActiveEditor();
  });

  it('the Jupyter server setting reads "Server URL" (codeact.jupyter.serverURL; the old key read "Url")', async () => {
    await e2e.wb.runCommand('Preferences: Open Settings (UI)');
    const search = e2e.wb.page.locator('.settings-editor .suggest-input-container .monaco-editor').first();
    await search.waitFor({ state: 'visible', timeout: UI });
    await search.click();
    await e2e.wb.page.keyboard.press('ControlOrMeta+A');
    await e2e.wb.page.keyboard.type('codeact.jupyter.serverURL');
    const row = e2e.wb.page.locator('.settings-editor .settings-tree-container [data-key="codeact.jupyter.serverURL"]').first();
    await row.waitFor({ state: 'visible', timeout: UI });
    const { category, label } = await labelOf(row);
    assert.equal(label, 'Server URL');
    assert.match(category, /jupyter/i);
    await row.hover();
    await e2e.wb.screenshot('36c-settings-jupyter-server-url');
    await e2e.wb.closeActiveEditor();
  });
});
