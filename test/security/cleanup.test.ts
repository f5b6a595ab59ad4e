/**
 * Cleanup can never lose a result.
 *
 * Without a sandbox the guest works in a host folder, removed after the run. The code makes that
 * folder as hostile to delete as it can: paths longer than PATH_MAX, thousands of entries, folders
 * without read, write or search permission (the folder itself included), symbolic-link loops, links
 * out of the folder, a FIFO where a file was, a socket. The folder is still removed, nothing outside
 * it is touched, the result is intact, and the host's event loop keeps turning while it goes. When
 * removal does fail (a mount inside the folder), the result is reported all the same and a warning
 * names the folder, which dispose removes once it can. Permissions only bind a non-root user, so the
 * hostile tree also runs as the unprivileged user `tester` where the tests run as root.
 *
 * With bubblewrap the working directory is a tmpfs inside the sandbox; nothing is left on the host.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { cannotSwitchUser, runInChild, TESTER } from './support/asUser';

/** Python that makes its working folder hostile to delete; returns the folder's host path. */
const hostile = (canary: string) => String.raw`
import os, socket
root = os.getcwd()
canary = ${JSON.stringify(canary)}
os.mkdir("many")
for i in range(3000):
    open(f"many/f{i}", "w").close()
os.mkdir("deep")
os.chdir("deep")
for i in range(30):  # 30 levels of 200 characters: past PATH_MAX (4096)
    os.mkdir("d" * 200)
    os.chdir("d" * 200)
open("bottom.txt", "w").write("x")
depth = len(os.getcwd())
os.chmod(".", 0o500)
os.chdir(root)
os.makedirs("locked/inner")
open("locked/inner/f", "w").close()
os.chmod("locked/inner", 0)
os.chmod("locked", 0o500)
os.mkdir("nosearch")
open("nosearch/f", "w").close()
os.chmod("nosearch", 0o600)
os.symlink("loop2", "loop1")
os.symlink("loop1", "loop2")
os.symlink(".", "self")
os.symlink(canary, "out")
os.symlink(canary + "/keep.txt", "outfile")
open("data.txt", "w").close()
os.unlink("data.txt")
os.mkfifo("data.txt")
s = socket.socket(socket.AF_UNIX)
s.bind("sock")
os.chmod(root, 0o500)
return {"root": root, "depth": depth}`;

function makeCanary(owner?: { uid: number; gid: number }): string {
  const canary = mkdtempSync(path.join(tmpdir(), 'codeact-canary-'));
  writeFileSync(path.join(canary, 'keep.txt'), 'KEEP');
  mkdirSync(path.join(canary, 'sub'));
  writeFileSync(path.join(canary, 'sub', 'keep2.txt'), 'KEEP2');
  if (owner)
    for (const p of [canary, path.join(canary, 'keep.txt'), path.join(canary, 'sub'), path.join(canary, 'sub', 'keep2.txt')])
      chownSync(p, owner.uid, owner.gid);
  return canary;
}

function assertCanary(canary: string): void {
  assert.equal(readFileSync(path.join(canary, 'keep.txt'), 'utf8'), 'KEEP', 'a file outside the folder was touched');
  assert.equal(readFileSync(path.join(canary, 'sub', 'keep2.txt'), 'utf8'), 'KEEP2', 'a file outside the folder was touched');
}

/** The hostile run through the real runtime, in a child process (as `user` when given). */
async function runIn(code: string, zygote: boolean, user?: { uid: number; gid: number }) {
  const o = await runInChild(code, { sandbox: { kind: 'none' }, zygote }, user);
  return { ...o, value: o.item.value as { root: string; depth: number } | null, error: o.item.error ?? null };
}

const isRoot = process.getuid?.() === 0;

