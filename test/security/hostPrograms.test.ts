/**
 * A folder's interpreter is host code: the sandboxed code cannot make or change it, and an untrusted folder's
 * is never run (issue 31).
 *
 * In a `readwrite` workspace, real bubblewrap, as root and as the unprivileged user: the session runs the
 * folder's own interpreter (`codeact.python.path` = `${workspaceFolder}/tools/python3`, a wrapper that
 * runs Debian's Python, which is externally managed), so install_packages offers to make `.venv`. While that
 * question waits, a thread of the code tries to plant `.venv` and `venv` (a `.pth` file that Python runs at
 * start, a `bin/python` of its own) and to rewrite the wrapper. Each write fails; the
 * `.venv` is made by the host, pip installs there, and the marker file the planted code would write on the host
 * never appears, not even when the host runs the interpreter again afterwards.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { runtimeConfigFrom } from '../../src/core/config/engine';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import { resolvePython } from '../../src/core/runtime/local/python';
import { resolvePythonEnv } from '../../src/core/runtime/local/pythonEnv';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { planWorkspaceMount, releasePlaceholders } from '../../src/core/runtime/local/workspaceMount';
import { hostLaunches, TOOL_SOURCES } from '../../src/core/tools/toolSources';
import { TOOL_SOURCE_KINDS, type ToolSourceKind } from '../../src/common/tools';
import { hostRunPathsFrom } from '../../src/core/config/engine';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { runCli } from '../support/cli';
import { makeWheel, SYSTEM_PYTHON } from '../support/wheels';
import { cannotSwitchUser, runInChild, runScriptInChild, TESTER } from './support/asUser';

const REPO = path.resolve(__dirname, '..', '..');
const EROFS = 30;
const WRAPPER = `#!/bin/sh\nexec ${SYSTEM_PYTHON} "$@"\n`;

/** The host's side: the engine's own wiring (settings → runtime, install options), an approver that waits for the code's attempts. */
const HOST = String.raw`
import { existsSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { resolveEngineConfig } from '${REPO}/src/core/config/resolve';
import { runtimeConfigFrom } from '${REPO}/src/core/config/engine';
import { installOptionsFrom } from '${REPO}/src/core/config/install';
import { ToolGateway } from '${REPO}/src/core/gateway/gateway';
import { LocalRuntime } from '${REPO}/src/core/runtime/local/localRuntime';
(async () => {
  const { ws, wheels, code, zygote } = JSON.parse(process.argv[2]);
  process.env.PIP_CONFIG_FILE = '/dev/null';
  const user: Record<string, unknown> = {
    'sandbox.kind': 'bubblewrap',
    'sandbox.mountWorkspace': 'readwrite',
    'python.path': '\${workspaceFolder}/tools/python3',
    'python.installArgs': ['--no-index', '--find-links', wheels],
  };
  const { config } = resolveEngineConfig((k) => (k in user ? { user: user[k] } : undefined), { trusted: true });
  const local = runtimeConfigFrom(config, { workspace: ws, longLived: zygote, trusted: true }).local!;
  const rt = new LocalRuntime(local);
  const asked: unknown[] = [];
  const approve = async (a: { createVenv?: string }) => {
    asked.push(a.createVenv);
    // The question is out: the code may try now; it says when it has.
    writeFileSync(path.join(ws, 'asked'), '');
    for (let i = 0; i < 2400 && !existsSync(path.join(ws, 'attempted')); i++) await new Promise((r) => setTimeout(r, 50));
    return 'allowed' as const;
  };
  const gateway = new ToolGateway([], installOptionsFrom(config, { trusted: true, folder: ws, python: local.python, approve }));
  const item = await rt.execute({ code, timeoutMs: 120_000 }, { onToolCall: gateway.handler });
  await rt.dispose();
  console.log(JSON.stringify({ item, asked, python: local.python }));
})();
`;

