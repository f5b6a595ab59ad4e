/**
 * The seccomp deny-list is installed on every sandboxed guest, cold or forked by
 * the warm zygote, and checked from inside through the real runtime: the kernel keyring, unshare and
 * mount are refused with EPERM, and ordinary Python (subprocesses, threads, multiprocessing, asyncio,
 * sqlite, sockets, temporary files) still works. Without a sandbox there is no filter (documented).
 */
import * as assert from 'node:assert/strict';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { hostSeccompArch, seccompPolicy } from '../../src/core/runtime/local/seccomp';

const EPERM = 1;

/** Python that makes the refused syscalls through ctypes and reports each errno (0 = it went through). */
/**
 * Python that tries the syscalls the filter refuses. `hostSafe`: without a sandbox the code runs on the
 * host, where unshare and mount (as root) would really act (a tmpfs over the host's /tmp): only the
 * keyring is tried then.
 */
function probeCode(nr: Record<string, number>, o: { hostSafe?: boolean } = {}): string {
  if (o.hostSafe) nr = { keyctl: nr.keyctl, add_key: nr.add_key, request_key: nr.request_key };
  return String.raw`
import ctypes, os
nr = ${JSON.stringify(nr)}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(n, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(n), *[ctypes.c_long(a) for a in args])
    return ctypes.get_errno() if r == -1 else 0
ptr = lambda b: ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value
status = {l.split(":")[0]: l.split(":")[1].strip() for l in open("/proc/self/status") if l.startswith(("Seccomp", "CapEff"))}
return {
    "keyctl": call(nr["keyctl"], 0, -3, 0),
    "add_key": call(nr["add_key"], ptr(b"user"), ptr(b"codeact-test"), ptr(b"x"), 1, -1),
    "request_key": call(nr["request_key"], ptr(b"user"), ptr(b"codeact-none"), 0, 0),
    "unshare0": call(nr["unshare"], 0) if "unshare" in nr else None,
    "unshare_user": call(nr["unshare"], 0x10000000) if "unshare" in nr else None,
    "mount": call(nr["mount"], ptr(b"none"), ptr(b"/tmp"), ptr(b"tmpfs"), 0, 0) if "mount" in nr else None,
    "status": status,
}`;
}

const ORDINARY = String.raw`
import asyncio, hashlib, json, multiprocessing, os, socket, sqlite3, subprocess, tempfile, threading
from concurrent.futures import ThreadPoolExecutor
out = {}
out["sh"] = subprocess.run(["/bin/sh", "-c", "echo hi | tr a-z A-Z"], capture_output=True, text=True).stdout
with ThreadPoolExecutor(4) as ex:
    out["threads"] = sum(ex.map(lambda i: i * i, range(100)))
import math
ctx = multiprocessing.get_context("fork")
with ctx.Pool(2) as pool:
    out["pool"] = sum(pool.map(math.factorial, range(6)))
lock = ctx.Lock()  # a POSIX semaphore in /dev/shm
with lock:
    out["lock"] = True
async def main():
    await asyncio.sleep(0.01)
    return "ok"
out["asyncio"] = asyncio.run(main())
a, b = socket.socketpair(); a.sendall(b"ping"); out["socketpair"] = b.recv(4).decode()
out["sqlite"] = sqlite3.connect(":memory:").execute("select 1+1").fetchone()[0]
with tempfile.NamedTemporaryFile(dir=".") as f:
    f.write(b"y"); f.flush(); out["cwd_file"] = os.path.getsize(f.name)
with open("/tmp/t.txt", "w") as f:
    f.write("x" * 1000)
out["tmp"] = os.path.getsize("/tmp/t.txt")
os.chmod("/tmp/t.txt", 0o600)
out["chmod"] = oct(os.stat("/tmp/t.txt").st_mode & 0o777)
out["sha"] = hashlib.sha256(b"").hexdigest()[:8]
return out`;

const variants: Array<{ kind: 'bubblewrap' | 'none'; zygote: boolean }> = [
  { kind: 'bubblewrap', zygote: false },
  { kind: 'bubblewrap', zygote: true },
  { kind: 'none', zygote: false },
];

