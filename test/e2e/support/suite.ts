/**
 * The lifecycle most e2e suites share: a packaged extension in code-server on a copy of examples/orders,
 * a loopback model server, headless Chromium on the trusted folder, the chat panel; everything stopped
 * after the suite, and a screenshot of the workbench when a test fails.
 */
import type { Browser } from 'playwright-core';
import { startServerFor } from '../../support/wire/harness';
import type { WireServer } from '../../support/wire/server';
import { ChatPanel } from './chatPanel';
import { CodeServer, packageExtension } from './codeServer';
import { skipUnlessE2E } from './env';
import { Workbench, launchChromium } from './workbench';
import { makeWorkspace, type Workspace } from './workspace';

export interface CodeServerSuite {
  ws: Workspace;
  wire: WireServer;
  cs: CodeServer;
  wb: Workbench;
  panel: ChatPanel;
}

/**
 * Registers before/after/afterEach on the calling `describe`; the returned object is filled in by
 * `before`. `settings(wireUrl)` gives the user settings; `name` names the server's folder and the
 * failure screenshots.
 */
export function useCodeServer(options: { name: string; wire: Parameters<typeof startServerFor>; settings: (wireUrl: string) => Record<string, unknown>; minWaitMs: number }): CodeServerSuite {
  const suite = {} as CodeServerSuite;
  let browser: Browser | undefined;
  before(async function () {
    skipUnlessE2E(this);
    this.timeout(300_000);
    const vsix = await packageExtension();
    suite.ws = makeWorkspace();
    suite.wire = await startServerFor(...options.wire);
    suite.cs = await CodeServer.start({ vsix, workspace: suite.ws.folder, settings: options.settings(suite.wire.url), name: options.name });
    browser = await launchChromium();
    suite.wb = await Workbench.open(browser, suite.cs.folderUrl);
    suite.wb.minWaitMs = options.minWaitMs;
    await suite.wb.trustFolder();
    suite.panel = new ChatPanel(suite.wb);
  });
  after(async () => {
    await browser?.close().catch(() => undefined);
    await suite.cs?.stop();
    await suite.wire?.close();
    suite.ws?.dispose();
  });
  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && suite.wb) {
      const path = await suite.wb.screenshot(`failed-${options.name}-${this.currentTest.title.replace(/\W+/g, '-').slice(0, 50)}`).catch(() => '');
      console.log(`      screenshot of the failure: ${path}`);
    }
  });
  return suite;
}
