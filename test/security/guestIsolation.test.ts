/**
 * Guests forked from one warm zygote cannot reach each other. Session A keeps a
 * secret in a file of its working folder and in its memory; session B, alive at the same time, looks
 * for A through /proc (root, mem, environ), process_vm_readv and ptrace. In the sandbox B sees no
 * process but its own (a private /proc that really mounted, as root too), and ptrace and
 * process_vm_readv are refused even on B's own children (seccomp). Where a guest cannot get a /proc of
 * its own (root without the seccomp filter), the zygote does not fork it: code starts cold, each guest in
 * a sandbox of its own. Without a sandbox, an unprivileged user's guests are non-dumpable: B sees A's
 * PID but cannot read its memory (root can: CAP_SYS_PTRACE; the README says so). And the host: /proc
 * is read-only in the sandbox, since code started by root is the host's root to /proc/sys (sysctls
 * check only the uid), and kernel.core_pattern would run a program of its choice as root on the host.
 * Run as root and as an unprivileged user.
 */
import * as assert from 'node:assert/strict';
import type { LocalRuntimeOptions } from '../../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { hostSeccompArch } from '../../src/core/runtime/local/seccomp';
import { cannotSwitchUser, TESTER } from './support/asUser';
import { runSessionsInChild, type SessionsOutcome } from './support/sessions';

const EPERM = 1;
const SECRET = 'ISOLATION-SECRET-7f3a';

/** Session A: a secret on disk and in memory; reports where they are. */
const VICTIM = String.raw`
import ctypes, os, subprocess
open("secret.txt", "w").write("${SECRET}")
KEEP = bytearray(b"${SECRET}-in-memory")
buf = (ctypes.c_char * len(KEEP)).from_buffer(KEEP)
return {"pid": os.getpid(), "cwd": os.getcwd(), "addr": ctypes.addressof(buf), "len": len(KEEP)}`;

/** Session B: every way to reach A it can find. */
const ATTACKER = String.raw`
import ctypes, os, subprocess
victim = prev[0]
libc = ctypes.CDLL(None, use_errno=True)
def parent(p):
    try:
        st = open(f"/proc/{p}/stat", "rb").read()
        return int(st[st.rfind(b")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return 0
def own_tree():
    # This guest and what it started, then its ancestors (bwrap's PID 1 in a cold guest's own sandbox),
    # numbered as /proc numbers them (an outer PID namespace's, when /proc is not the guest's own).
    me = int(os.readlink("/proc/self"))
    mine, changed = {me}, True
    while changed:
        changed = False
        for p in os.listdir("/proc"):
            if p.isdigit() and int(p) not in mine and parent(p) in mine:
                mine.add(int(p)); changed = True
    p = parent(me)
    while p > 0:
        mine.add(p)
        p = parent(p)
    return mine
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def vm_read(pid, addr, n):
    out = ctypes.create_string_buffer(n)
    local, remote = Iov(ctypes.addressof(out), n), Iov(addr, n)
    ctypes.set_errno(0)
    r = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return (out.raw if r > 0 else b""), ctypes.get_errno()
def attach(pid):
    ctypes.set_errno(0)
    libc.ptrace.restype = ctypes.c_long
    r = libc.ptrace(16, pid, None, None)  # PTRACE_ATTACH
    err = ctypes.get_errno()
    if r == 0:
        os.waitpid(pid, 0)
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    return 0 if r == 0 else err
mine = own_tree()
others = sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine)
leaks = []
secret = b"${SECRET}"
# Without a sandbox, every process of this user is visible: only A is attacked.
for p in ([victim["pid"]] if ONLY_VICTIM else others):
    for rel in ("root" + victim["cwd"] + "/secret.txt", "cwd/secret.txt"):
        try:
            if secret in open(f"/proc/{p}/{rel}", "rb").read():
                leaks.append(f"{p}: /proc/{p}/{rel}")
        except OSError:
            pass
    try:
        with open(f"/proc/{p}/mem", "r+b", buffering=0) as f:
            f.seek(victim["addr"])
            if secret in f.read(victim["len"]):
                leaks.append(f"{p}: read /proc/{p}/mem")
    except (OSError, ValueError, OverflowError):
        pass
    data, _ = vm_read(p, victim["addr"], victim["len"])
    if secret in data:
        leaks.append(f"{p}: process_vm_readv")
    if attach(p) == 0:
        leaks.append(f"{p}: ptrace attach")
# ptrace and process_vm_readv on a child of B's own (a program it ran, dumpable again after exec).
child = subprocess.Popen(["sleep", "60"])
own = {"attach": attach(child.pid), "vm_read": vm_read(child.pid, 4096, 8)[1]}
child.kill(); child.wait()
return {"others": others, "leaks": leaks, "own": own, "pid_ns_pid": os.getpid()}`;

interface Attack {
  others: number[];
  leaks: string[];
  own: { attach: number; vm_read: number };
}