for (const { kind, zygote } of variants) {
  describe(`seccomp filter in the running sandbox (sandbox: ${kind}, ${zygote ? 'forked from the zygote' : 'cold start'})`, function () {
    this.timeout(120_000);
    const sandboxed = kind === 'bubblewrap';
    const arch = hostSeccompArch();
    let rt: LocalRuntime;
    let nr: Record<string, number>;

    before(async function () {
      if (!arch) {
        console.log(`      skipped: the seccomp filter is built for x86_64 and aarch64, not ${process.arch}`);
        return this.skip();
      }
      if (sandboxed) {
        const reason = await probeBubblewrap();
        if (reason) {
          console.log(`      skipped: ${reason}`);
          return this.skip();
        }
      }
      const policy = seccompPolicy({ arch, allowMounts: true, allowNamespaces: true });
      const strict = seccompPolicy({ arch });
      nr = Object.fromEntries(['keyctl', 'add_key', 'request_key'].map((n) => [n, policy.get(n)!.nr]));
      nr.unshare = strict.get('unshare')!.nr;
      nr.mount = strict.get('mount')!.nr;
      rt = new LocalRuntime({ sandbox: { kind }, zygote });
    });
    after(async () => rt?.dispose());

    const exec = (code: string): Promise<CodeInterpreterCallItem> => rt.execute({ code, timeoutMs: 60_000 });

    if (sandboxed) {
      it('the kernel keyring, unshare and mount fail with EPERM, and the item says the filter is on', async () => {
        const item = await exec(probeCode(nr));
        assert.equal(item.status, 'completed', JSON.stringify(item.error));
        const v = item.value as Record<string, unknown>;
        assert.equal(v.keyctl, EPERM, 'keyctl(KEYCTL_GET_KEYRING_ID, session keyring)');
        assert.equal(v.add_key, EPERM, 'add_key');
        assert.equal(v.request_key, EPERM, 'request_key');
        assert.equal(v.unshare0, EPERM, 'unshare(0) is a no-op the kernel allows; the filter refuses it');
        assert.notEqual(v.unshare_user, 0, 'unshare(CLONE_NEWUSER)');
        assert.equal(v.mount, EPERM, 'mount');
        const status = v.status as Record<string, string>;
        assert.equal(status.Seccomp, '2', 'SECCOMP_MODE_FILTER');
        assert.equal(status.CapEff, '0000000000000000', 'no capabilities');
        assert.equal(item.sandbox?.seccomp, true);
      });

      it('ordinary Python still works under the filter', async () => {
        const item = await exec(ORDINARY);
        assert.equal(item.status, 'completed', JSON.stringify(item.error));
        assert.deepEqual(item.value, {
          sh: 'HI\n',
          threads: 328350,
          pool: 154,
          lock: true,
          asyncio: 'ok',
          socketpair: 'ping',
          sqlite: 2,
          cwd_file: 1,
          tmp: 1000,
          chmod: '0o600',
          sha: 'e3b0c442',
        });
      });

      if (!zygote) {
        it('with the filter switched off (as on an architecture without one), the item records it and the keyring is reachable', async () => {
          const off = new LocalRuntime({ sandbox: { kind, seccomp: false } });
          try {
            const item = await off.execute({ code: probeCode(nr), timeoutMs: 60_000 });
            assert.equal(item.sandbox?.seccomp, false);
            assert.equal((item.value as Record<string, unknown>).keyctl, 0, 'without the filter keyctl goes through');
          } finally {
            await off.dispose();
          }
        });
      }
    } else {
      it('DOCUMENTS: without a sandbox there is no filter: the keyring is reachable', async () => {
        // Only the keyring is probed here: on the host (as root) unshare and mount would really happen.
        const item = await exec(probeCode(nr, { hostSafe: true }));
        assert.equal((item.value as Record<string, unknown>).keyctl, 0);
        assert.equal(item.sandbox?.seccomp, undefined);
      });
    }
  });
}
