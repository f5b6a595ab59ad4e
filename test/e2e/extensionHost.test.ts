/**
 * The in-VS-Code extension suite (test/e2e/electron/extension.suite.cjs, the one @vscode/test-electron
 * runs in desktop VS Code) run here in code-server's extension host instead: the web workbench loads the
 * production build as the extension under development and runs the suite, as @vscode/test-web does.
 * The suite's output arrives in the browser console; the extension host's exit code says pass or fail.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { CodeServer, buildExtensionCopy } from './support/codeServer';
import { skipUnlessE2E } from './support/env';
import { launchChromium } from './support/workbench';
import { makeWorkspace, type Workspace } from './support/workspace';

describe("e2e: the in-VS-Code suite in code-server's extension host", function () {
  this.timeout(180_000);
  let ws: Workspace | undefined;
  let cs: CodeServer | undefined;
  let browser: Browser | undefined;

  before(async function () {
    skipUnlessE2E(this);
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    ws?.dispose();
  });

  it('runs test/e2e/electron/extension.suite.cjs and every test passes', async () => {
    const extension = await buildExtensionCopy();
    ws = makeWorkspace();
    cs = await CodeServer.start({
      workspace: ws.folder,
      // The desktop launcher passes --disable-workspace-trust; this is the same.
      settings: { 'security.workspace.trust.enabled': false, 'codeact.python.path': '/usr/bin/python3' },
      // VS Code 1.139's web workbench takes the payload's extensionDevelopmentPath/extensionTestsPath only with the
      // server's --enable-smoke-test-driver (code-server 4.139 reads it from VSCODE_OPTIONS; 4.100 ignores it).
      env: { CODEACT_E2E_WORKSPACE: ws.folder, VSCODE_OPTIONS: 'enable-smoke-test-driver' },
      name: 'extension-host-suite',
    });
    browser = await launchChromium();
    const page = await browser.newPage();
    const lines: string[] = [];
    let inSuite = false;
    page.on('console', async (m) => {
      // Extension host console output arrives as console.log('%c INFO', 'color: …', format, ...args).
      const args = (await Promise.all(m.args().map((a) => a.jsonValue().catch(() => '')))) as unknown[];
      if (typeof args[0] !== 'string' || !args[0].startsWith('%c')) return; // the browser's own messages
      const text = printf(args.slice(2))
        .replace(/\u001b\[\d+m/g, '')
        .trimEnd();
      if (/CodeAct inside VS Code/.test(text)) inSuite = true;
      if (inSuite && text.trim()) lines.push(text);
    });
    await page.goto(cs.developmentUrl(extension, join(__dirname, 'electron', 'index.cjs')));
    // The suite invokes the language-model tool outside a chat, where VS Code would ask with the tool's confirmation:
    // an extension test run confirms its dialogs by itself ("DialogService: Dialog requested during smoke test").
    const [, code] = await cs.waitForLog(/Extension Host Process exited with code: (\d+)/, 150_000);
    const report = lines.join('\n');
    console.log(
      report
        .split('\n')
        .map((l) => `      | ${l}`)
        .join('\n'),
    );
    assert.equal(code, '0', `the extension host suite failed:\n${report}`);
    assert.match(report, /passing/);
    assert.doesNotMatch(report, /failing/);
  });
});

/** console.log's own `%s`/`%d` substitution, enough for mocha's spec reporter. */
function printf(args: unknown[]): string {
  if (typeof args[0] !== 'string') return args.map(String).join(' ');
  let i = 1;
  const head = args[0].replace(/%[sdi]/g, () => (i < args.length ? String(args[i++]) : ''));
  return [head, ...args.slice(i).map(String)].join(' ');
}
