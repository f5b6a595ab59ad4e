/**
 * The sandbox runs a folder's venv as the venv. Two real venvs made by Debian's
 * `/usr/bin/python3 -m venv`: one with `--system-site-packages` (it sees Debian's Pillow as well as its
 * own package), one without (it does not). Inside bubblewrap, cold and forked from the warm zygote, as
 * root and as an unprivileged user: sys.prefix is the venv, the venv's own package imports, and the
 * venv's site-packages is read-only. Two runtimes with two venvs run two zygotes, each forking guests
 * of its own interpreter. The venvs live under /tmp (the sandbox's /tmp is a tmpfs: the venv is mounted over it).
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { resolvePython } from '../../src/core/runtime/local/python';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { cannotSwitchUser, runInChild, runScriptInChild, TESTER } from './support/asUser';

const REPO = path.resolve(__dirname, '..', '..');

/** A venv with a tiny package of its own (`<name>pkg`, VALUE = value) in its site-packages. */
function makeVenv(dir: string, name: string, value: number, systemSite: boolean): { python: string; site: string } {
  execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', ...(systemSite ? ['--system-site-packages'] : []), dir]);
  const python = path.join(dir, 'bin', 'python');
  const site = execFileSync(python, ['-I', '-c', 'import site; print(site.getsitepackages()[0])'], { encoding: 'utf8' }).trim();
  mkdirSync(path.join(site, `${name}pkg`));
  writeFileSync(path.join(site, `${name}pkg`, '__init__.py'), `VALUE = ${value}\n`);
  return { python, site };
}

const CHECK = (pkg: string) => String.raw`
import sys, os, importlib
out = {"prefix": sys.prefix, "executable": sys.executable, "own": None, "pil": None, "write": None}
out["own"] = importlib.import_module("${pkg}").VALUE
try:
    import PIL
    out["pil"] = PIL.__file__.startswith("/usr/lib/python3/dist-packages/")
except ImportError:
    out["pil"] = "ImportError"
try:
    open(os.path.join(importlib.import_module("${pkg}").__path__[0], "planted.py"), "w").write("x = 1")
    out["write"] = "written"
except OSError as e:
    out["write"] = type(e).__name__
return out`;

/** Two runtimes (two interpreters) with a warm zygote each, run at the same time. */
const TWO_ZYGOTES = String.raw`
import { LocalRuntime } from '${REPO}/src/core/runtime/local/localRuntime';
(async () => {
  const { runs } = JSON.parse(process.argv[2]);
  const out = await Promise.all(runs.map(async (r: { python: string; code: string }) => {
    const rt = new LocalRuntime({ python: r.python, sandbox: { kind: 'bubblewrap' }, zygote: true, prestart: false });
    const item = await rt.execute({ code: r.code, timeoutMs: 120_000 }, {});
    const again = await rt.execute({ code: 'import sys\nreturn sys.prefix', timeoutMs: 120_000 }, {});
    await rt.dispose();
    return { status: item.status, value: item.value, error: item.error, sandbox: item.sandbox?.kind, again: again.value };
  }));
  console.log(JSON.stringify(out));
})();
`;