describe('cleanup of a hostile working folder (sandbox: none)', function () {
  this.timeout(300_000);

  for (const zygote of [false, true]) {
    it(`${zygote ? 'forked' : 'cold'}: PATH_MAX, 3000 entries, no permissions, link loops, a FIFO and a socket: removed, result intact, nothing outside touched, the event loop turns`, async () => {
      const canary = makeCanary();
      try {
        const o = await runIn(hostile(canary), zygote);
        assert.equal(o.error, null, JSON.stringify(o.error));
        assert.ok(o.value && o.value.depth > 4096, `the tree was not deep enough: ${JSON.stringify(o.value)}`);
        assert.equal(o.afterRun, false, `${o.value.root} is still there after the run: ${o.warnings.join('\n')}`);
        assert.deepEqual(o.warnings, []);
        assert.ok(o.ticks > 0, 'the event loop did not turn while the folder was removed');
        assertCanary(canary);
      } finally {
        rmSync(canary, { recursive: true, force: true });
      }
    });
  }

  it('as an unprivileged user (permissions bind): the same folder is removed and nothing outside is touched', async function () {
    const why = cannotSwitchUser();
    if (why) {
      console.log(`      not run: ${why}`);
      return this.skip();
    }
    const canary = makeCanary(TESTER);
    try {
      for (const zygote of [false, true]) {
        const o = await runIn(hostile(canary), zygote, TESTER);
        assert.equal(o.error, null, JSON.stringify(o.error));
        assert.ok(o.value && o.value.depth > 4096);
        assert.equal(o.afterRun, false, `${o.value.root} is still there: ${o.warnings.join('\n')}`);
        assert.deepEqual(o.warnings, []);
        assertCanary(canary);
      }
    } finally {
      rmSync(canary, { recursive: true, force: true });
    }
  });

  it('a folder that cannot be removed (a mount inside) never loses the result: a warning names it, and dispose removes it once it can', async function () {
    if (!isRoot) {
      console.log('      not run: making a folder impossible to remove needs a mount, which needs root');
      return this.skip();
    }
    let mounted: string | undefined;
    const warnings: string[] = [];
    const pin = new ToolGateway([
      {
        name: 'pin',
        description: 'mounts a tmpfs inside the given folder',
        inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        approval: 'auto',
        expose: 'code',
        source: 'test',
        invoke: async (args) => {
          mounted = String((args as { path: string }).path);
          execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mounted]);
          return 'pinned';
        },
      },
    ]);
    const rt = new LocalRuntime({ sandbox: { kind: 'none' }, onWarning: (m) => warnings.push(m) });
    let root = '';
    try {
      const item = await rt.execute(
        {
          code: 'import os\nos.mkdir("mnt")\nawait call_tool("pin", path=os.path.abspath("mnt"))\nopen("mnt/x", "w").write("x")\nreturn {"root": os.getcwd(), "answer": 42}',
          timeoutMs: 60_000,
        },
        { onToolCall: pin.handler },
      );
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      root = (item.value as { root: string }).root;
      assert.equal((item.value as { answer: number }).answer, 42, 'the result is intact');
      assert.ok(existsSync(root), 'the folder cannot be removed while something is mounted in it');
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0], new RegExp(`Could not remove the working folder ${root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(.*EBUSY`));
      assert.match(warnings[0], /tries again when it shuts down/);
      execFileSync('umount', [mounted!]);
      mounted = undefined;
      await rt.dispose();
      assert.ok(!existsSync(root), 'dispose removed the folder');
      assert.equal(warnings.length, 1, `no further warning once it could be removed: ${warnings.join('\n')}`);
    } finally {
      if (mounted) execFileSync('umount', ['-l', mounted]);
      await rt.dispose();
      if (root) rmSync(root, { recursive: true, force: true });
    }
  });

  it('a folder still stuck at dispose is named in a final warning, not dropped', async function () {
    if (!isRoot) {
      console.log('      not run: making a folder impossible to remove needs a mount, which needs root');
      return this.skip();
    }
    const warnings: string[] = [];
    const rt = new LocalRuntime({ sandbox: { kind: 'none' }, onWarning: (m) => warnings.push(m) });
    let target = '';
    const pin = new ToolGateway([
      {
        name: 'pin',
        description: 'mounts a tmpfs inside the given folder',
        inputSchema: { type: 'object' },
        approval: 'auto',
        expose: 'code',
        source: 'test',
        invoke: async (args) => {
          target = String((args as { path: string }).path);
          execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', target]);
          return 'pinned';
        },
      },
    ]);
    try {
      await rt.execute(
        { code: 'import os\nos.mkdir("mnt")\nawait call_tool("pin", path=os.path.abspath("mnt"))\nreturn 1', timeoutMs: 60_000 },
        { onToolCall: pin.handler },
      );
      await rt.dispose();
      assert.equal(warnings.length, 2, warnings.join('\n'));
      assert.match(warnings[1], /1 working folder\(s\) could not be removed and are left on disk: .*codeact-run-.*EBUSY/);
    } finally {
      if (target) {
        execFileSync('umount', ['-l', target]);
        rmSync(path.dirname(target), { recursive: true, force: true });
      }
    }
  });
});
