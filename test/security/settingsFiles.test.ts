/**
 * Settings files are read only when they are regular files under a size cap: the
 * folder's .vscode/settings.json, the user's CLI settings and the CLI's trust file. A FIFO (made with
 * mkfifo, nobody writing), a symbolic link to /dev/zero, a folder or a file over the cap is a clear error
 * naming the file, and the CLI ends (exit 2) instead of hanging or filling its memory. The built CLI runs
 * in a child process, so a hang on today's main shows as "did not end" here, and the test still ends.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI, ROOT } from '../support/cli';
import { SETTINGS_FILE_ERRORS } from '../../src/core/config/workspaceFile';

/** Budget for one CLI run: it starts in about a second; a run that blocks on a FIFO never ends. */
const BUDGET_MS = 30_000;

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  hung: boolean;
}

function cli(args: string[], env: NodeJS.ProcessEnv, input = 'return 1\n'): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: env.CODEACT_HOME, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, BUDGET_MS);
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.stdin.on('error', () => {});
    child.stdin.end(input);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, hung });
    });
  });
}

describe('security: settings files are regular files under a cap', function () {
  this.timeout(4 * BUDGET_MS);
  if (process.platform !== 'linux') {
    it('skipped: mkfifo and /dev/zero are Linux here', function () {
      this.skip();
    });
    return;
  }
  let dir: string;
  let ws: string;
  let home: string;
  const wsSettings = () => path.join(ws, '.vscode', 'settings.json');
  beforeEach(() => {
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-settings-files-')));
    ws = path.join(dir, 'project');
    home = path.join(dir, 'home');
    mkdirSync(path.join(ws, '.vscode'), { recursive: true });
    mkdirSync(home);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const run = (env: NodeJS.ProcessEnv = {}) =>
    cli(['run', '-', '--json', '--sandbox', 'none', '--workspace', ws], { CODEACT_HOME: home, CODEACT_TRUST_WORKSPACE: '1', ...env });
  const ended = (r: Outcome) =>
    assert.equal(r.hung, false, `the CLI did not end within ${BUDGET_MS / 1000} s (it blocked reading the file)\nstderr: ${r.stderr}`);

  it("the folder's .vscode/settings.json as a FIFO: a clear error naming it, and the CLI ends", async () => {
    execFileSync('mkfifo', [wsSettings()]);
    const r = await run();
    ended(r);
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `codeact: ${wsSettings().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is a named pipe \\(FIFO\\), not a regular file; CodeAct reads settings only from regular files\\. Replace it with a JSON file, or remove it\\.`,
      ),
    );
  });

  it("the user's settings.json as a FIFO", async () => {
    execFileSync('mkfifo', [path.join(home, 'settings.json')]);
    const r = await run();
    ended(r);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(SETTINGS_FILE_ERRORS.notRegular(path.join(home, 'settings.json'), 'a named pipe (FIFO)')), r.stderr);
  });

  it('the trust file as a FIFO: `codeact run` in an untrusted folder and `codeact trust` both end with a clear error', async () => {
    execFileSync('mkfifo', [path.join(home, 'trusted-folders.json')]);
    writeFileSync(wsSettings(), '{"codeact.sandbox.kind": "none"}');
    const r = await run({ CODEACT_TRUST_WORKSPACE: '' });
    ended(r);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(SETTINGS_FILE_ERRORS.notRegular(path.join(home, 'trusted-folders.json'), 'a named pipe (FIFO)')), r.stderr);
    const t = await cli(['trust', ws], { CODEACT_HOME: home });
    ended(t);
    assert.equal(t.code, 2, t.stderr);
    assert.ok(t.stderr.includes(SETTINGS_FILE_ERRORS.notRegular(path.join(home, 'trusted-folders.json'), 'a named pipe (FIFO)')), t.stderr);
  });

  it('a symbolic link to /dev/zero: refused as a device, not read until memory runs out', async () => {
    symlinkSync('/dev/zero', wsSettings());
    const r = await run();
    ended(r);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(SETTINGS_FILE_ERRORS.notRegular(wsSettings(), 'a device')), r.stderr);
  });

  it('a folder in place of the file, and a file over the 4 MiB cap', async () => {
    mkdirSync(wsSettings());
    const folder = await run();
    ended(folder);
    assert.equal(folder.code, 2, folder.stderr);
    assert.ok(folder.stderr.includes(SETTINGS_FILE_ERRORS.notRegular(wsSettings(), 'a folder')), folder.stderr);
    rmSync(wsSettings(), { recursive: true });
    writeFileSync(wsSettings(), `{"codeact.model": "${'x'.repeat(5 * 1024 * 1024)}"}`);
    const big = await run();
    ended(big);
    assert.equal(big.code, 2, big.stderr);
    assert.ok(big.stderr.includes(SETTINGS_FILE_ERRORS.tooLarge(wsSettings(), 4)), big.stderr);
  });

  it('a symbolic link to a regular settings file still works (dotfile setups)', async () => {
    const real = path.join(dir, 'shared-settings.json');
    writeFileSync(real, '{"codeact.timeoutSeconds": 60}');
    symlinkSync(real, wsSettings());
    const r = await run();
    ended(r);
    assert.equal(r.code, 0, r.stderr);
    const done = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; item?: { value?: unknown } })
      .find((e) => e.type === 'response.output_item.done');
    assert.equal(done?.item?.value, 1);
  });
});
