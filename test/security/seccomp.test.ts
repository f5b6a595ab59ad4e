/**
 * The sandbox's seccomp filter (src/core/runtime/local/seccomp.ts).
 *
 * Per architecture, the compiled program is decoded and run through a small classic-BPF interpreter
 * written here: every refused syscall gets EPERM, ordinary ones are allowed, another ABI is killed and
 * x32 is refused. The syscall numbers are checked against the kernel headers where they are installed.
 *
 * Then from inside the real sandbox: bwrap with the product's options plus `--seccomp 4`, the program
 * written into a pipe at fd 4, and python3 calling the syscalls through ctypes.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { resolvePython } from '../../src/core/runtime/local/python';
import { planLaunch, probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import {
  AUDIT_ARCH,
  buildSeccompFilter,
  hostSeccompArch,
  seccompBwrapArgs,
  seccompPolicy,
  sendSeccompProgram,
  type SeccompArch,
  type SeccompOptions,
} from '../../src/core/runtime/local/seccomp';

const ALLOW = 0x7fff0000;
const EPERM = 0x00050000 | 1;
const ENOSYS = 0x00050000 | 38;
const KILL_PROCESS = 0x80000000;

// ---- a classic BPF interpreter for seccomp programs -----------------------------------------------

interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

function decode(program: Buffer): Insn[] {
  assert.equal(program.length % 8, 0, 'a sock_filter array is 8 bytes per instruction');
  const insns: Insn[] = [];
  for (let i = 0; i < program.length; i += 8) {
    insns.push({ code: program.readUInt16LE(i), jt: program.readUInt8(i + 2), jf: program.readUInt8(i + 3), k: program.readUInt32LE(i + 4) });
  }
  return insns;
}

/** The checks the kernel's classic-BPF checker makes that matter here. */
function validate(insns: Insn[]): void {
  assert.ok(insns.length > 0 && insns.length <= 4096);
  insns.forEach((insn, i) => {
    const next = i + 1;
    switch (insn.code) {
      case 0x20:
        assert.ok(insn.k % 4 === 0 && insn.k + 4 <= 64, `insn ${i}: load outside seccomp_data`);
        break;
      case 0x15:
      case 0x25:
      case 0x35:
      case 0x45:
        assert.ok(next + insn.jt < insns.length && next + insn.jf < insns.length, `insn ${i}: jump out of the program`);
        break;
      case 0x05:
        assert.ok(next + insn.k < insns.length, `insn ${i}: jump out of the program`);
        break;
      case 0x06:
        break;
      default:
        assert.fail(`insn ${i}: unexpected opcode 0x${insn.code.toString(16)}`);
    }
  });
  assert.equal(insns[insns.length - 1].code, 0x06, 'the program must end with a return');
}

/** Runs the program on one `struct seccomp_data`; returns the seccomp action. */
function run(insns: Insn[], nr: number, arch: number, args: Array<number | bigint> = []): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr | 0, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  args.forEach((a, i) => data.writeBigUInt64LE(BigInt.asUintN(64, BigInt(a)), 16 + 8 * i));
  let acc = 0;
  let pc = 0;
  for (let steps = 0; steps < 10_000; steps++) {
    const { code, jt, jf, k } = insns[pc];
    switch (code) {
      case 0x20:
        acc = data.readUInt32LE(k);
        pc++;
        break;
      case 0x15:
        pc += 1 + (acc === k ? jt : jf);
        break;
      case 0x25:
        pc += 1 + (acc > k ? jt : jf);
        break;
      case 0x35:
        pc += 1 + (acc >= k ? jt : jf);
        break;
      case 0x45:
        pc += 1 + ((acc & k) >>> 0 !== 0 ? jt : jf);
        break;
      case 0x05:
        pc += 1 + k;
        break;
      case 0x06:
        return k;
      default:
        throw new Error(`opcode 0x${code.toString(16)}`);
    }
  }
  throw new Error('the program did not return');
}