async function attack(
  options: LocalRuntimeOptions & { sandbox: { kind: string } },
  user?: { uid: number; gid: number },
): Promise<{ a: any; b: Attack; o: SessionsOutcome }> {
  const onlyVictim = options.sandbox.kind === 'none' ? 'True' : 'False';
  const o = await runSessionsInChild(
    [
      { session: 'a', code: VICTIM },
      { session: 'b', code: `ONLY_VICTIM = ${onlyVictim}\n${ATTACKER}` },
    ],
    options,
    user,
  );
  for (const item of o.items) assert.equal(item.status, 'completed', JSON.stringify(item.error));
  return { a: o.items[0].value, b: o.items[1].value as Attack, o };
}

const asRoot = process.getuid?.() === 0;
const users: Array<{ label: string; user?: { uid: number; gid: number }; skip?: () => string | null }> = [
  { label: asRoot ? 'as root' : 'as this user' },
  { label: `as an unprivileged user (${TESTER.name})`, user: TESTER, skip: cannotSwitchUser },
];

describe('guests forked from one zygote cannot reach each other', function () {
  this.timeout(240_000);
  let noBwrap: string | null = null;
  before(async () => {
    noBwrap = await probeBubblewrap();
  });

  for (const { label, user, skip } of users) {
    describe(label, () => {
      before(function () {
        const why = skip?.() ?? null;
        if (why) {
          console.log(`      skipped: ${why}`);
          this.skip();
        }
      });

      it('in the sandbox: a private /proc, so no other guest is visible, and ptrace and process_vm_readv are refused', async function () {
        if (noBwrap || !hostSeccompArch()) return this.skip();
        const { b, o } = await attack({ zygote: true, sandbox: { kind: 'bubblewrap' } }, user);
        assert.deepEqual(b.leaks, []);
        assert.deepEqual(b.others, [], `session B sees processes that are not its own: ${b.others.join(', ')}`);
        assert.deepEqual(b.own, { attach: EPERM, vm_read: EPERM }, 'ptrace and process_vm_readv are refused even on a child of its own');
        assert.ok(!o.log.some((l) => /starts cold/.test(l)), `the guests were forked, not started cold: ${o.log.join(' | ')}`);
      });

      for (const zygote of [false, true]) {
        it(`in the sandbox (${zygote ? 'forked' : 'cold'}): /proc is read-only, so code run by root cannot set the host kernel's sysctls (kernel.core_pattern)`, async function () {
          if (noBwrap) return this.skip();
          const code = String.raw`
import os, subprocess
out = {}
for p in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/printk_ratelimit", "/proc/sys/vm/drop_caches"):
    try:
        open(p, "r+").close()  # opened for writing, nothing written
        out[p] = "writable"
    except OSError as e:
        out[p] = e.errno
fd = os.open("through.txt", os.O_WRONLY | os.O_CREAT, 0o600)
with open(f"/proc/self/fd/{fd}", "w") as f:
    f.write("through /proc/self/fd")
os.close(fd)
out["through"] = open("through.txt").read()
out["echo"] = subprocess.run("echo hi > /dev/stdout", shell=True, capture_output=True, text=True).stdout
return out`;
          const o = await runSessionsInChild([{ session: 'a', code }], { zygote, sandbox: { kind: 'bubblewrap' } }, user);
          const item = o.items[0];
          assert.equal(item.status, 'completed', JSON.stringify(item.error));
          const v = item.value as Record<string, unknown>;
          for (const p of ['/proc/sys/kernel/core_pattern', '/proc/sys/kernel/printk_ratelimit', '/proc/sys/vm/drop_caches'])
            assert.notEqual(v[p], 'writable', p);
          assert.equal(v.echo, 'hi\n', 'writing through /dev/stdout still works');
          assert.equal(v.through, 'through /proc/self/fd', 'writing a file through /proc/self/fd still works');
        });
      }

      it('where a guest cannot get a /proc of its own, it is not forked: code starts cold, each guest in a sandbox of its own', async function () {
        if (noBwrap) return this.skip();
        // Without the seccomp filter the zygote keeps --disable-userns; started by root, a forked guest is
        // then refused its own /proc (locked covers over /proc/irq and /proc/bus) and must not run.
        const { b, o } = await attack({ zygote: true, sandbox: { kind: 'bubblewrap', seccomp: false } }, user);
        assert.deepEqual(b.leaks, []);
        assert.deepEqual(b.others, [], `session B sees processes that are not its own: ${b.others.join(', ')}`);
        if (asRoot && !user) {
          assert.ok(
            o.log.some((l) => /\/proc/.test(l) && /starts cold/.test(l)),
            `the fork is refused with a reason naming /proc, and code starts cold: ${o.log.join(' | ')}`,
          );
        }
      });

      it('without a sandbox: guests are non-dumpable, so another guest of the same user cannot read their memory', async function () {
        if (!user && asRoot) {
          // Root keeps CAP_SYS_PTRACE: without a sandbox nothing stops it (README, Security).
          return this.skip();
        }
        const { a, b } = await attack({ zygote: true, sandbox: { kind: 'none' } }, user);
        assert.ok(b.others.includes(a.pid), 'without a PID namespace, B sees A');
        assert.deepEqual(
          b.leaks.filter((l) => !/secret\.txt/.test(l)),
          [],
          'A memory is out of reach (its files are not: both run as the same user on the host)',
        );
      });
    });
  }
});
