/**
 * The standard `@vscode/test-electron` launcher: runs test/e2e/electron/extension.suite.cjs inside a
 * desktop VS Code with the extension under development (the production build, in a temporary copy of
 * the repository) and a trusted copy of examples/orders.
 *
 * VS Code comes from `VSCODE_EXECUTABLE` (a local install), or is downloaded by @vscode/test-electron
 * when `CODEACT_VSCODE_DOWNLOAD=1` (needs internet; version from `CODEACT_VSCODE_VERSION`, default
 * 1.100.3, cached in .vscode-test/). Without either it skips with one line: this machine is offline,
 * and the same extension is exercised in code-server by codeServer.test.ts.
 */
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
  if (process.env.CODEACT_VSCODE_DOWNLOAD === '1') {
    const { downloadAndUnzipVSCode } = await import('@vscode/test-electron');
    return { path: await downloadAndUnzipVSCode({ version: VERSION, cachePath: join(ROOT, '.vscode-test') }) };
  }
  return { skip: `electron suite skipped: no VS Code binary (set VSCODE_EXECUTABLE to a local VS Code, or CODEACT_VSCODE_DOWNLOAD=1 to download ${VERSION} when online)` };
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
        launchArgs: [ws.folder, '--disable-extensions', '--disable-workspace-trust', '--skip-welcome', '--skip-release-notes', '--disable-gpu', '--user-data-dir', userData],
        extensionTestsEnv: { ...FAKE_KEYS, CODEACT_E2E_WORKSPACE: ws.folder },
      });
    } finally {
      ws.dispose();
      rmSync(userData, { recursive: true, force: true });
    }
  });
});