// ---- expectations, written independently of the module's tables ----------------------------------

/** [name, x86_64, aarch64]: the syscalls the brief and Docker's profile require refused with EPERM. */
const MUST_DENY: Array<[string, number | null, number | null]> = [
  ['keyctl', 250, 219],
  ['add_key', 248, 217],
  ['request_key', 249, 218],
  ['bpf', 321, 280],
  ['perf_event_open', 298, 241],
  ['userfaultfd', 323, 282],
  ['kexec_load', 246, 104],
  ['kexec_file_load', 320, 294],
  ['open_by_handle_at', 304, 265],
  ['name_to_handle_at', 303, 264],
  ['init_module', 175, 105],
  ['finit_module', 313, 273],
  ['delete_module', 176, 106],
  ['mount', 165, 40],
  ['umount2', 166, 39],
  ['pivot_root', 155, 41],
  ['swapon', 167, 224],
  ['swapoff', 168, 225],
  ['reboot', 169, 142],
  ['acct', 163, 89],
  ['settimeofday', 164, 170],
  ['clock_settime', 227, 112],
  ['lookup_dcookie', 212, 18],
  ['quotactl', 179, 60],
  ['nfsservctl', 180, 42],
  ['iopl', 172, null],
  ['ioperm', 173, null],
  ['create_module', 174, null],
  ['get_kernel_syms', 177, null],
  ['query_module', 178, null],
  ['uselib', 134, null],
  ['sysfs', 139, null],
  ['_sysctl', 156, null],
  ['ustat', 136, null],
  ['move_mount', 429, 429],
  ['fsopen', 430, 430],
  ['fsconfig', 431, 431],
  ['fsmount', 432, 432],
  ['fspick', 433, 433],
  ['open_tree', 428, 428],
  ['unshare', 272, 97],
  ['setns', 308, 268],
  ['io_uring_setup', 425, 425],
  ['syslog', 103, 116],
  ['kcmp', 312, 272],
];
/** Ordinary syscalls a Python program makes: [name, x86_64, aarch64]. */
const ORDINARY: Array<[string, number, number]> = [
  ['read', 0, 63],
  ['write', 1, 64],
  ['openat', 257, 56],
  ['close', 3, 57],
  ['mmap', 9, 222],
  ['futex', 202, 98],
  ['execve', 59, 221],
  ['getpid', 39, 172],
  ['exit_group', 231, 94],
  ['wait4', 61, 260],
  ['epoll_wait', 232, 22],
  ['ptrace', 101, 117],
  ['chroot', 161, 51],
  ['prctl', 157, 167],
  ['seccomp', 317, 277],
  ['getrandom', 318, 278],
];
const NR = (arch: SeccompArch, x: number | null, a: number | null) => (arch === 'x86_64' ? x : a);
const CLONE = { x86_64: 56, aarch64: 220 };
const SOCKET = { x86_64: 41, aarch64: 198 };
const PERSONALITY = { x86_64: 135, aarch64: 92 };
/** What glibc passes to clone for a thread, and for fork (SIGCHLD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID). */
const THREAD_FLAGS = 0x3d0f00;
const FORK_FLAGS = 0x01200011;
const CLONE_NEW = { NS: 0x20000, CGROUP: 0x2000000, UTS: 0x4000000, IPC: 0x8000000, USER: 0x10000000, PID: 0x20000000, NET: 0x40000000 };

/** Syscall numbers from the kernel headers, where linux-libc-dev is installed. */
function headerNumbers(file: string): Map<string, number> | undefined {
  if (!existsSync(file)) return undefined;
  const out = new Map<string, number>();
  for (const m of readFileSync(file, 'utf8').matchAll(/^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$/gm)) out.set(m[1], Number(m[2]));
  return out;
}
const HEADERS: Record<SeccompArch, string> = {
  x86_64: '/usr/include/x86_64-linux-gnu/asm/unistd_64.h',
  aarch64: '/usr/include/asm-generic/unistd.h',
};