describe("sandbox: a folder's venv runs as the venv", function () {
  this.timeout(300_000);
  let base = '';
  let withSystem = { python: '', site: '' };
  let isolated = { python: '', site: '' };
  let skip: string | null = null;

  before(async () => {
    skip = await probeBubblewrap();
    if (skip) return;
    // Under /tmp, where the sandbox has a tmpfs of its own: the venv is mounted over it, not hidden by it.
    base = mkdtempSync(path.join(tmpdir(), 'codeact-pyvenv-'));
    chmodSync(base, 0o755);
    withSystem = makeVenv(path.join(base, 'one', '.venv'), 'alpha', 1, true);
    isolated = makeVenv(path.join(base, 'two', '.venv'), 'beta', 2, false);
  });
  after(() => {
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it("the probe keeps a venv's interpreter and mounts its site-packages (and the system's, with --system-site-packages)", async function () {
    if (skip) return this.skip();
    const one = await resolvePython(withSystem.python);
    assert.equal(one.executable, withSystem.python);
    assert.equal(one.prefix, path.join(base, 'one', '.venv'));
    assert.ok(one.roots.includes(path.join(base, 'one', '.venv')), JSON.stringify(one.roots));
    assert.ok(one.path.includes('/usr/lib/python3/dist-packages'), 'the system site-packages are on its path');
    const two = await resolvePython(isolated.python);
    assert.equal(two.prefix, path.join(base, 'two', '.venv'));
    assert.ok(!two.path.includes('/usr/lib/python3/dist-packages'), 'an isolated venv does not see the system site-packages');
  });

  const users = [{ label: process.getuid?.() === 0 ? 'as root' : 'as this user' }, { label: `as an unprivileged user (${TESTER.name})`, user: TESTER }];
  for (const { label, user } of users) {
    for (const zygote of [false, true]) {
      it(`${label}, ${zygote ? 'forked from the zygote' : 'cold start'}: sys.prefix is the venv, its package imports, the system's only with --system-site-packages, and the venv is read-only`, async function () {
        const why = skip ?? (user ? cannotSwitchUser() : null);
        if (why) {
          console.log(`      skipped: ${why}`);
          return this.skip();
        }
        const one = await runInChild(CHECK('alphapkg'), { python: withSystem.python, sandbox: { kind: 'bubblewrap' }, zygote }, user);
        assert.equal(one.item.status, 'completed', JSON.stringify(one.item.error));
        assert.equal(one.item.sandbox?.kind, 'bubblewrap');
        assert.deepEqual(one.item.value, { prefix: path.join(base, 'one', '.venv'), executable: withSystem.python, own: 1, pil: true, write: 'OSError' });
        const two = await runInChild(CHECK('betapkg'), { python: isolated.python, sandbox: { kind: 'bubblewrap' }, zygote }, user);
        assert.equal(two.item.status, 'completed', JSON.stringify(two.item.error));
        assert.deepEqual(two.item.value, {
          prefix: path.join(base, 'two', '.venv'),
          executable: isolated.python,
          own: 2,
          pil: 'ImportError',
          write: 'OSError',
        });
      });
    }

    it(`${label}: in a writable workspace (under /tmp) the folder's own .venv stays read-only, cold and forked`, async function () {
      const why = skip ?? (user ? cannotSwitchUser() : null);
      if (why) return this.skip();
      const workspace = path.join(base, 'one');
      chmodSync(workspace, 0o777);
      const code = `${CHECK('alphapkg').replace('return out', '')}\nopen(${JSON.stringify(path.join(workspace, 'made.txt'))}, "w").write("ok")\nout["workspace"] = "written"\nreturn out`;
      for (const zygote of [false, true]) {
        // Independent of an earlier run (another user's) that may have failed before removing its file.
        rmSync(path.join(workspace, 'made.txt'), { force: true });
        const o = await runInChild(code, { python: withSystem.python, sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace }, zygote }, user);
        assert.equal(o.item.status, 'completed', JSON.stringify(o.item.error));
        assert.equal(o.item.sandbox?.workspace, 'readwrite');
        assert.deepEqual(
          o.item.value,
          { prefix: path.join(workspace, '.venv'), executable: withSystem.python, own: 1, pil: true, write: 'OSError', workspace: 'written' },
          `zygote: ${zygote}`,
        );
        rmSync(path.join(workspace, 'made.txt'));
      }
    });

    it(`${label}: two folders' venvs run two zygotes, each forking guests of its own interpreter`, async function () {
      const why = skip ?? (user ? cannotSwitchUser() : null);
      if (why) return this.skip();
      const runs = [
        { python: withSystem.python, code: 'import sys, alphapkg\nreturn [sys.prefix, alphapkg.VALUE]' },
        { python: isolated.python, code: 'import sys, betapkg\nreturn [sys.prefix, betapkg.VALUE]' },
      ];
      const out = await runScriptInChild<Array<{ status: string; value: unknown; error: unknown; sandbox: string; again: unknown }>>(
        TWO_ZYGOTES,
        { runs },
        user,
        'two runtimes',
      );
      assert.deepEqual(
        out.map((o) => [o.status, o.sandbox]),
        [
          ['completed', 'bubblewrap'],
          ['completed', 'bubblewrap'],
        ],
        JSON.stringify(out.map((o) => o.error)),
      );
      assert.deepEqual(
        out.map((o) => o.value),
        [
          [path.join(base, 'one', '.venv'), 1],
          [path.join(base, 'two', '.venv'), 2],
        ],
      );
      assert.deepEqual(
        out.map((o) => o.again),
        [path.join(base, 'one', '.venv'), path.join(base, 'two', '.venv')],
      );
    });
  }
});