const ATTACK = String.raw`
import os, sys, threading, time
ws = WS
v = "python%d.%d" % sys.version_info[:2]
pth = "import os; open(%r, 'a').write('planted code ran on the host\\n')\n" % MARKER
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except OSError as e:
        out[name] = e.errno
def plant_venv(d):
    os.makedirs(f"{ws}/{d}/lib/{v}/site-packages", exist_ok=True)
    open(f"{ws}/{d}/lib/{v}/site-packages/evil.pth", "w").write(pth)
def plant_python(d):
    os.makedirs(f"{ws}/{d}/bin", exist_ok=True)
    open(f"{ws}/{d}/bin/python", "w").write("#!/bin/sh\necho pwned >> %s\n" % MARKER)
    os.chmod(f"{ws}/{d}/bin/python", 0o755)
def rewrite_interpreter():
    open(f"{ws}/tools/python3", "w").write("#!/bin/sh\necho pwned >> %s\nexec %s \"$@\"\n" % (MARKER, sys.executable))
def attack():
    while not os.path.exists(f"{ws}/asked"):
        time.sleep(0.02)
    for d in (".venv", "venv"):
        attempt(d + "_pth", lambda: plant_venv(d))
        attempt(d + "_python", lambda: plant_python(d))
    attempt("python_path_folder", rewrite_interpreter)
    attempt("python_path_new_file", lambda: open(f"{ws}/tools/python3.11", "w").write("x"))
    attempt("ordinary", lambda: open(f"{ws}/notes.txt", "w").write("hello"))
    open(f"{ws}/attempted", "w").write("")
t = threading.Thread(target=attack)
t.start()
r = await install_packages(["codeact-demo-pkg"])
t.join()
return {"attempts": out, "restart": r["restart"], "python": r["python"]}`;

interface Outcome {
  item: CodeInterpreterCallItem;
  asked: string[];
  python: string;
}

