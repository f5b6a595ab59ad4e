/**
 * install_packages's failures said plainly, with the real pip: no network (an index on a
 * closed loopback port), a package whose build fails, a timeout, and Stop killing the installer's whole
 * process tree; a uv environment uses uv (a stand-in `uv` on PATH that logs its argv, as no uv is installed).
 */
import * as assert from 'node:assert/strict';
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { cliInstallApprover } from '../../src/cli/installPrompt';
import { TerminalQuestions } from '../../src/cli/terminalQuestions';
import { packageInstaller, type InstallApproval } from '../../src/core/runtime/install/installer';
import type { ToolCallRequest } from '../../src/core/runtime/types';
import { processesWithCmdline } from '../../src/core/util/processTree';
import { installOptionsFrom } from '../../src/core/config/install';
import { JUPYTER_INSTALL_UNAVAILABLE } from '../../src/common/runtimes';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { findJupyterServer, startJupyterServer } from '../support/jupyterServer';
import { makeBrokenSdist, makeVenv } from '../support/wheels';
import { waitFor } from '../support/wait';

const allowAll = async () => 'allowed' as const;
const request = (packages: unknown, itemId = 'exec_1'): ToolCallRequest => ({
  itemId,
  callId: `${itemId}:1`,
  name: 'codeact.install_packages',
  arguments: { packages },
});