for (const arch of ['x86_64', 'aarch64'] as SeccompArch[]) {
  describe(`seccomp filter (${arch}, decoded and interpreted)`, () => {
    const AUDIT = AUDIT_ARCH[arch];
    const program = (options: SeccompOptions = {}) => {
      const insns = decode(buildSeccompFilter({ arch, ...options }));
      validate(insns);
      return insns;
    };
    const insns = program();
    const verdict = (nr: number, args: Array<number | bigint> = [], p = insns) => run(p, nr, AUDIT, args);

    it('is a valid classic BPF program that checks the architecture first', () => {
      assert.deepEqual(insns[0], { code: 0x20, jt: 0, jf: 0, k: 4 }, 'loads seccomp_data.arch');
      assert.equal(insns[1].code, 0x15);
      assert.equal(insns[1].k, AUDIT);
    });

    it('refuses the keyring and every syscall of the list with EPERM', () => {
      for (const [name, x, a] of MUST_DENY) {
        const nr = NR(arch, x, a);
        if (nr === null) continue;
        assert.equal(verdict(nr), EPERM, `${name} (${nr}) should be EPERM`);
      }
    });

    it('allows the syscalls ordinary Python makes', () => {
      for (const [name, x, a] of ORDINARY) assert.equal(verdict(NR(arch, x, a)!), ALLOW, `${name} should be allowed`);
      assert.equal(verdict(CLONE[arch], [THREAD_FLAGS]), ALLOW, 'clone for a thread');
      assert.equal(verdict(CLONE[arch], [FORK_FLAGS]), ALLOW, 'clone for fork');
      for (const family of [1, 2, 10, 16, 17]) assert.equal(verdict(SOCKET[arch], [family, 1, 0]), ALLOW, `socket family ${family}`);
      for (const persona of [0, 8, 0x20000, 0x20008, 0xffffffff]) assert.equal(verdict(PERSONALITY[arch], [persona]), ALLOW);
    });

    it('refuses clone with any CLONE_NEW* flag, and clone3 with ENOSYS', () => {
      for (const [name, flag] of Object.entries(CLONE_NEW)) {
        assert.equal(verdict(CLONE[arch], [FORK_FLAGS | flag]), EPERM, `clone(CLONE_NEW${name})`);
        assert.equal(verdict(CLONE[arch], [BigInt(flag) | (1n << 32n)]), EPERM, `clone(CLONE_NEW${name}) with high bits set`);
      }
      assert.equal(verdict(CLONE[arch], [BigInt(THREAD_FLAGS) | (1n << 33n)]), ALLOW, 'only the low word carries clone flags');
      assert.equal(verdict(435), ENOSYS, 'clone3');
    });

    it('refuses dangerous socket families and personalities', () => {
      for (const family of [38, 40, 46, 100, 0xffffffff]) assert.equal(verdict(SOCKET[arch], [family, 1, 0]), EPERM, `socket family ${family}`);
      assert.equal(verdict(PERSONALITY[arch], [0x0040000]), EPERM, 'ADDR_NO_RANDOMIZE');
      assert.equal(verdict(PERSONALITY[arch], [0x0400000]), EPERM, 'READ_IMPLIES_EXEC');
    });

    it('answers ENOSYS past the known table, and EPERM to listns (470)', () => {
      assert.equal(verdict(470), EPERM);
      for (const nr of [471, 500, 1000, 0x3fffffff]) assert.equal(verdict(nr), ENOSYS, `syscall ${nr}`);
    });

    it('kills a process that calls through another ABI', () => {
      const others = [0x40000003 /* i386 */, 0x40000028 /* arm */, AUDIT_ARCH[arch === 'x86_64' ? 'aarch64' : 'x86_64'], 0];
      for (const other of others) {
        assert.equal(run(insns, 39, other), KILL_PROCESS, `arch 0x${other.toString(16)}`);
        assert.equal(run(insns, 250, other), KILL_PROCESS);
      }
    });

    if (arch === 'x86_64') {
      it('refuses the x32 ABI', () => {
        for (const nr of [39, 250, 248, 0, 512, 547]) assert.equal(verdict(0x40000000 | nr), EPERM, `x32 syscall ${nr}`);
        assert.equal(verdict(-1), EPERM, 'syscall -1 has the x32 bit');
      });
    }

    it('with allowNamespaces / allowMounts lets a supervisor create namespaces and mount; the rest stays refused', () => {
      const ns = program({ allowNamespaces: true });
      assert.equal(verdict(NR(arch, 272, 97)!, [CLONE_NEW.PID | CLONE_NEW.NS], ns), ALLOW, 'unshare');
      assert.equal(verdict(NR(arch, 308, 268)!, [], ns), ALLOW, 'setns');
      assert.equal(verdict(CLONE[arch], [FORK_FLAGS | CLONE_NEW.PID], ns), ALLOW, 'clone(CLONE_NEWPID)');
      assert.equal(verdict(NR(arch, 165, 40)!, [], ns), EPERM, 'mount is a separate option');
      assert.equal(verdict(NR(arch, 250, 219)!, [], ns), EPERM, 'keyctl');
      assert.equal(verdict(435, [], ns), ENOSYS, 'clone3 stays ENOSYS (glibc falls back to clone)');
      const mounts = program({ allowMounts: true });
      for (const nr of [NR(arch, 165, 40)!, NR(arch, 166, 39)!, NR(arch, 155, 41)!, 428, 429, 430]) assert.equal(verdict(nr, [], mounts), ALLOW);
      assert.equal(verdict(NR(arch, 272, 97)!, [], mounts), EPERM, 'unshare is a separate option');
    });

    it('refuses setuid and setgid modes in chmod, open(O_CREAT) and mknod; plain modes pass (arguments read per syscall)', () => {
      const S_ISUID = 0o4000;
      const S_ISGID = 0o2000;
      const O_CREAT = 0o100;
      const O_TMPFILE = 0o20000000 | (arch === 'x86_64' ? 0o200000 : 0o40000);
      // [name, x86_64, aarch64, the arguments before the mode]: the mode sits at a different index per syscall.
      const chmods: Array<[string, number | null, number | null, number[]]> = [
        ['chmod', 90, null, [0]],
        ['fchmod', 91, 52, [3]],
        ['fchmodat', 268, 53, [-100, 0]],
        ['fchmodat2', 452, 452, [-100, 0]],
      ];
      for (const [name, x, a, before] of chmods) {
        const nr = NR(arch, x, a);
        if (nr === null) continue;
        for (const mode of [0o4755, 0o2755, 0o6777, S_ISUID, S_ISGID]) assert.equal(verdict(nr, [...before, mode, 0]), EPERM, `${name}(0${mode.toString(8)})`);
        for (const mode of [0o755, 0o644, 0o1777, 0o777]) assert.equal(verdict(nr, [...before, mode, 0]), ALLOW, `${name}(0${mode.toString(8)})`);
        // Only the low word is the mode: a high bit elsewhere must not hide S_ISUID.
        assert.equal(verdict(nr, [...before, BigInt(0o4755) | (1n << 40n)]), EPERM, `${name} with high bits set`);
      }
      // open family: [name, x86_64, aarch64, index of flags, index of mode]
      const opens: Array<[string, number | null, number | null, number, number]> = [
        ['open', 2, null, 1, 2],
        ['openat', 257, 56, 2, 3],
      ];
      for (const [name, x, a, fi, mi] of opens) {
        const nr = NR(arch, x, a);
        if (nr === null) continue;
        const at = (flags: number, mode: number) => {
          const v = [0, 0, 0, 0];
          v[fi] = flags;
          v[mi] = mode;
          return v;
        };
        assert.equal(verdict(nr, at(O_CREAT | 1, 0o4755)), EPERM, `${name}(O_CREAT, 04755)`);
        assert.equal(verdict(nr, at(O_CREAT | 0o1000, 0o2755)), EPERM, `${name}(O_CREAT|O_TRUNC, 02755)`);
        assert.equal(verdict(nr, at(O_TMPFILE | 2, 0o4700)), EPERM, `${name}(O_TMPFILE, 04700)`);
        assert.equal(verdict(nr, at(O_CREAT | 1, 0o644)), ALLOW, `${name}(O_CREAT, 0644)`);
        assert.equal(verdict(nr, at(0, 0o4755)), ALLOW, `${name} without O_CREAT ignores the mode register`);
        assert.equal(verdict(nr, at(0o2000000 /* O_CLOEXEC */, 0xffffffff)), ALLOW, `${name}(O_RDONLY|O_CLOEXEC) with garbage in the mode register`);
      }
      if (arch === 'x86_64') {
        assert.equal(verdict(85, [0, 0o4755]), EPERM, 'creat(04755)');
        assert.equal(verdict(85, [0, 0o644]), ALLOW, 'creat(0644)');
        assert.equal(verdict(133, [0, 0o100000 | 0o4755, 0]), EPERM, 'mknod(S_IFREG|04755)');
        assert.equal(verdict(133, [0, 0o010000 | 0o644, 0]), ALLOW, 'mknod(S_IFIFO|0644)');
      }
      const mknodat = NR(arch, 259, 33)!;
      assert.equal(verdict(mknodat, [-100, 0, 0o100000 | 0o2755, 0]), EPERM, 'mknodat(S_IFREG|02755)');
      assert.equal(verdict(mknodat, [-100, 0, 0o100000 | 0o644, 0]), ALLOW, 'mknodat(S_IFREG|0644)');
      assert.equal(verdict(437, [-100, 0, 0, 24]), ENOSYS, 'openat2: its mode is in memory, so it is refused as if the kernel lacked it');
      // The lenient supervisor filter keeps the rule.
      assert.equal(verdict(NR(arch, 91, 52)!, [3, 0o4755], program({ allowNamespaces: true, allowMounts: true })), EPERM);
    });

    it('with denyPtrace refuses ptrace and process_vm_*', () => {
      const p = program({ denyPtrace: true });
      for (const nr of [NR(arch, 101, 117)!, NR(arch, 310, 270)!, NR(arch, 311, 271)!]) assert.equal(verdict(nr, [], p), EPERM);
    });

    it('uses the syscall numbers of the kernel headers', function () {
      const headers = headerNumbers(HEADERS[arch]);
      if (!headers) {
        console.log(`      (no ${HEADERS[arch]}: install linux-libc-dev to cross-check the numbers)`);
        this.skip();
      }
      let checked = 0;
      for (const [name, { nr }] of seccompPolicy({ arch, denyPtrace: true })) {
        const expected = headers!.get(name);
        if (expected === undefined) continue; // newer than these headers (lsm_*, open_tree_attr, …)
        assert.equal(nr, expected, `${name}: ${nr} in the module, ${expected} in ${HEADERS[arch]}`);
        checked++;
      }
      assert.ok(checked > 50, `only ${checked} numbers were checked`);
    });
  });
}