describe("a folder's interpreter: the sandboxed code cannot make or change it", function () {
  this.timeout(300_000);
  let root: string;
  let wheels: string;
  before(() => {
    root = mkdtempSync(path.join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'codeact-hostprog-'));
    wheels = path.join(root, 'wheels');
    makeWheel(wheels, 'codeact-demo-pkg', '1.0', 'VALUE = 42');
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  const users = [{ label: process.getuid?.() === 0 ? 'as root' : 'as this user' }, { label: `as an unprivileged user (${TESTER.name})`, user: TESTER }];
  for (const { label, user } of users) {
    for (const zygote of [false, true]) {
      it(`${label}, ${zygote ? 'forked' : 'cold'}: while install_packages asks, .venv, venv and the python.path folder cannot be written; the host makes .venv and nothing planted runs`, async function () {
        const why = (user ? cannotSwitchUser() : null) ?? (await probeBubblewrap());
        if (why) {
          console.log(`      skipped: ${why}`);
          return this.skip();
        }
        const ws = path.join(root, `ws-${user ? 'user' : 'root'}-${zygote ? 'forked' : 'cold'}`);
        const marker = path.join(ws + '-marker');
        mkdirSync(path.join(ws, 'tools'), { recursive: true });
        // The folder's interpreter: a wrapper that runs Debian's Python (the host runs the wrapper to probe it).
        writeFileSync(path.join(ws, 'tools', 'python3'), WRAPPER, { mode: 0o755 });
        if (user) {
          const own = (p: string) => {
            chownSync(p, user.uid, user.gid);
            if (lstatSync(p).isDirectory()) for (const n of readdirSync(p)) own(path.join(p, n));
          };
          own(root);
        }
        const code = `WS = ${JSON.stringify(ws)}\nMARKER = ${JSON.stringify(marker)}\n${ATTACK}`;
        const o = await runScriptInChild<Outcome>(HOST, { ws, wheels, code, zygote }, user, 'the host');
        assert.equal(o.python, path.join(ws, 'tools', 'python3'), "the session runs the folder's own interpreter");
        assert.equal(o.item.status, 'completed', JSON.stringify(o.item.error));
        assert.equal(o.item.sandbox?.workspace, 'readwrite');
        const v = o.item.value as { attempts: Record<string, unknown>; restart: boolean; python: string };
        assert.deepEqual(v.attempts, {
          '.venv_pth': EROFS,
          '.venv_python': EROFS,
          venv_pth: EROFS,
          venv_python: EROFS,
          python_path_folder: EROFS,
          python_path_new_file: EROFS,
          ordinary: 'ok',
        });
        assert.deepEqual(o.asked, [path.join(ws, '.venv')]);
        assert.equal(v.restart, true);
        assert.equal(v.python, path.join(ws, '.venv', 'bin', 'python'));
        // The host made the .venv: pip installed there, and nothing of the code's is in it.
        const venvPython = path.join(ws, '.venv', 'bin', 'python');
        assert.equal(execFileSync(venvPython, ['-c', 'import codeact_demo_pkg; print(codeact_demo_pkg.VALUE)'], { encoding: 'utf8' }).trim(), '42');
        assert.ok(!existsSync(path.join(ws, 'venv')), 'the placeholder of venv is gone with the sandbox');
        assert.equal(readFileSync(path.join(ws, 'tools', 'python3'), 'utf8'), WRAPPER);
        // The host runs the folder's interpreter again (a probe): still Debian's Python, nothing planted runs.
        execFileSync(path.join(ws, 'tools', 'python3'), ['-c', 'pass']);
        execFileSync(venvPython, ['-c', 'pass']);
        assert.ok(!existsSync(marker), `planted code ran on the host:\n${existsSync(marker) ? execFileSync('cat', [marker], { encoding: 'utf8' }) : ''}`);
      });
    }
  }
});

describe("a folder's interpreter runs only in a trusted folder, whichever settings layer names it", function () {
  this.timeout(120_000);
  let root: string;
  let ws: string;
  let marker: string;
  before(() => {
    root = mkdtempSync(path.join(tmpdir(), 'codeact-pypath-'));
    ws = path.join(root, 'ws');
    marker = path.join(root, 'marker');
    mkdirSync(path.join(ws, 'tools'), { recursive: true });
    // A cloned repository's "interpreter": it runs Python, after doing what it likes on the host.
    writeFileSync(path.join(ws, 'tools', 'python3'), `#!/bin/sh\necho ran >> ${marker}\nexec ${SYSTEM_PYTHON} "$@"\n`, { mode: 0o755 });
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  const settings = ['tools/python3', './tools/python3', '${workspaceFolder}/tools/python3'];

  it('a relative or ${workspaceFolder} codeact.python.path from your user settings, or a trusted .code-workspace file, is not run for an untrusted folder', async () => {
    for (const setting of settings) {
      for (const [layer, options] of [
        ['user', { trusted: false }],
        ['workspace', { trusted: false, workspaceTrusted: true }],
      ] as const) {
        const { config } = resolveEngineConfig((k) => (k === 'python.path' ? { [layer]: setting } : undefined), options);
        assert.equal(config.python, setting, `${layer}: the setting itself is allowed`);
        const local = runtimeConfigFrom(config, { workspace: ws, longLived: false, trusted: false }).local!;
        assert.equal(local.python, 'python3', `${layer} ${setting}`);
        // VS Code's path (pythonEnvFor) is the same resolver.
        const env = resolvePythonEnv({ folder: ws, setting, trusted: false });
        assert.equal(env.python, 'python3', setting);
        assert.match(env.reason, /not trusted, so its own environments are not used \(codeact\.python\.path .* names one of them\)/);
      }
    }
    const { config } = resolveEngineConfig((k) => (k === 'python.path' ? { user: settings[2] } : undefined), { trusted: false });
    const rt = new LocalRuntime(runtimeConfigFrom(config, { workspace: ws, longLived: false, trusted: false }).local!);
    try {
      const item = await rt.execute({ code: 'import sys\nreturn sys.executable', timeoutMs: 60_000 });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
    } finally {
      await rt.dispose();
    }
    assert.ok(!existsSync(marker), "the untrusted folder's interpreter ran on the host");
    // Trusted, the same setting is the folder's interpreter, as chosen.
    assert.equal(resolvePythonEnv({ folder: ws, setting: settings[2], trusted: true }).python, path.join(ws, 'tools', 'python3'));
    assert.equal(resolvePythonEnv({ folder: ws, setting: SYSTEM_PYTHON, trusted: false }).python, SYSTEM_PYTHON, 'an interpreter outside the folder is yours');
  });

  it("the built CLI: a relative codeact.python.path in your user settings does not run an untrusted folder's interpreter, and says so", async () => {
    const home = path.join(root, 'cli-home');
    mkdirSync(home);
    writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ 'codeact.python.path': 'tools/python3' }));
    const file = path.join(root, 'where.py');
    writeFileSync(file, 'import sys\nprint("exe=" + sys.executable)\n');
    const untrusted = await runCli(['run', file, '--workspace', ws, '--sandbox', 'none'], { CODEACT_HOME: home, CODEACT_TRUST_WORKSPACE: '0' });
    assert.equal(untrusted.code, 0, untrusted.stderr);
    assert.match(untrusted.stderr, /not running "tools\/python3": python3 on PATH: the folder is not trusted.*codeact trust/);
    assert.ok(!existsSync(marker), "the untrusted folder's interpreter ran on the host");
    const trusted = await runCli(['run', file, '--workspace', ws, '--sandbox', 'none'], { CODEACT_HOME: home });
    assert.equal(trusted.code, 0, trusted.stderr);
    assert.ok(existsSync(marker), "trusted, the folder's interpreter is the one chosen");
    rmSync(marker);
  });

  it('an interpreter that changed since it was probed is probed again (its link, file and pyvenv.cfg are the key)', async () => {
    const dir = path.join(root, 'reprobe');
    mkdirSync(dir);
    const python = path.join(dir, 'python3');
    symlinkSync(SYSTEM_PYTHON, python);
    assert.equal((await resolvePython(python)).executable, python);
    rmSync(python);
    // Now a wrapper that runs the system Python, which names itself.
    writeFileSync(python, `#!/bin/sh\nexec ${SYSTEM_PYTHON} "$@"\n`, { mode: 0o755 });
    assert.equal((await resolvePython(python)).executable, SYSTEM_PYTHON);
  });
});