describe('install_packages: failures are clear, and Stop and the timeout end the installer', function () {
  this.timeout(180_000);
  let root: string;
  let venvPython: string;
  let uvVenvPython: string;
  let fakeBin: string;
  const uvLog = () => path.join(root, 'uv.log');

  before(() => {
    root = mkdtempSync(path.join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'codeact-install-fail-'));
    venvPython = makeVenv(path.join(root, 'venv'));
    makeBrokenSdist(path.join(root, 'sdists'), 'codeact-broken-pkg', '1.0');
    // A uv environment: what uv writes in pyvenv.cfg; and a stand-in uv that logs its argv and, for the slow
    // package, starts a child and waits (so Stop has a tree to kill).
    uvVenvPython = makeVenv(path.join(root, 'uvenv'));
    appendFileSync(path.join(root, 'uvenv', 'pyvenv.cfg'), 'uv = 0.5.0\n');
    fakeBin = path.join(root, 'bin');
    mkdirSync(fakeBin);
    writeFileSync(
      path.join(fakeBin, 'uv'),
      `#!/bin/sh\nprintf '%s\\n' "$*" >> ${JSON.stringify(uvLog())}\ncase "$*" in *codeact-slow*) /usr/bin/python3 -c 'import time; time.sleep(300)' codeact-uv-child & echo started >> ${JSON.stringify(uvLog())}; wait ;; esac\necho "Installed 1 package"\n`,
    );
    chmodSync(path.join(fakeBin, 'uv'), 0o755);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  const allow = async (_a: InstallApproval) => 'allowed' as const;

  it('no network: pip cannot reach the index, and the error says to connect or install from a wheel folder', async () => {
    // An index on a closed loopback port; one retry (pip reports a connection failure only when it retries), and no
    // pip configuration of this machine's (its extra indexes and wheel folders).
    const install = packageInstaller({
      python: venvPython,
      installArgs: ['--retries', '1', '--timeout', '5', '--index-url', 'http://127.0.0.1:9/simple'],
      approve: allow,
      env: { ...process.env, PIP_CONFIG_FILE: '/dev/null' },
    });
    await assert.rejects(install(request(['codeact-demo-pkg']), new AbortController().signal), (err: Error) => {
      assert.match(
        err.message,
        /^install_packages failed: pip could not reach the package index \(no network, a proxy, or the index is down\)\. Connect to the network and try again, or install offline from a folder of wheels with the setting codeact\.python\.installArgs/,
      );
      return true;
    });
  });

  it('a build that fails: the error names the package and what is missing', async () => {
    const install = packageInstaller({
      python: venvPython,
      installArgs: ['--no-build-isolation', '--no-index', '--find-links', path.join(root, 'sdists')],
      approve: allow,
      env: { ...process.env, PIP_CONFIG_FILE: '/dev/null' },
    });
    await assert.rejects(install(request(['codeact-broken-pkg']), new AbortController().signal), (err: Error) => {
      assert.match(
        err.message,
        /install_packages failed: (codeact-broken-pkg|A package) could not be built from source \(no prebuilt wheel fits this Python or platform/,
      );
      assert.match(err.message, /needs a C compiler/, "the build's own words are in the output it carries");
      return true;
    });
  });

  it('a uv environment installs with uv --python <its python>, the specs after --', async () => {
    const asked: InstallApproval[] = [];
    const r = await packageInstaller({
      python: uvVenvPython,
      installArgs: ['--offline'],
      approve: async (a) => (asked.push(a), 'allowed'),
      env: { ...process.env, PATH: `${fakeBin}:${process.env.PATH}` },
    })(request(['codeact-demo-pkg>=1,<2']), new AbortController().signal);
    assert.equal(r.tool, 'uv');
    assert.equal(asked[0].tool, 'uv');
    assert.equal(readFileSync(uvLog(), 'utf8').trim().split('\n').pop(), `pip install --python ${uvVenvPython} --offline -- codeact-demo-pkg>=1,<2`);
  });

  it('Stop kills the installer and what it started; the timeout ends it with its own message', async () => {
    const env = { ...process.env, PATH: `${fakeBin}:${process.env.PATH}` };
    const install = packageInstaller({ python: uvVenvPython, approve: allow, env });
    const stop = new AbortController();
    const running = install(request(['codeact-slow']), stop.signal);
    await waitFor(() => readFileSync(uvLog(), 'utf8').includes('started'), { what: 'the stand-in uv to start its child', timeoutMs: 60_000 });
    // The shell logs "started" right after its fork; the child's own command line comes with its exec.
    await waitFor(() => processesWithCmdline('codeact-uv-child').length > 0, { what: 'the child to exec', timeoutMs: 60_000 });
    assert.ok(processesWithCmdline('codeact-uv-child').length > 0, 'the child runs');
    stop.abort();
    await assert.rejects(running, /install_packages was stopped while installing codeact-slow\./);
    await waitFor(() => processesWithCmdline('codeact-uv-child').length === 0, { what: 'the child to be killed', timeoutMs: 60_000 });

    writeFileSync(uvLog(), '');
    const quick = packageInstaller({ python: uvVenvPython, approve: allow, env, timeoutMs: 300 });
    await assert.rejects(
      quick(request(['codeact-slow']), new AbortController().signal),
      /install_packages: installing codeact-slow took longer than 300 ms and was stopped\./,
    );
    await waitFor(() => processesWithCmdline('codeact-uv-child').length === 0, { what: 'the child to be killed after the timeout', timeoutMs: 60_000 });
  });

  it('the CLI asks at the terminal (y installs, anything else declines); without a terminal there is no approver', async () => {
    assert.equal(
      cliInstallApprover(new TerminalQuestions({ input: Object.assign(new PassThrough(), { isTTY: false }), output: new PassThrough() })),
      undefined,
    );
    for (const [typed, expected] of [
      ['y\n', 'allowed'],
      ['\n', 'denied'],
      ['no\n', 'denied'],
    ] as const) {
      const input = Object.assign(new PassThrough(), { isTTY: true });
      const output = new PassThrough();
      let shown = '';
      output.on('data', (c: Buffer) => (shown += c.toString()));
      const approve = cliInstallApprover(new TerminalQuestions({ input, output }))!;
      const answer = approve({
        packages: ['pandas>=2', 'pyarrow'],
        python: '/w/.venv/bin/python',
        environment: 'Python 3.11.2, virtual environment /w/.venv',
        tool: 'pip',
        installArgs: ['--no-index'],
        itemId: 'exec_1',
        signal: new AbortController().signal,
      });
      input.write(typed);
      assert.equal(await answer, expected, JSON.stringify(typed));
      assert.match(shown, /CodeAct: install 2 packages\?\nInto: Python 3\.11\.2, virtual environment \/w\/\.venv\nPackages:\n {2}pandas>=2\n {2}pyarrow\n/);
      assert.match(shown, /\/w\/\.venv\/bin\/python -m pip install --disable-pip-version-check --no-input --progress-bar off --no-index -- pandas>=2 pyarrow/);
    }
  });
});

describe('install_packages on the Jupyter runtime: defined in the kernel, and says why it is not supported there', function () {
  this.timeout(180_000);
  it("the call raises the reason (the kernel's environment is the Jupyter server's); the model is not told of it", async function () {
    if (!findJupyterServer()) this.skip();
    const server = await startJupyterServer();
    const runtime = new JupyterRuntime({ url: server.url, token: server.token });
    try {
      const config = resolveEngineConfig(() => undefined, { trusted: true }).config;
      const gateway = new ToolGateway([], installOptionsFrom({ ...config, runtime: 'jupyter' }, { trusted: true, approve: allowAll }));
      assert.equal(gateway.installs, false, 'the model is not told about install_packages here');
      const item = await runtime.execute(
        { code: 'await install_packages(["codeact-demo-pkg"])', sessionId: 'jupyter-install' },
        { onToolCall: gateway.handler },
      );
      assert.equal(item.status, 'failed');
      assert.equal(item.error?.message, JUPYTER_INSTALL_UNAVAILABLE);
    } finally {
      await runtime.dispose();
      await server.stop();
    }
  });
});

describe('install_packages: where a host offers it', () => {
  it('only in a trusted folder, on the local runtime, with someone to approve, and not when approvals default to deny', () => {
    const config = resolveEngineConfig(() => undefined, { trusted: true }).config;
    const host = { trusted: true, approve: allowAll };
    assert.ok(installOptionsFrom(config, host).installer, 'the local runtime in a trusted folder');
    assert.match(installOptionsFrom(config, { ...host, trusted: false }).installUnavailable ?? '', /needs a trusted folder/);
    assert.match(installOptionsFrom(config, { trusted: true }).installUnavailable ?? '', /nobody can approve it here/);
    assert.match(installOptionsFrom({ ...config, defaultApproval: 'deny' }, host).installUnavailable ?? '', /codeact\.approval\.default is "deny"/);
    assert.match(installOptionsFrom({ ...config, mode: 'hosted' }, host).installUnavailable ?? '', /hosted mode/);
    for (const o of [{ ...host, trusted: false }, { trusted: true }]) assert.equal(new ToolGateway([], installOptionsFrom(config, o)).installs, false);
  });
});
