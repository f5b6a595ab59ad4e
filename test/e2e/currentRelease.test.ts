/**
 * The packaged extension on the current VS Code release (code-server 4.139 = VS Code 1.139, on Node 24 from the npm
 * registry; scripts/setup-code-server.sh), where the features newer than the claimed minimum (1.100) live: VS Code
 * lists CodeAct among its MCP servers (the extension's definition provider), and a person can start it from there;
 * when the person chooses the panel's open conversation for VS Code's agent, VS Code lists and starts the extension
 * host's own loopback server instead (its runs are turns of that conversation: test/vscode/mcpShare.test.ts).
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
      // The extension host's own MCP server listens on loopback: code-server would offer to forward its port.
      settings: { 'security.workspace.trust.enabled': false, 'remote.autoForwardPorts': false },
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

  /**
   * Opens "MCP: List Servers" until `server` is listed. A list opened before VS Code has taken in CodeAct's definitions
   * shows none, and the palette may lose its focus meanwhile: a person closes it and opens it again.
   */
  const untilListed = (server: Locator, what: string, timeoutMs: number) =>
    waitUntil(
      async () => {
        await wb.dismissQuickInput();
        const opened = await wb.runCommand('MCP: List Servers').then(
          () => true,
          () => false,
        );
        return (
          opened &&
          server
            .first()
            .waitFor({ state: 'visible', timeout: 10_000 })
            .then(
              () => true,
              () => false,
            )
        );
      },
      timeoutMs,
      () => `VS Code never listed ${what} among its MCP servers:\n${cs!.extensionHostLogs().slice(-3000)}`,
      0,
    );

  /** Waits until "MCP: List Servers" shows `server` running (VS Code connected and listed its tools). */
  const untilRunning = (server: Locator, what: string) =>
    waitUntil(
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
      () => `VS Code never showed ${what} as running:\n${cs!.extensionHostLogs().slice(-3000)}`,
      1_000,
    );

  it("activates; VS Code lists CodeAct among its MCP servers, and started from there it runs the extension's codeact mcp serve", async () => {
    assert.ok(await wb.hasCommand('CodeAct: Open Chat', wb.wait(60_000)), "the extension's commands never arrived (activation failed?)");
    // Opening the list asks the extensions for their MCP servers (VS Code activates CodeAct for it).
    const server = rows().filter({ hasText: 'CodeAct' }).filter({ hasNotText: 'Add Server' });
    await untilListed(server, 'CodeAct', wb.wait(180_000));
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
    await untilRunning(server, 'the CodeAct MCP server');
  });

  it("the person chooses the panel's open conversation for VS Code's agent: VS Code lists that server, connects to it with its token and finds its tools", async () => {
    await wb.dismissQuickInput();
    await wb.runCommand("CodeAct: Choose the Python Session of VS Code's Agent (MCP)");
    await waitUntil(
      () => wb.answerQuickPick(/Which Python session should VS Code's agent use/, "The panel's open conversation"),
      wb.wait(30_000),
      () => 'the choice was never offered',
      250,
    );
    await wb.waitForNotification(/VS Code's agent now runs its CodeAct code in the panel's open conversation/, wb.wait(30_000));
    const shared = rows().filter({ hasText: 'CodeAct: panel conversation' });
    await untilListed(shared, "the server sharing the panel's conversation", wb.wait(120_000));
    await wb.screenshot('75-mcp-panel-conversation-listed-dark');
    const listed = await rows().allInnerTexts();
    assert.deepEqual(
      listed.filter((t) => /^\s*CodeAct(?!:)/.test(t)),
      [],
      `the server with sessions of its own gave its place: ${listed.join(' | ')}`,
    );
    await shared.first().click();
    const start = rows().filter({ hasText: /Start Server|Restart Server/ });
    await start.first().waitFor({ state: 'visible', timeout: wb.wait(30_000) });
    await start.first().click();
    // VS Code reached the extension host's loopback server with the token it was given and listed its tools (the
    // in-VS-Code suite, extension.suite.cjs, has VS Code's own MCP client run code there and the panel read it).
    await untilRunning(shared, 'the shared CodeAct MCP server');
    // It is the extension host's own server (loopback, its port), as CodeAct's log says.
    await waitUntil(
      () =>
        /CodeAct MCP server for VS Code's agent, sharing the CodeAct panel's open conversation: http:\/\/127\.0\.0\.1:\d+\/mcp/.test(cs!.extensionHostLogs()),
      wb.wait(30_000),
      () => `CodeAct's log never named the shared server:\n${cs!.extensionHostLogs().slice(-2000)}`,
      500,
    );
  });
});
