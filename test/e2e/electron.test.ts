/**
 * The standard `@vscode/test-electron` launcher: runs test/e2e/electron/extension.suite.cjs inside a
 * desktop VS Code with the extension under development (the production build, in a temporary copy of
 * the repository) and a trusted copy of examples/orders.
 *
 * VS Code comes from `VSCODE_EXECUTABLE` (a local install), or is downloaded by @vscode/test-electron
 * wherever the download host resolves (version from `CODEACT_VSCODE_VERSION`, default 1.100.3, cached in
 * .vscode-test/; `CODEACT_VSCODE_DOWNLOAD=0` turns the download off). Offline, it skips with one line; the
 * same extension is exercised in code-server by codeServer.test.ts.
 */
import { lookup } from 'node:dns/promises';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildExtensionCopy, FAKE_KEYS } from './support/codeServer';
import { ROOT } from './support/env';
import { makeWorkspace } from './support/workspace';

const VERSION = process.env.CODEACT_VSCODE_VERSION ?? '1.100.3';

/** A VS Code executable, or why there is none. */
async function vscodeExecutable(): Promise<{ path: string } | { skip: string }> {
  const explicit = process.env.VSCODE_EXECUTABLE;
  if (explicit) {
    return existsSync(explicit) ? { path: explicit } : { skip: `electron suite skipped: VSCODE_EXECUTABLE=${explicit} does not exist` };
  }
  if (process.env.CODEACT_VSCODE_DOWNLOAD === '0') {
    return { skip: 'electron suite skipped: CODEACT_VSCODE_DOWNLOAD=0 and no VSCODE_EXECUTABLE' };
  }
  // Download wherever VS Code can be downloaded; a quick look-up first, so an offline machine skips at once.
  const reachable = await Promise.race([
    lookup('update.code.visualstudio.com').then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((r) => setTimeout(() => r(false), 5000).unref()),
  ]);
  if (!reachable) {
    return { skip: `electron suite skipped: VS Code ${VERSION} cannot be downloaded here (offline); set VSCODE_EXECUTABLE to a local VS Code to run it` };
  }
  const { downloadAndUnzipVSCode } = await import('@vscode/test-electron');
  return { path: await downloadAndUnzipVSCode({ version: VERSION, cachePath: join(ROOT, '.vscode-test') }) };
}

describe('e2e: @vscode/test-electron suite', function () {
  this.timeout(600_000);

  it('runs the extension tests inside desktop VS Code', async function () {
    const exe = await vscodeExecutable();
    if ('skip' in exe) {
      console.log(`      ${exe.skip}`);
      this.skip();
    }
    if (process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) {
      console.log('      electron suite skipped: no display for VS Code (run it under xvfb-run)');
      this.skip();
    }
    const { runTests } = await import('@vscode/test-electron');
    const extension = await buildExtensionCopy();
    const ws = makeWorkspace();
    const userData = mkdtempSync(join(tmpdir(), 'codeact-electron-ud-'));
    try {
      await runTests({
        vscodeExecutablePath: exe.path,
        extensionDevelopmentPath: extension,
        extensionTestsPath: join(__dirname, 'electron', 'index.cjs'),
        launchArgs: [
          ws.folder,
          '--disable-extensions',
          '--disable-workspace-trust',
          '--skip-welcome',
          '--skip-release-notes',
          '--disable-gpu',
          '--user-data-dir',
          userData,
        ],
        extensionTestsEnv: { ...FAKE_KEYS, CODEACT_E2E_WORKSPACE: ws.folder },
      });
    } finally {
      ws.dispose();
      rmSync(userData, { recursive: true, force: true });
    }
  });
});