describe('what runs on the host is declared by each tool source kind and by the runtime, and the sandbox reads it', function () {
  let root: string;
  before(() => (root = mkdtempSync(path.join(tmpdir(), 'codeact-launch-'))));
  after(() => rmSync(root, { recursive: true, force: true }));

  it("every source kind says what it starts on the host: command tools and stdio MCP servers, not HTTP tools or other extensions' tools", () => {
    const declarations = [
      { name: 'cmd', command: { argv: ['python3', 'tools/a.py'], cwd: 'sub' } },
      { name: 'stdio', mcp: { command: ['node', 'servers/s.js'], tool: 'x' } },
      { name: 'remote', mcp: { url: 'https://example.com/mcp', tool: 'x' } },
      { name: 'web', http: { url: 'https://example.com', allowedHosts: ['example.com'] } },
      { name: 'other', lmTool: 'some_tool' },
    ];
    assert.deepEqual(hostLaunches(declarations), [
      { tool: 'cmd', argv: ['python3', 'tools/a.py'], cwd: 'sub' },
      { tool: 'stdio', argv: ['node', 'servers/s.js'] },
    ]);
    assert.deepEqual(Object.keys(TOOL_SOURCES), ['command', 'http', 'mcp', 'lmTool'], 'a new kind is added here and must declare its launches');
  });

  it("in a readwrite workspace, real bubblewrap: a kind's program is read-only because its descriptor's launches name it (a kind made to launch one gets it protected)", async function () {
    this.timeout(120_000);
    const why = await probeBubblewrap();
    if (why) {
      console.log(`      skipped: ${why}`);
      return this.skip();
    }
    // One declaration of every kind, each naming a file in a folder of its own (the compiler asks for a row per kind).
    const files: Record<ToolSourceKind, string> = { command: 'cmd/run.py', http: 'web/fetch.py', mcp: 'srv/server.py', lmTool: 'lm/tool.py' };
    const declarations: Record<ToolSourceKind, Record<string, unknown>> = {
      command: { name: 'cmd', command: ['python3', files.command] },
      http: { name: 'web', http: { url: `https://example.com/${files.http}`, allowedHosts: ['example.com'] } },
      mcp: { name: 'srv', mcp: { command: ['python3', files.mcp], tool: 'x' } },
      lmTool: { name: 'lm', lmTool: files.lmTool },
    };
    const ws = path.join(root, 'kinds');
    for (const f of [...Object.values(files), 'free/notes.txt']) {
      mkdirSync(path.dirname(path.join(ws, f)), { recursive: true });
      writeFileSync(path.join(ws, f), 'print("host")\n');
    }
    const code = `import os\nout = {}\nfor k, f in ${JSON.stringify({ ...files, free: 'free/notes.txt' })}.items():\n    try:\n        open(os.path.join(${JSON.stringify(ws)}, f), "w").write("pwned")\n        out[k] = "ok"\n    except OSError as e:\n        out[k] = e.errno\nout`;
    const user: Record<string, unknown> = { 'sandbox.mountWorkspace': 'readwrite', tools: TOOL_SOURCE_KINDS.map((k) => declarations[k]) };
    const { config } = resolveEngineConfig((k) => (k in user ? { user: user[k] } : undefined), { trusted: true });
    const attempt = async () => {
      const o = await runInChild(code, {
        sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws, hostRunPaths: hostRunPathsFrom(config, ws) },
      });
      assert.equal(o.item.status, 'completed', JSON.stringify(o.item.error));
      assert.equal(o.item.sandbox?.workspace, 'readwrite', o.warnings.join('\n'));
      return o.item.value as Record<string, unknown>;
    };
    // What each descriptor says it launches is exactly what is read-only; everything else is written.
    const expected = (launching: (k: ToolSourceKind) => boolean) => ({
      ...Object.fromEntries(TOOL_SOURCE_KINDS.map((k) => [k, launching(k) ? EROFS : 'ok'])),
      free: 'ok',
    });
    const launches = (k: ToolSourceKind) => TOOL_SOURCES[k].launches(declarations[k]) !== undefined;
    assert.deepEqual(await attempt(), expected(launches));
    assert.deepEqual(TOOL_SOURCE_KINDS.filter(launches), ['command', 'mcp']);
    // A kind that starts a program on the host says so in its descriptor, and only there: the sandbox follows.
    const http = TOOL_SOURCES.http.launches;
    TOOL_SOURCES.http.launches = (d) => ({ argv: ['python3', String((d.http as { url: string }).url).replace('https://example.com/', '')] });
    try {
      assert.deepEqual(
        await attempt(),
        expected((k) => k === 'http' || launches(k)),
      );
    } finally {
      TOOL_SOURCES.http.launches = http;
    }
  });

  it('a codeact.python.path in the folder that does not exist yet gets a read-only placeholder, as .venv and venv do', () => {
    const ws = path.join(root, 'ws');
    mkdirSync(ws);
    const user: Record<string, unknown> = { 'sandbox.mountWorkspace': 'readwrite', 'python.path': '${workspaceFolder}/envs/main/bin/python' };
    const { config } = resolveEngineConfig((k) => (k in user ? { user: user[k] } : undefined), { trusted: true });
    const local = runtimeConfigFrom(config, { workspace: ws, longLived: false, trusted: true }).local!;
    assert.equal(local.python, path.join(ws, 'envs', 'main', 'bin', 'python'));
    const view = planWorkspaceMount(ws, 'readwrite', true, local.sandbox?.hostRunPaths);
    try {
      const ro = view.args.flatMap((a, i) => (a === '--ro-bind' ? [path.relative(ws, view.args[i + 1])] : []));
      assert.deepEqual(ro.filter((p) => ['.venv', 'venv', 'envs'].includes(p)).sort(), ['.venv', 'envs', 'venv']);
      assert.equal(view.mode, 'readwrite');
      assert.deepEqual(view.placeholders.map((p) => path.relative(ws, p)).sort(), ['.codeact', '.git', '.venv', '.vscode', 'envs', 'venv']);
    } finally {
      releasePlaceholders(view.placeholders);
    }
    assert.deepEqual(readdirSync(ws), [], 'the placeholders are gone with the sandbox');
  });
});
