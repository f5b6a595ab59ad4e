/**
 * Which interpreter the local guest of a folder runs, in both hosts. The order:
 * codeact.python.path, the Python extension's selected environment, the folder's .venv (then venv),
 * python3. Real venvs (`/usr/bin/python3 -m venv --without-pip`), real files on disk (a FIFO for a
 * pyvenv.cfg must not hang the resolver), and the built CLI in a folder with a .venv.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runtimeConfigFrom } from '../../src/core/config/engine';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import { resolvePython } from '../../src/core/runtime/local/python';
import { resolvePythonEnv, venvOfInterpreter } from '../../src/core/runtime/local/pythonEnv';
import { runCli } from '../support/cli';

function venv(dir: string, extra: string[] = []): string {
  execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', ...extra, dir]);
  return path.join(dir, 'bin', 'python');
}

const VERSION = execFileSync('/usr/bin/python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' }).trim();

describe('python environment: which interpreter a folder runs', function () {
  this.timeout(120_000);
  let base = '';
  let folder = '';
  let dotVenv = '';
  let plainVenv = '';
  let other = '';

  before(() => {
    base = mkdtempSync(path.join(tmpdir(), 'codeact-pyenv-'));
    folder = path.join(base, 'project');
    mkdirSync(folder);
    dotVenv = venv(path.join(folder, '.venv'), ['--system-site-packages']);
    plainVenv = venv(path.join(folder, 'venv'));
    other = venv(path.join(base, 'elsewhere'));
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  it('the setting is unset by default, so the folder decides (it was "python3")', () => {
    const { config, origins } = resolveEngineConfig(() => undefined, { trusted: true });
    assert.equal(config.python, undefined);
    assert.equal(origins['python.path'], 'default');
  });

  it("the order: codeact.python.path, the Python extension's, .venv, venv, python3", () => {
    const all = resolvePythonEnv({ folder, setting: other, pythonExtensionPath: plainVenv });
    assert.deepEqual([all.source, all.python, all.venv, all.label], ['setting', other, path.join(base, 'elsewhere'), `elsewhere ${VERSION}`]);
    const ext = resolvePythonEnv({ folder, pythonExtensionPath: plainVenv });
    assert.deepEqual([ext.source, ext.python, ext.label], ['python-extension', plainVenv, `venv ${VERSION}`]);
    const found = resolvePythonEnv({ folder });
    assert.deepEqual(
      [found.source, found.python, found.venv, found.label, found.systemSitePackages],
      ['venv', dotVenv, path.join(folder, '.venv'), `.venv ${VERSION}`, true],
    );
    assert.match(found.reason, /the folder's \.venv/);
    rmSync(path.join(folder, '.venv', 'pyvenv.cfg'));
    try {
      const next = resolvePythonEnv({ folder });
      assert.deepEqual(
        [next.source, next.python, next.label, next.systemSitePackages],
        ['venv', plainVenv, `venv ${VERSION}`, false],
        'a .venv without pyvenv.cfg is no venv: venv/ is next',
      );
    } finally {
      venv(path.join(folder, '.venv'), ['--system-site-packages']);
    }
    const none = resolvePythonEnv({ folder: path.join(base, 'elsewhere', 'bin') });
    assert.deepEqual([none.source, none.python, none.label], ['system', 'python3', 'python3']);
    assert.equal(resolvePythonEnv({}).python, 'python3');
  });

  it("the Python extension's environment counts as a path (an interpreter or an environment folder), not its bare fallback command", () => {
    assert.equal(resolvePythonEnv({ folder, pythonExtensionPath: 'python' }).source, 'venv');
    assert.equal(resolvePythonEnv({ folder, pythonExtensionPath: path.join(base, 'missing', 'bin', 'python') }).source, 'venv');
    const dir = resolvePythonEnv({ folder, pythonExtensionPath: path.join(base, 'elsewhere') });
    assert.deepEqual([dir.source, dir.python], ['python-extension', other]);
    // A non-venv interpreter is named by its file.
    assert.deepEqual(
      [resolvePythonEnv({ pythonExtensionPath: '/usr/bin/python3' }).label, resolvePythonEnv({ pythonExtensionPath: '/usr/bin/python3' }).venv],
      ['python3', undefined],
    );
  });

  it("a setting may name the folder's interpreter relatively or with ${workspaceFolder}", () => {
    for (const setting of ['.venv/bin/python', '${workspaceFolder}/.venv/bin/python', './.venv/bin/python']) {
      const env = resolvePythonEnv({ folder, setting });
      assert.deepEqual([env.source, env.python, env.label], ['setting', dotVenv, `.venv ${VERSION}`], setting);
    }
    assert.equal(resolvePythonEnv({ folder, setting: 'python3.11' }).python, 'python3.11', 'a command stays a command');
  });

  it("an untrusted folder's own environments are never run (only the setting, as resolve.ts allowed it, and python3)", () => {
    const env = resolvePythonEnv({ folder, pythonExtensionPath: plainVenv, trusted: false });
    assert.deepEqual([env.source, env.python], ['system', 'python3']);
    assert.match(env.reason, /not trusted/);
    assert.equal(resolvePythonEnv({ folder, setting: other, trusted: false }).python, other);
  });

  it('a pyvenv.cfg that is a FIFO, too large, or a folder is no venv, and never blocks', () => {
    const odd = path.join(base, 'odd');
    for (const [name, make] of [
      ['fifo', (cfg: string) => execFileSync('mkfifo', [cfg])],
      ['large', (cfg: string) => writeFileSync(cfg, `home = /usr/bin\n${'x'.repeat(64 * 1024)}\n`)],
      ['dir', (cfg: string) => mkdirSync(cfg)],
    ] as const) {
      const f = path.join(odd, name);
      mkdirSync(path.join(f, '.venv', 'bin'), { recursive: true });
      writeFileSync(path.join(f, '.venv', 'bin', 'python'), '#!/bin/sh\n', { mode: 0o755 });
      make(path.join(f, '.venv', 'pyvenv.cfg'));
      const env = resolvePythonEnv({ folder: f });
      assert.deepEqual([env.source, env.python], ['system', 'python3'], name);
      assert.equal(venvOfInterpreter(path.join(f, '.venv', 'bin', 'python')), undefined, name);
    }
  });

  it("both hosts' runtime configuration runs the folder's .venv when nothing else is chosen", () => {
    const { config } = resolveEngineConfig(() => undefined, { trusted: true });
    assert.equal(runtimeConfigFrom(config, { workspace: folder, longLived: false }).local?.python, dotVenv);
    assert.equal(runtimeConfigFrom(config, { workspace: folder, longLived: false, trusted: false }).local?.python, 'python3');
    assert.equal(runtimeConfigFrom(config, { workspace: folder, longLived: false, python: other }).local?.python, other, "the host's own resolution wins");
    const set = resolveEngineConfig((k) => (k === 'python.path' ? { user: '/usr/bin/python3' } : undefined), { trusted: true }).config;
    assert.equal(runtimeConfigFrom(set, { workspace: folder, longLived: false }).local?.python, '/usr/bin/python3');
  });

  it('a venv made anew at the same path is probed anew (the probe is cached per pyvenv.cfg)', async () => {
    const dir = path.join(base, 'remade');
    const python = venv(dir);
    assert.ok(!(await resolvePython(python)).path.includes('/usr/lib/python3/dist-packages'));
    rmSync(dir, { recursive: true, force: true });
    venv(dir, ['--system-site-packages']);
    assert.ok((await resolvePython(python)).path.includes('/usr/lib/python3/dist-packages'), 'the new venv sees the system site-packages');
  });

  it("the CLI runs the --workspace folder's .venv (trusted), and python3 in an untrusted folder", async () => {
    const code = ['import sys', 'print("prefix=" + sys.prefix)'].join('\n');
    const file = path.join(base, 'where.py');
    writeFileSync(file, code);
    const trusted = await runCli(['run', file, '--workspace', folder, '--sandbox', 'none']);
    assert.equal(trusted.code, 0, trusted.stderr);
    assert.match(trusted.stdout, new RegExp(`prefix=${path.join(folder, '.venv').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`));
    const untrusted = await runCli(['run', file, '--workspace', folder, '--sandbox', 'none'], { CODEACT_TRUST_WORKSPACE: '0' });
    assert.equal(untrusted.code, 0, untrusted.stderr);
    assert.doesNotMatch(untrusted.stdout, /prefix=.*\.venv/);
  });
});
