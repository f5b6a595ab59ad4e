/**
 * install_packages, on the real engine: Debian's python3, a venv made in the test, and pip
 * installing offline from a folder of wheels made in the test (codeact.python.installArgs). The code asks,
 * the person approves the exact specs, pip runs outside the sandbox, and the same run imports the package.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent } from '../../src/common/events';
import { installCommandLine } from '../../src/common/installCommand';
import { executionSummary } from '../../src/core/agent/executionResult';
import { installInfo } from '../../src/core/runtime/install/approvalText';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { packageInstaller, type InstallApproval } from '../../src/core/runtime/install/installer';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { executeToolCodeSpec } from '../../src/core/tools/modelTools';
import { makeVenv, makeWheel, SYSTEM_PYTHON } from '../support/wheels';

describe('install_packages: the code installs a package, approved by the person', function () {
  this.timeout(240_000);
  let root: string;
  let wheels: string;
  let venvPython: string;
  const offline = () => ['--no-index', '--find-links', wheels];

  before(() => {
    // Not under /tmp: the sandbox gives the guest a /tmp of its own, which would hide the venv.
    root = mkdtempSync(path.join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'codeact-install-'));
    wheels = path.join(root, 'wheels');
    makeWheel(wheels, 'codeact-demo-pkg', '1.0', 'VALUE = 42');
    venvPython = makeVenv(path.join(root, 'ws', '.venv'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  /** A runtime on `python` whose gateway installs with `approve`, recording what was asked and shown. */
  function setup(python: string, o: { folder?: string; approve?: (a: InstallApproval) => 'allowed' | 'denied'; switched?: string[] } = {}) {
    const asked: InstallApproval[] = [];
    const events: CodeActEvent[] = [];
    const runtime = new LocalRuntime({ python, sandbox: { kind: 'auto' } });
    const gateway = new ToolGateway([], {
      installer: packageInstaller({
        python,
        folder: o.folder,
        installArgs: offline(),
        approve: async (a) => (asked.push(a), (o.approve ?? (() => 'allowed'))(a)),
        switchEnvironment: (p) => void o.switched?.push(p),
        // Not this machine's pip configuration (its extra indexes and wheel folders).
        env: { ...process.env, PIP_CONFIG_FILE: '/dev/null' },
      }),
    });
    const run = (code: string, sessionId = 's1') => runtime.execute({ code, sessionId }, { onToolCall: gateway.handler, onEvent: (e) => events.push(e) });
    return { runtime, gateway, asked, events, run };
  }

  it('in a venv: approved with the specs listed, pip output streams into the card, and the same run imports the package', async () => {
    const { runtime, asked, events, run } = setup(venvPython);
    try {
      const item = await run(
        'r = await install_packages(["codeact-demo-pkg==1.0"])\nimport codeact_demo_pkg\nreturn [r["installed"], r["restart"], codeact_demo_pkg.VALUE]',
      );
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.deepEqual(item.value, [['codeact-demo-pkg==1.0'], false, 42]);
      assert.equal(asked.length, 1);
      assert.deepEqual(asked[0].packages, ['codeact-demo-pkg==1.0']);
      assert.equal(asked[0].python, venvPython);
      assert.equal(asked[0].createVenv, undefined);
      assert.deepEqual(asked[0].installArgs, offline());
      const streamed = events
        .filter((e) => e.type === 'codeact.output.delta')
        .map((e) => (e as { delta: string }).delta)
        .join('');
      // What runs is exactly the command line the person read.
      assert.ok(streamed.startsWith(`$ ${installCommandLine(installInfo(asked[0]))}\n`), streamed.slice(0, 400));
      assert.match(
        streamed,
        /-m pip install --disable-pip-version-check --no-input --progress-bar off --no-index --find-links \S+ -- codeact-demo-pkg==1\.0\n/,
      );
      assert.match(streamed, /Successfully installed codeact-demo-pkg-1\.0/);
      const call = events.find((e) => e.type === 'codeact.tool_call.completed') as { name: string; output: { python: string } } | undefined;
      assert.equal(call?.name, 'codeact.install_packages');
      assert.equal(call?.output.python, venvPython);
    } finally {
      await runtime.dispose();
    }
  });

  it('a declined install raises in the code, and nothing is installed', async () => {
    const { runtime, run } = setup(venvPython, { approve: () => 'denied' });
    try {
      const item = await run('await install_packages(["codeact-demo-pkg"])');
      assert.equal(item.status, 'failed');
      assert.match(item.error?.message ?? '', /The user declined to install codeact-demo-pkg/);
    } finally {
      await runtime.dispose();
    }
  });

  it('bad specs are refused before anyone is asked: options, whitespace, URLs, paths, too many', async () => {
    const { runtime, asked, run } = setup(venvPython);
    try {
      const cases: Array<[string, RegExp]> = [
        ['["--index-url=http://evil/simple"]', /starts with "-", so pip would read it as an option/],
        ['["-rrequirements.txt"]', /starts with "-"/],
        ['["pandas --pre"]', /holds whitespace/],
        ['["pkg @ https://example.com/pkg.whl"]', /holds whitespace/],
        ['["git+https://example.com/x.git"]', /URLs, paths and "name @ url" are not installed from code/],
        ['["./local/pkg"]', /URLs, paths/],
        ['["pandas;os_name==\'nt\'"]', /is not a requirement of the form/],
        [`[${Array.from({ length: 21 }, (_, i) => `"p${i}"`).join(',')}]`, /21 packages in one call; at most 20/],
        ['[]', /the list is empty/],
        ['"x" * 0 or [1]', /must be a string/],
      ];
      for (const [arg, expected] of cases) {
        const item = await run(`await install_packages(${arg})`);
        assert.equal(item.status, 'failed', arg);
        assert.match(item.error?.message ?? '', expected, arg);
      }
      // The host checks too (a call that skipped the guest's checks).
      const direct = await run('await call_tool("codeact.install_packages", packages=["-e", "."])');
      assert.match(direct.error?.message ?? '', /starts with "-"/);
      assert.equal(asked.length, 0, 'no approval was asked for a refused spec');
    } finally {
      await runtime.dispose();
    }
  });

  it('no such package: the error says so, and what to check', async () => {
    const { runtime, run } = setup(venvPython);
    try {
      const item = await run('await install_packages(["codeact-no-such-pkg"])');
      assert.equal(item.status, 'failed');
      assert.match(item.error?.message ?? '', /install_packages failed: No such package, or no version of it for this Python: codeact-no-such-pkg/);
      assert.match(item.error?.message ?? '', /--- the installer's last output ---/);
    } finally {
      await runtime.dispose();
    }
  });

  it('an externally-managed system Python is refused; the approval offers a .venv, which is made, installed into and switched to', async () => {
    assert.ok(
      existsSync('/usr/lib/python3.11/EXTERNALLY-MANAGED') ||
        existsSync(
          path.join(
            execFileSync(SYSTEM_PYTHON, ['-c', 'import sysconfig; print(sysconfig.get_path("stdlib"))'], { encoding: 'utf8' }).trim(),
            'EXTERNALLY-MANAGED',
          ),
        ),
      'Debian marks its Python externally managed',
    );
    const folder = path.join(root, 'system-ws');
    const switched: string[] = [];
    const { runtime, asked, run } = setup(SYSTEM_PYTHON, { folder, switched });
    const none = setup(SYSTEM_PYTHON, {});
    try {
      const noFolder = await none.run('await install_packages(["codeact-demo-pkg"])');
      assert.match(noFolder.error?.message ?? '', /is an externally-managed Python \(PEP 668[^)]*\), so nothing is installed into it\. Open a folder/);
      assert.equal(none.asked.length, 0);

      await run('x = 1\ntable = [1, 2]');
      const item = await run('r = await install_packages(["codeact-demo-pkg"])\nreturn r');
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      const r = item.value as { restart: boolean; python: string; lost_variables: string[]; message: string };
      const made = path.join(folder, '.venv', 'bin', 'python');
      assert.equal(asked[0].createVenv, path.join(folder, '.venv'));
      assert.match(asked[0].refused ?? '', /externally-managed Python/);
      assert.equal(asked[0].python, made);
      assert.equal(r.restart, true);
      assert.equal(r.python, made);
      assert.deepEqual(r.lost_variables, ['table', 'x']);
      assert.match(r.message, /restarts with .*\.venv from the user's next message/);
      assert.deepEqual(switched, [made]);
      assert.equal(execFileSync(made, ['-c', 'import codeact_demo_pkg; print(codeact_demo_pkg.VALUE)'], { encoding: 'utf8' }).trim(), '42');
      assert.match(item.outputs.map((o) => (o.type === 'logs' ? o.logs : '')).join(''), /Variables lost with the restart: table, x\./);
      // The system Python itself was not touched.
      assert.throws(() => execFileSync(SYSTEM_PYTHON, ['-c', 'import codeact_demo_pkg'], { stdio: 'pipe' }));
      // A second offer would overwrite nothing: the .venv exists now and is not the session's Python.
      const again = await run('await install_packages(["codeact-demo-pkg"])');
      assert.match(again.error?.message ?? '', /\.venv already exists but is not the session's Python/);
    } finally {
      await runtime.dispose();
      await none.runtime.dispose();
    }
  });

  it('a ModuleNotFoundError tells the model install_packages exists, and the code tool describes it', async () => {
    const { runtime, run } = setup(venvPython);
    try {
      const item = await run('import codeact_missing_module');
      assert.equal(item.error?.type, 'ModuleNotFoundError');
      const withHint = JSON.parse(executionSummary(item, { installs: true })) as { hint?: string };
      assert.match(
        withHint.hint ?? '',
        /The module "codeact_missing_module" is not installed in this session's Python\. If the task needs it, run `await install_packages\(\["codeact_missing_module"\]\)`/,
      );
      assert.equal((JSON.parse(executionSummary(item, {})) as { hint?: string }).hint, undefined, 'no hint where nothing can install');
      assert.match(executeToolCodeSpec([], { installs: true }).description, /await install_packages\(\["name", "other>=2"\]\)/);
      assert.doesNotMatch(executeToolCodeSpec([], {}).description, /install_packages/);
    } finally {
      await runtime.dispose();
    }
  });

  it('without an installer (Jupyter, hosted), the call says why, and nothing is asked', async () => {
    const runtime = new LocalRuntime({ python: venvPython, sandbox: { kind: 'auto' } });
    const gateway = new ToolGateway([], { installUnavailable: 'install_packages is not available on the Jupyter runtime: because.' });
    try {
      const item = await runtime.execute({ code: 'await install_packages(["codeact-demo-pkg"])' }, { onToolCall: gateway.handler });
      assert.match(item.error?.message ?? '', /not available on the Jupyter runtime: because\./);
    } finally {
      await runtime.dispose();
    }
  });
});
