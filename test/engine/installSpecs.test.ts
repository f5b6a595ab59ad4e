/**
 * install_packages hands pip package names only, and pip runs among nothing the code wrote: a real pip in a
 * real venv, installing offline from a folder of wheels made in the test. The host's working directory is a
 * folder the code filled (as a `readwrite` workspace the CLI runs in would be): a wheel named like a spec, and
 * a `pip` package that `python -m pip` would import first from its working directory.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { packageInstaller, type InstallApproval } from '../../src/core/runtime/install/installer';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { makeVenv, makeWheel, SYSTEM_PYTHON } from '../support/wheels';

describe('install_packages: nothing the code wrote reaches pip', function () {
  this.timeout(240_000);
  let root: string;
  let wheels: string;
  let planted: string;
  let marker: string;
  let venvPython: string;
  const cwd = process.cwd();

  before(() => {
    root = mkdtempSync(path.join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'codeact-specs-'));
    wheels = path.join(root, 'wheels');
    makeWheel(wheels, 'codeact-demo-pkg', '1.0', 'VALUE = 42');
    venvPython = makeVenv(path.join(root, '.venv'));
    // What the code left in the folder the host runs in: wheels named like specs, and a module named pip.
    planted = path.join(root, 'planted');
    marker = path.join(root, 'marker');
    for (const name of ['planted-pkg', 'PLANTED']) makeWheel(planted, name, '1.0', 'VALUE = "planted"');
    writeFileSync(path.join(planted, 'x.zip'), 'not a zip');
    mkdirSync(path.join(planted, 'pip'));
    const payload = `open(${JSON.stringify(marker)}, "a").write("the planted pip ran\\n")\n`;
    writeFileSync(path.join(planted, 'pip', '__init__.py'), payload);
    writeFileSync(path.join(planted, 'pip', '__main__.py'), payload);
    process.chdir(planted);
  });
  after(() => {
    process.chdir(cwd);
    rmSync(root, { recursive: true, force: true });
  });

  function setup() {
    const asked: InstallApproval[] = [];
    const runtime = new LocalRuntime({ python: venvPython, sandbox: { kind: 'auto' } });
    const gateway = new ToolGateway([], {
      installer: packageInstaller({
        python: venvPython,
        installArgs: ['--no-index', '--find-links', wheels],
        approve: async (a) => (asked.push(a), 'allowed'),
        env: { ...process.env, PIP_CONFIG_FILE: '/dev/null' },
      }),
    });
    const run = (code: string) => runtime.execute({ code }, { onToolCall: gateway.handler });
    return { runtime, asked, run };
  }

  const imports = (module: string) => {
    try {
      execFileSync(venvPython, ['-c', `import ${module}`], { stdio: 'pipe' });
      return true;
    } catch {
      return false;
    }
  };

  it('a spec pip would read as a file, an archive, a path or a URL is refused before anyone is asked, however it is spelled', async () => {
    const { runtime, asked, run } = setup();
    try {
      const cases: Array<[string, RegExp]> = [
        ['planted_pkg-1.0-py3-none-any.whl', /ends like an archive or wheel file/],
        ['PLANTED-1.0-PY3-NONE-ANY.WHL', /ends like an archive or wheel file/],
        ['x.zip', /ends like an archive or wheel file/],
        ['pkg.tar.gz', /ends like an archive or wheel file/],
        ['pkg.TGZ', /ends like an archive or wheel file/],
        ['pkg.tar.bz2', /ends like an archive or wheel file/],
        ['planted_pkg-1.0-py3-none-any.whl[extra]', /ends like an archive or wheel file/],
        ['pkg==1.whl', /ends like an archive or wheel file/],
        ['pkg>=1,<2.zip', /ends like an archive or wheel file/],
        ['.hidden', /URLs, paths/],
        ['pkg%2Fother', /is not a requirement of the form/],
        ['pkg\u2215other', /outside ASCII/],
        ['\uff50\uff4b\uff47', /outside ASCII/],
        ['pkg\uff0fother', /outside ASCII/],
        ['file:x', /URLs, paths/],
      ];
      for (const [spec, expected] of cases) {
        const item = await run(`await install_packages([${JSON.stringify(spec)}])`);
        assert.equal(item.status, 'failed', spec);
        assert.match(item.error?.message ?? '', expected, spec);
        assert.match(item.error?.message ?? '', /is refused/, spec);
      }
      assert.deepEqual(
        asked.map((a) => a.packages),
        [],
        'no approval was asked for a refused spec',
      );
      assert.ok(!imports('planted_pkg') && !imports('PLANTED'), 'no planted wheel was installed');
      // A plain name with dots and an archive-like word inside is still a name.
      const ok = await run('r = await install_packages(["codeact-demo-pkg==1.0"])\nimport codeact_demo_pkg\nreturn codeact_demo_pkg.VALUE');
      assert.equal(ok.status, 'completed', JSON.stringify(ok.error));
      assert.equal(ok.value, 42);
    } finally {
      await runtime.dispose();
    }
  });

  it('a .venv that appeared while the question waited (here: without a sandbox to stop it) is not made into a venv, and nothing in it runs', async () => {
    const folder = path.join(root, 'race-ws');
    mkdirSync(folder);
    const version = execFileSync(SYSTEM_PYTHON, ['-c', 'import sys; print("python%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' }).trim();
    const runtime = new LocalRuntime({ python: SYSTEM_PYTHON, sandbox: { kind: 'auto' } });
    const gateway = new ToolGateway([], {
      installer: packageInstaller({
        python: SYSTEM_PYTHON,
        folder,
        installArgs: ['--no-index', '--find-links', wheels],
        // While the person reads the question, something writes the .venv (a .pth file Python runs at start).
        approve: async () => {
          const site = path.join(folder, '.venv', 'lib', version, 'site-packages');
          mkdirSync(site, { recursive: true });
          writeFileSync(path.join(site, 'evil.pth'), `import os; open(${JSON.stringify(marker)}, "a").write("planted .pth ran\\n")\n`);
          return 'allowed';
        },
        env: { ...process.env, PIP_CONFIG_FILE: '/dev/null' },
      }),
    });
    try {
      rmSync(marker, { force: true });
      const item = await runtime.execute({ code: 'await install_packages(["codeact-demo-pkg"])' }, { onToolCall: gateway.handler });
      assert.equal(item.status, 'failed');
      assert.match(item.error?.message ?? '', /\.venv appeared while the question waited .* no virtual environment is made over it and nothing is installed/);
      assert.ok(!existsSync(path.join(folder, '.venv', 'pyvenv.cfg')), 'no venv was made over it');
      assert.ok(!existsSync(marker), 'the planted .pth did not run on the host');
    } finally {
      await runtime.dispose();
    }
  });

  it("pip runs in an empty private folder: the pip package the code left in the host's working folder never runs", async () => {
    const { runtime, asked, run } = setup();
    try {
      rmSync(marker, { force: true });
      // `python -m pip` with the planted folder as its working directory would import ./pip first.
      assert.match(
        execFileSync(venvPython, ['-m', 'pip', '--version'], { cwd: planted, encoding: 'utf8', stdio: 'pipe' }) + (existsSync(marker) ? 'ran' : ''),
        /ran/,
        'the planted pip is what `python -m pip` runs from that folder',
      );
      rmSync(marker, { force: true });
      const item = await run('r = await install_packages(["codeact-demo-pkg==1.0"])\nreturn r["installed"]');
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.deepEqual(item.value, ['codeact-demo-pkg==1.0']);
      assert.equal(asked.length, 1);
      assert.ok(!existsSync(marker), 'the planted pip did not run on the host');
    } finally {
      await runtime.dispose();
    }
  });
});