describe('seccomp filter API', () => {
  it('knows the host architecture, and refuses others clearly', () => {
    assert.equal(hostSeccompArch('x64'), 'x86_64');
    assert.equal(hostSeccompArch('arm64'), 'aarch64');
    assert.equal(hostSeccompArch('riscv64'), undefined);
    assert.throws(() => buildSeccompFilter({ arch: 'riscv64' as SeccompArch }), /supports x86_64 and aarch64, not riscv64/);
  });

  it('gives the bwrap options for an fd', () => {
    assert.deepEqual(seccompBwrapArgs(4), ['--seccomp', '4']);
    assert.throws(() => seccompBwrapArgs(1), /3 or more/);
  });
});

// ---- inside the real sandbox ------------------------------------------------------------------------

const PROBE = String.raw`
import ctypes, json, os, sys, subprocess, threading, asyncio, socket, hashlib, sqlite3, tempfile
from concurrent.futures import ThreadPoolExecutor
nr = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(n, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(n), *[ctypes.c_long(a) for a in args])
    return ctypes.get_errno() if r == -1 else 0
ptr = lambda b: ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value
def install(program_hex):
    prog = bytes.fromhex(program_hex)
    buf = ctypes.create_string_buffer(prog)
    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    fp = Fprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p).value)
    assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    assert libc.prctl(22, 2, ctypes.byref(fp), 0, 0) == 0, ctypes.get_errno()  # PR_SET_SECCOMP, FILTER
def probe():
    return {
        # KEYCTL_GET_KEYRING_ID of the session keyring, without creating one: read-only
        "keyctl": call(nr["keyctl"], 0, -3, 0),
        # into the thread keyring, which dies with this thread
        "add_key": call(nr["add_key"], ptr(b"user"), ptr(b"codeact-seccomp-test"), ptr(b"x"), 1, -1),
        "request_key": call(nr["request_key"], ptr(b"user"), ptr(b"codeact-seccomp-none"), 0, 0),
        "unshare_invalid": call(nr["unshare"], 1),  # EINVAL from the kernel, EPERM from the filter
        "io_uring_setup": call(nr["io_uring_setup"], 0, 0),
        "clone3": call(nr["clone3"], 0, 0),
        "vsock": call(nr["socket"], 40, 1, 0),
    }
fds_at_start = sorted(int(x) for x in os.listdir("/proc/self/fd"))
out = {"before": probe()}
if len(sys.argv) > 2:
    install(sys.argv[2])
    out["after"] = probe()
work = {}
with open("/tmp/t.txt", "w") as f:
    f.write("x" * 100000)
work["tmp"] = os.path.getsize("/tmp/t.txt")
with tempfile.NamedTemporaryFile(dir=os.getcwd()) as f:
    f.write(b"y"); f.flush(); work["cwd"] = os.path.getsize(f.name)
work["true"] = subprocess.run(["/bin/true"]).returncode
work["sh"] = subprocess.run(["/bin/sh", "-c", "echo hi | tr a-z A-Z"], capture_output=True, text=True).stdout
with ThreadPoolExecutor(4) as ex:
    work["threads"] = sum(ex.map(lambda i: i * i, range(100)))
t = threading.Thread(target=lambda: work.__setitem__("thread", threading.get_ident() != 0)); t.start(); t.join()
async def main():
    await asyncio.sleep(0.01)
    return "ok"
work["asyncio"] = asyncio.run(main())
a, b = socket.socketpair(); a.sendall(b"ping"); work["socketpair"] = b.recv(4).decode()
work["sqlite"] = sqlite3.connect(":memory:").execute("select 1+1").fetchone()[0]
work["sha"] = hashlib.sha256(b"").hexdigest()[:8]
work["fds"] = fds_at_start
out["work"] = work
print(json.dumps(out))
`;

