/**
 * With `mountWorkspace: "readwrite"`, the files that declared tools run on the host
 * stay read-only inside the sandbox. Otherwise code could rewrite `tools/inventory.py` (or put a
 * `json.py` beside it, which it would import first) and then call the tool: the rewrite would run on
 * the host. Checked through the real runtime, cold and forked, as root and as an unprivileged user;
 * the extension's runtime is rebuilt when a tool's files change.
 */
import * as assert from 'node:assert/strict';
import { chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { hostRunPathsFrom } from '../../src/core/config/engine';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { toolHostPaths } from '../../src/core/runtime/local/hostFiles';
import { hostLaunches } from '../../src/core/tools/toolSources';
import { RuntimeCache } from '../../src/vscode/runtimeCache';
import { FakeLog, FakeRuntimeApis, resolved } from '../vscode/fakes';
import { cannotSwitchUser, runInChild, TESTER } from './support/asUser';

const EROFS = 30;
const INVENTORY = 'import json, sys\nprint(json.dumps({"items": 3}))\n';

/** A workspace with a tool in tools/, run by the workspace's own virtual environment. */
function makeWorkspace(): string {
  const ws = mkdtempSync(path.join(tmpdir(), 'codeact-toolfiles-'));
  mkdirSync(path.join(ws, 'tools'));
  writeFileSync(path.join(ws, 'tools', 'inventory.py'), INVENTORY);
  mkdirSync(path.join(ws, '.venv', 'bin'), { recursive: true });
  writeFileSync(path.join(ws, '.venv', 'pyvenv.cfg'), 'home = /usr/bin\n');
  symlinkSync('/usr/bin/python3', path.join(ws, '.venv', 'bin', 'python'));
  mkdirSync(path.join(ws, 'data'));
  mkdirSync(path.join(ws, 'scripts'));
  writeFileSync(path.join(ws, 'data', 'prices.json'), '{}');
  return ws;
}

const TOOLS = [
  { name: 'inventory', command: ['.venv/bin/python', 'tools/inventory.py', '--prices=data/prices.json'] },
  { name: 'report', command: { argv: ['python3', 'scripts/report.py'] } },
];

/** Tries every way to change what the host runs; reports each errno (or "ok"). */
const ATTACK = String.raw`
import os, shutil
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return e.errno
def write(p, text="print('pwned')\n"):
    with open(os.path.join(WS, p), "w") as f:
        f.write(text)
return {
    "rewrite_script": attempt(lambda: write("tools/inventory.py")),
    "shadow_module": attempt(lambda: write("tools/json.py")),
    "rename_tools": attempt(lambda: os.rename(os.path.join(WS, "tools"), os.path.join(WS, "tools2"))),
    "venv_pth": attempt(lambda: write(".venv/evil.pth", "import os\n")),
    "data": attempt(lambda: write("data/prices.json", "[]")),
    "create_missing": attempt(lambda: write("scripts/report.py")),
    "ordinary": attempt(lambda: write("notes.txt", "hello")),
}`;

describe('files that declared tools run on the host stay read-only in a writable workspace', function () {
  this.timeout(180_000);

  it('finds the program (on PATH too), scripts and path arguments inside the workspace, and nothing outside it', () => {
    const ws = makeWorkspace();
    try {
      mkdirSync(path.join(ws, 'bin'));
      writeFileSync(path.join(ws, 'bin', 'lint'), '#!/bin/sh\n', { mode: 0o755 });
      const found = toolHostPaths(
        hostLaunches([
          ...TOOLS,
          { name: 'lint', command: { argv: ['lint', '--fix', 'https://example.com/a/b', '-v'] } },
          { name: 'mcp', mcp: { command: ['node', 'servers/mcp.js'], tool: 'x' } },
          { name: 'http', http: { url: 'https://example.com', allowedHosts: ['example.com'] } },
          'not a declaration',
        ]),
        ws,
        `/usr/bin:${path.join(ws, 'bin')}`,
      );
      assert.deepEqual(
        found.map((f) => [path.relative(ws, f.path), f.program, f.tool]),
        [
          ['.venv/bin/python', true, 'inventory'],
          ['bin/lint', true, 'lint'],
          ['data/prices.json', false, 'inventory'],
          ['scripts/report.py', true, 'report'],
          ['servers/mcp.js', true, 'mcp'],
          ['tools/inventory.py', true, 'inventory'],
        ],
      );
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  const users = [{ label: process.getuid?.() === 0 ? 'as root' : 'as this user' }, { label: `as an unprivileged user (${TESTER.name})`, user: TESTER }];
  for (const { label, user } of users) {
    for (const zygote of [false, true]) {
      it(`${label}, ${zygote ? 'forked from the zygote' : 'cold start'}: the script's folder, the venv, the data file and the missing script's folder are read-only; other files are written`, async function () {
        const why = (user ? cannotSwitchUser() : null) ?? (await probeBubblewrap());
        if (why) {
          console.log(`      skipped: ${why}`);
          return this.skip();
        }
        const ws = makeWorkspace();
        try {
          if (user) {
            const own = (p: string) => {
              chownSync(p, user.uid, user.gid);
              if (statSync(p).isDirectory()) for (const n of readdirSync(p)) own(path.join(p, n));
            };
            own(ws);
          }
          const config = resolved({ 'sandbox.mountWorkspace': 'readwrite', tools: TOOLS }, true).config;
          const hostRunPaths = hostRunPathsFrom(config, ws);
          const options = { sandbox: { kind: 'bubblewrap' as const, mountWorkspace: 'readwrite' as const, workspace: ws, hostRunPaths }, zygote };
          const o = await runInChild(`WS = ${JSON.stringify(ws)}\n${ATTACK}`, options, user);
          assert.equal(o.item.status, 'completed', JSON.stringify(o.item.error));
          assert.equal(o.item.sandbox?.workspace, 'readwrite', o.warnings.join('\n'));
          const { rename_tools, ...v } = o.item.value as Record<string, unknown>;
          assert.notEqual(rename_tools, 'ok', 'a mount point cannot be renamed');
          assert.deepEqual(v, {
            rewrite_script: EROFS,
            shadow_module: EROFS,
            venv_pth: EROFS,
            data: EROFS,
            create_missing: EROFS,
            ordinary: 'ok',
          });
          assert.equal(readFileSync(path.join(ws, 'tools', 'inventory.py'), 'utf8'), INVENTORY);
          assert.deepEqual(readdirSync(path.join(ws, 'tools')), ['inventory.py']);
          assert.equal(readFileSync(path.join(ws, 'notes.txt'), 'utf8'), 'hello');
        } finally {
          rmSync(ws, { recursive: true, force: true });
        }
      });
    }
  }

  it('a script at the top of the workspace cannot be protected with what lies beside it: the workspace is read-only, and the warning says why', async function () {
    const why = await probeBubblewrap();
    if (why) return this.skip();
    const ws = makeWorkspace();
    try {
      writeFileSync(path.join(ws, 'inventory.py'), INVENTORY);
      const hostRunPaths = toolHostPaths(hostLaunches([{ name: 'inventory', command: ['python3', 'inventory.py'] }]), ws);
      const o = await runInChild(`WS = ${JSON.stringify(ws)}\n${ATTACK}`, {
        sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws, hostRunPaths },
      });
      assert.equal(o.item.status, 'completed', JSON.stringify(o.item.error));
      assert.equal(o.item.sandbox?.workspace, 'readonly');
      assert.equal((o.item.value as Record<string, unknown>).ordinary, EROFS);
      assert.match(o.warnings.join('\n'), /tool "inventory" runs inventory\.py on the host .*top of the workspace.*read-only instead.*folder of their own/);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  it("the extension's runtime is rebuilt when a tool's files change (readwrite), and only then", async () => {
    const apis = new FakeRuntimeApis();
    let values: Record<string, unknown> = { 'sandbox.mountWorkspace': 'readwrite', tools: TOOLS.slice(0, 1) };
    const cache = new RuntimeCache({
      apis,
      settings: () => resolved(values, true).config,
      jupyterToken: async () => undefined,
      workspaceFolder: () => '/ws',
      log: new FakeLog(),
      onSessionEvent: () => {},
      trusted: () => true,
    });
    const a = await cache.get();
    assert.deepEqual(
      apis.last!.config.local?.sandbox?.hostRunPaths?.map((f) => f.path),
      ['/ws/.venv/bin/python', '/ws/data/prices.json', '/ws/tools/inventory.py'],
    );
    values = { ...values, tools: [{ ...TOOLS[0], description: 'only the text changed' }] };
    assert.equal(await cache.get(), a, 'a change that runs nothing else keeps the runtime');
    values = { ...values, tools: TOOLS };
    const b = await cache.get();
    assert.notEqual(b, a);
    assert.ok(apis.last!.config.local?.sandbox?.hostRunPaths?.some((f) => f.path === '/ws/scripts/report.py'));
  });
});
