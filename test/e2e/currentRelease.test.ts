/**
 * The packaged extension on the current VS Code release (code-server 4.139 = VS Code 1.139, on Node 24 from the npm
 * registry; scripts/setup-code-server.sh), where the features newer than the claimed minimum (1.100) live: VS Code
 * lists CodeAct among its MCP servers (the extension's definition provider), and a person can start it from there.
 * The other suites run on this release too (and minimumRelease.test.ts on the claimed minimum). Skips with one line when
 * that release is not installed.
 */
import assert from 'node:assert/strict';
import type { Browser, Locator } from 'playwright-core';
import { CodeServer, packageExtension } from './support/codeServer';
import { skipUnlessE2E } from './support/env';
import { processesWith, waitUntil } from './support/procs';
import { Workbench, launchChromium } from './support/workbench';
import { makeWorkspace, type Workspace } from './support/workspace';

describe('e2e: the current VS Code release', function () {
  this.timeout(600_000);
  let ws: Workspace | undefined;
  let cs: CodeServer | undefined;
  let browser: Browser | undefined;
  let wb: Workbench;

  before(async function () {
    skipUnlessE2E(this, 'current');
    const vsix = await packageExtension();
    ws = makeWorkspace();
    // Trusted as a whole, as the desktop launcher's --disable-workspace-trust does.
    cs = await CodeServer.start({
      vsix,
      workspace: ws.folder,
      release: 'current',
      name: 'current-release',
      settings: { 'security.workspace.trust.enabled': false },
    });
    browser = await launchChromium();
    wb = await Workbench.open(browser, cs.folderUrl);
  });

  after(async function () {
    if (wb && this.currentTest?.state === 'failed') await wb.screenshot('zz-current-release-failure').catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    ws?.dispose();
  });

  const rows = (): Locator => wb.page.locator('.quick-input-widget .monaco-list-row');

  it("activates; VS Code lists CodeAct among its MCP servers, and started from there it runs the extension's codeact mcp serve", async () => {
    assert.ok(await wb.hasCommand('CodeAct: Open Chat', wb.wait(60_000)), "the extension's commands never arrived (activation failed?)");
    // Opening the list asks the extensions for their MCP servers (VS Code activates CodeAct for it). A list opened
    // before VS Code has read CodeAct's contribution shows none: a person closes it and opens it again.
    const server = rows().filter({ hasText: 'CodeAct' }).filter({ hasNotText: 'Add Server' });
    await waitUntil(
      async () => {
        await wb.dismissQuickInput();
        await wb.runCommand('MCP: List Servers');
        return server
          .first()
          .waitFor({ state: 'visible', timeout: 15_000 })
          .then(
            () => true,
            () => false,
          );
      },
      wb.wait(180_000),
      () => `VS Code never listed CodeAct among its MCP servers:\n${cs!.extensionHostLogs().slice(-3000)}`,
      0,
    );
    await wb.screenshot('current-release-mcp-servers');
    assert.match(await server.first().innerText(), /CodeAct[\s\S]*Stopped/, 'listed, not started yet');
    // The person picks it and starts it.
    await server.first().click();
    const start = rows().filter({ hasText: 'Start Server' });
    await start.first().waitFor({ state: 'visible', timeout: wb.wait(30_000) });
    await start.first().click();
    // VS Code starts the extension's own CLI for this folder, trusted by VS Code's trust.
    await waitUntil(
      () => processesWith('mcp serve').some((p) => p.cmdline.includes(ws!.folder) && p.cmdline.includes('--trust-workspace')),
      wb.wait(60_000),
      () => `no codeact mcp serve for ${ws!.folder} was started: ${JSON.stringify(processesWith('mcp serve'))}`,
    );
    // And VS Code says it runs (it listed the server's tools).
    await waitUntil(
      async () => {
        await wb.runCommand('MCP: List Servers');
        const text = await server
          .first()
          .innerText({ timeout: 5_000 })
          .catch(() => '');
        await wb.dismissQuickInput();
        return /Running/.test(text);
      },
      wb.wait(90_000),
      () => 'VS Code never showed the CodeAct MCP server as running',
      1_000,
    );
  });
});