describe('seccomp filter inside bubblewrap (python3 via ctypes)', function () {
  this.timeout(60_000);
  let skip: string | null = null;
  let dir: string;
  let workdir: string;
  let nrs: Record<string, number>;
  const arch = hostSeccompArch();

  before(async function () {
    skip = arch ? await probeBubblewrap() : `seccomp filters are built for x86_64 and aarch64, not ${process.arch}`;
    if (skip) {
      console.log(`      skipped: ${skip}`);
      return this.skip();
    }
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-seccomp-'));
    workdir = mkdtempSync(path.join(tmpdir(), 'codeact-seccomp-work-'));
    writeFileSync(path.join(dir, 'probe.py'), PROBE);
    const policy = seccompPolicy({ arch, denyPtrace: true });
    nrs = Object.fromEntries(['keyctl', 'add_key', 'request_key', 'unshare', 'io_uring_setup', 'clone3', 'socket'].map((n) => [n, policy.get(n)!.nr]));
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (workdir) rmSync(workdir, { recursive: true, force: true });
  });

  /** The product's bwrap launch, with probe.py as the command and the program (if any) on fd 4. */
  async function sandboxed(program: Buffer | undefined, extraArgv: string[] = []): Promise<any> {
    const python = await resolvePython();
    // The launch's own filter is left out, so that this test controls what is installed.
    const plan = await planLaunch(python, dir, { role: 'guest', marker: 'seccomp-test', workdir }, { kind: 'bubblewrap', seccomp: false });
    const sep = plan.args.indexOf('--');
    assert.ok(sep > 0, 'the launch plan separates bwrap options from the command with --');
    const args = [
      ...plan.args.slice(0, sep),
      ...(program ? seccompBwrapArgs(4) : []),
      '--',
      python.executable,
      '-I',
      '/run/codeact/guest/probe.py',
      JSON.stringify(nrs),
      ...extraArgv,
    ];
    const child = spawn(plan.command, args, { cwd: plan.cwd, env: plan.env, stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'pipe'] });
    if (program) sendSeccompProgram(child, 4, program);
    else (child.stdio[4] as NodeJS.WritableStream).end();
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d));
    child.stderr!.on('data', (d: Buffer) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    assert.equal(code, 0, `the sandboxed probe failed (exit ${code}):\n${stderr}${stdout}`);
    return JSON.parse(stdout);
  }

  const EPERM_ERRNO = 1;

  it('without the filter, sandboxed code reaches the kernel keyring (the hole this closes)', async () => {
    const out = await sandboxed(undefined);
    assert.equal(out.before.keyctl, 0, 'keyctl(KEYCTL_GET_KEYRING_ID) works without a filter');
    assert.notEqual(out.before.unshare_invalid, EPERM_ERRNO);
  });

  it('with the filter, keyctl, add_key and request_key fail with EPERM and ordinary Python works', async () => {
    const out = await sandboxed(buildSeccompFilter());
    assert.deepEqual(out.before, {
      keyctl: EPERM_ERRNO,
      add_key: EPERM_ERRNO,
      request_key: EPERM_ERRNO,
      unshare_invalid: EPERM_ERRNO,
      io_uring_setup: EPERM_ERRNO,
      clone3: 38,
      vsock: EPERM_ERRNO,
    });
    const w = out.work;
    assert.equal(w.tmp, 100000);
    assert.equal(w.cwd, 1);
    assert.equal(w.true, 0, 'subprocess of /bin/true');
    assert.equal(w.sh, 'HI\n', 'a shell pipeline');
    assert.equal(w.threads, 328350);
    assert.equal(w.thread, true);
    assert.equal(w.asyncio, 'ok');
    assert.equal(w.socketpair, 'ping');
    assert.equal(w.sqlite, 2);
    assert.equal(w.sha, 'e3b0c442');
    assert.ok(!w.fds.includes(4), `bwrap closes the program's fd after reading it (open fds: ${w.fds})`);
  });

  it('a supervisor started with allowNamespaces can stack the default filter on itself', async () => {
    const out = await sandboxed(buildSeccompFilter({ allowNamespaces: true, allowMounts: true }), [buildSeccompFilter().toString('hex')]);
    assert.equal(out.before.unshare_invalid, 22, 'the lenient filter lets unshare reach the kernel (EINVAL for bad flags)');
    assert.equal(out.before.keyctl, EPERM_ERRNO, 'the keyring stays closed');
    assert.equal(out.after.unshare_invalid, EPERM_ERRNO, 'after stacking the default filter, unshare is refused');
    assert.equal(out.after.keyctl, EPERM_ERRNO);
  });
});
