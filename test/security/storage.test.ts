/**
 * Storage and memory are capped as a whole.
 *
 * In the sandbox the working directory, /tmp and /dev/shm are each a tmpfs of `fileSize`; the rest of
 * the file system (bwrap's own root, /dev, /run) is read-only. Filling one gives "disk limit … exceeded".
 * Where a memory cgroup can be made (root here), files in those tmpfs count against `memory` together
 * with the processes, and a zygote's guests each have their own. After each attack the host runs the
 * next code as usual.
 */
import * as assert from 'node:assert/strict';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { memoryCgroupAvailable } from '../../src/core/runtime/local/cgroup';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';

/** Writes `count` files of 5 MiB into each of `dirs` (each below the file size limit, so only the tmpfs or the memory cgroup can stop it). */
const fill = (dirs: string[], count: number) => String.raw`
chunk = b"x" * (1 << 20)
for d in ${JSON.stringify(dirs)}:
    for i in range(${count}):
        with open(f"{d}/fill{i}.bin", "wb") as f:
            for _ in range(5):
                f.write(chunk)
return "all written"`;

for (const zygote of [false, true]) {
  describe(`storage and memory caps in the sandbox (${zygote ? 'forked from the zygote' : 'cold start'})`, function () {
    this.timeout(180_000);
    let rt: LocalRuntime;
    const runtimes: LocalRuntime[] = [];

    before(async function () {
      const reason = await probeBubblewrap();
      if (reason) {
        console.log(`      skipped: ${reason}`);
        return this.skip();
      }
      rt = new LocalRuntime({ sandbox: { kind: 'bubblewrap', limits: { fileSize: '32m', memory: '512m' } }, zygote });
      runtimes.push(rt);
    });
    after(async () => Promise.all(runtimes.map((r) => r.dispose())));
    afterEach(async function () {
      if (this.currentTest?.state === 'pending' || !rt) return;
      const next = await rt.execute({ code: 'return 1 + 1' });
      assert.equal(next.value, 2, `the next run failed after "${this.currentTest?.title}": ${JSON.stringify(next.error)}`);
    });

    const exec = (code: string, r = rt, sessionId?: string): Promise<CodeInterpreterCallItem> => r.execute({ code, sessionId, timeoutMs: 60_000 });

    for (const [where, dir] of [
      ['the working directory', '.'],
      ['/tmp', '/tmp'],
      ['/dev/shm', '/dev/shm'],
    ]) {
      it(`${where} holds at most fileSize: filling it fails with "disk limit 32m exceeded"`, async () => {
        const item = await exec(fill([dir], 10));
        assert.equal(item.status, 'failed');
        assert.match(item.error!.message, /^disk limit 32m exceeded \(No space left on device\)/);
        assert.match(item.error!.message, /codeact\.sandbox\.limits\.fileSize/);
      });
    }

    it('the rest of the file system is read-only: /, /run, /run/codeact, /dev and /etc take no writes', async () => {
      const item = await exec(String.raw`
import os
out = {}
for p in ["/x", "/run/x", "/run/codeact/x", "/dev/x", "/etc/x", "/usr/x"]:
    try:
        open(p, "w").write("x")
        out[p] = "written"
    except OSError as e:
        out[p] = e.errno
try:
    os.mkdir("/newdir")
    out["mkdir"] = "made"
except OSError as e:
    out["mkdir"] = e.errno
return out`);
      const EROFS = 30;
      assert.deepEqual(item.value, { '/x': EROFS, '/run/x': EROFS, '/run/codeact/x': EROFS, '/dev/x': EROFS, '/etc/x': EROFS, '/usr/x': EROFS, mkdir: EROFS });
    });

    it('where a memory cgroup can be had, files in the tmpfs count against the memory limit ("memory limit 256m exceeded")', async function () {
      if (!memoryCgroupAvailable()) {
        console.log('      not run: no memory cgroup can be created here (needs root, or a delegated cgroup v2 subtree)');
        return this.skip();
      }
      const small = new LocalRuntime({ sandbox: { kind: 'bubblewrap', limits: { fileSize: '200m', memory: '256m' } }, zygote });
      runtimes.push(small);
      // 3 × 100 MiB: under each tmpfs's 200 MiB, over the 256 MiB of memory the run has in all.
      const item = await exec(fill(['.', '/tmp', '/dev/shm'], 20), small);
      assert.equal(item.status, 'failed');
      assert.match(item.error!.message, /^memory limit 256m exceeded/);
      assert.match(item.sandbox?.limits?.scope as string, /memory/);
      const next = await exec('return 3', small);
      assert.equal(next.value, 3);
    });

    if (zygote) {
      it('one session that fills its memory ends alone: the other sessions and the zygote live on', async function () {
        if (!memoryCgroupAvailable()) {
          console.log('      not run: no memory cgroup can be created here (needs root, or a delegated cgroup v2 subtree)');
          return this.skip();
        }
        const small = new LocalRuntime({ sandbox: { kind: 'bubblewrap', limits: { fileSize: '200m', memory: '256m' } }, zygote: true });
        runtimes.push(small);
        assert.equal((await exec('x = 41\nreturn x', small, 'calm')).value, 41);
        const hog = await exec(fill(['.', '/tmp', '/dev/shm'], 20), small, 'hog');
        assert.match(hog.error!.message, /^memory limit 256m exceeded/);
        const calm = await exec('return x + 1', small, 'calm');
        assert.equal(calm.value, 42, `the other session lost its state: ${JSON.stringify(calm.error)}`);
        assert.equal(calm.session?.execution, 2);
      });
    }
  });
}

describe('storage without a sandbox', () => {
  it('DOCUMENTS: without a sandbox nothing caps the disk (the code writes to the host; not run here)', function () {
    // With `none` the working directory is a host folder and the code can write wherever the user can:
    // filling the disk would fill this machine's. The README says so; there is no cap to test.
    this.skip();
  });
});
