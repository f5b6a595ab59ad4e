/**
 * The sandbox mounts the interpreter's own folders (its prefixes and site-packages)
 * and, of editable installs of other projects, only each package's own folder. Folders that `.pth`
 * files add to sys.path must not bring those projects' .env, .ssh or other source into the sandbox.
 * A real venv (`/usr/bin/python3 -m venv --without-pip`) with three editable installs:
 * - proj1: a `.pth` naming its src/ folder, no metadata (the package is found by its __init__.py);
 * - proj2: a `.pth` naming the project root (flat layout), with a dist-info whose top_level.txt names
 *   the package (tests/ has an __init__.py too, and stays out);
 * - proj3: a setuptools-style editable finder whose MAPPING names the package folder.
 * The venv's interpreter is kept as it is (not resolved to /usr/bin/python3): sys.prefix is the venv.
 * Run as root and as an unprivileged user, cold and forked.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { cannotSwitchUser, runInChild, TESTER } from './support/asUser';

function write(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

/** A project folder with secrets and source around its package. */
function project(root: string, pkgDir: string, pkg: string, value: number): void {
  write(path.join(root, '.env'), 'OPENAI_API_KEY=sk-project-secret\n');
  write(path.join(root, '.ssh', 'id_ed25519'), '-----BEGIN OPENSSH PRIVATE KEY-----\n');
  write(path.join(root, 'notes.py'), 'SECRET = "other source"\n');
  write(path.join(pkgDir, pkg, '__init__.py'), `VALUE = ${value}\n`);
}

function makeVenv(base: string): { venv: string; projects: Record<string, string> } {
  const venv = path.join(base, 'venv');
  execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', venv]);
  const site = execFileSync(path.join(venv, 'bin', 'python'), ['-I', '-c', 'import site; print(site.getsitepackages()[0])'], { encoding: 'utf8' }).trim();
  const p1 = path.join(base, 'proj1');
  project(p1, path.join(p1, 'src'), 'mypkg1', 1);
  write(path.join(p1, 'src', 'unrelated.txt'), 'not a package\n');
  write(path.join(site, '__editable__.proj1-0.1.pth'), `${path.join(p1, 'src')}\n`);
  const p2 = path.join(base, 'proj2');
  project(p2, p2, 'mypkg2', 2);
  write(path.join(p2, 'setup.py'), 'from setuptools import setup\nsetup()\n');
  write(path.join(p2, 'tests', '__init__.py'), '');
  write(path.join(site, 'proj2.pth'), `${p2}\n`);
  write(path.join(site, 'proj2-0.1.dist-info', 'METADATA'), 'Metadata-Version: 2.1\nName: proj2\nVersion: 0.1\n');
  write(path.join(site, 'proj2-0.1.dist-info', 'top_level.txt'), 'mypkg2\n');
  const p3 = path.join(base, 'proj3');
  project(p3, p3, 'mypkg3', 3);
  write(
    path.join(site, '__editable___proj3_0_1_finder.py'),
    [
      'import sys, importlib.util',
      `MAPPING = {"mypkg3": ${JSON.stringify(path.join(p3, 'mypkg3'))}}`,
      'class _Finder:',
      '    @classmethod',
      '    def find_spec(cls, name, path=None, target=None):',
      '        if name in MAPPING:',
      '            return importlib.util.spec_from_file_location(name, MAPPING[name] + "/__init__.py", submodule_search_locations=[MAPPING[name]])',
      'def install():',
      '    sys.meta_path.append(_Finder)',
      '',
    ].join('\n'),
  );
  write(path.join(site, '__editable__.proj3-0.1.pth'), 'import __editable___proj3_0_1_finder; __editable___proj3_0_1_finder.install()\n');
  return { venv, projects: { p1, p2, p3 } };
}

const CHECK = String.raw`
import os, sys
out = {"prefix": sys.prefix, "values": []}
for name in ("mypkg1", "mypkg2", "mypkg3"):
    try:
        out["values"].append(__import__(name).VALUE)
    except Exception as e:
        out["values"].append(type(e).__name__)
out["visible"] = sorted(
    os.path.relpath(p, BASE) for p in (
        [os.path.join(BASE, d, n) for d in ("proj1", "proj2", "proj3") for n in (".env", ".ssh", "notes.py", "setup.py", "tests")]
        + [os.path.join(BASE, "proj1", "src", "unrelated.txt")]
    ) if os.path.exists(p))
out["src"] = sorted(os.listdir(os.path.join(BASE, "proj1", "src"))) if os.path.isdir(os.path.join(BASE, "proj1", "src")) else None
return out`;

describe('interpreter mounts: a venv with editable installs of other projects', function () {
  this.timeout(240_000);
  let base = '';
  let venv = '';
  let skip: string | null = null;

  before(async () => {
    skip = await probeBubblewrap();
    if (skip) return;
    // Not under /tmp: the sandbox's own /tmp is a tmpfs over it.
    base = mkdtempSync(path.join('/var/tmp', 'codeact-venv-'));
    chmodSync(base, 0o755);
    venv = makeVenv(base).venv;
  });
  after(() => {
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('outside the sandbox the venv imports all three packages (the setup is real)', () => {
    if (skip) return;
    const out = execFileSync(
      path.join(venv, 'bin', 'python'),
      ['-I', '-c', 'import sys, mypkg1, mypkg2, mypkg3; print(sys.prefix, mypkg1.VALUE + mypkg2.VALUE + mypkg3.VALUE)'],
      { encoding: 'utf8' },
    );
    assert.equal(out.trim(), `${venv} 6`);
  });

  const users = [{ label: process.getuid?.() === 0 ? 'as root' : 'as this user' }, { label: `as an unprivileged user (${TESTER.name})`, user: TESTER }];
  for (const { label, user } of users) {
    for (const zygote of [false, true]) {
      it(`${label}, ${zygote ? 'forked from the zygote' : 'cold start'}: the venv is kept, each package imports, and nothing else of the projects is there`, async function () {
        const why = skip ?? (user ? cannotSwitchUser() : null);
        if (why) {
          console.log(`      skipped: ${why}`);
          return this.skip();
        }
        const o = await runInChild(
          `BASE = ${JSON.stringify(base)}\n${CHECK}`,
          { python: path.join(venv, 'bin', 'python'), sandbox: { kind: 'bubblewrap' }, zygote },
          user,
        );
        assert.equal(o.item.status, 'completed', JSON.stringify(o.item.error));
        assert.equal(o.item.sandbox?.kind, 'bubblewrap');
        assert.deepEqual(o.item.value, { prefix: venv, values: [1, 2, 3], visible: [], src: ['mypkg1'] });
      });
    }
  }
});
