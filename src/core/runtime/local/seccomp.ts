/**
 * A seccomp deny-list for the bubblewrap sandbox, compiled here to classic BPF: the raw
 * `struct sock_filter[]` that `bwrap --seccomp FD` reads from FD and installs right before it
 * executes the sandboxed command (every process started inside inherits it; filters can be added
 * but never removed).
 *
 * Why: without it, sandboxed code can read, add and revoke keys in the user's kernel keyring
 * (`keyctl`, `add_key`, `request_key`), which holds Kerberos tickets and other credentials, and it
 * can reach kernel interfaces that a code sandbox has no use for.
 *
 * What is refused (EPERM unless noted) covers every syscall that Docker's default seccomp profile
 * refuses to an unprivileged container on x86_64 and aarch64 (moby/profiles seccomp/default.json,
 * commit cd3bed8, June 2026: an allow-list whose default is EPERM; "unprivileged" means Docker's
 * default capabilities, so the rules that need CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_SYS_TIME, … do not
 * apply). Docker's allow-list also refuses syscalls newer than its table; here:
 * - the kernel keyring: keyctl, add_key, request_key;
 * - namespaces: unshare, setns, listns, and clone with any CLONE_NEW* flag (checked on clone's flags,
 *   which is arg 0 on both architectures); clone3 gets ENOSYS, because its flags sit in memory a
 *   filter cannot read, and glibc then falls back to clone;
 * - mounts: mount, umount2, pivot_root, open_tree, open_tree_attr, move_mount, fsopen, fsconfig,
 *   fsmount, fspick, mount_setattr;
 * - kernel modules and kexec: init_module, finit_module, delete_module, create_module,
 *   get_kernel_syms, query_module, kexec_load, kexec_file_load;
 * - kernel attack surface with no use here: bpf, perf_event_open, userfaultfd, io_uring_setup,
 *   io_uring_enter, io_uring_register (Docker dropped io_uring in 2023), fanotify_init,
 *   lookup_dcookie, lsm_get_self_attr, lsm_set_self_attr, lsm_list_modules, file_getattr, file_setattr;
 * - file handles: open_by_handle_at (the "shocker" escape), and name_to_handle_at (Docker allows it;
 *   refused here too since nothing a sandboxed script does needs it);
 * - the machine: reboot, swapon, swapoff, acct, settimeofday, clock_settime, sethostname,
 *   setdomainname, syslog, vhangup, quotactl, quotactl_fd, nfsservctl, uselib, ustat, sysfs, _sysctl,
 *   iopl, ioperm, and the unimplemented getpmsg, putpmsg, afs_syscall, tuxcall, security, vserver;
 * - other processes' memory and NUMA placement: kcmp, pidfd_getfd, process_madvise, mbind,
 *   get_mempolicy, set_mempolicy, set_mempolicy_home_node, migrate_pages, move_pages;
 * - personality other than Docker's five values (0, PER_LINUX32 8, UNAME26 0x20000, 0x20008 and the
 *   query 0xffffffff): no ADDR_NO_RANDOMIZE, no READ_IMPLIES_EXEC;
 * - socket() in the address families Docker refuses: AF_ALG (kernel crypto), AF_VSOCK (reaches the
 *   host and VMs even without network namespaces), the removed DECnet, Econet, ATMSVC, IrDA, WANPIPE,
 *   ISDN and CAIF, and any family beyond AF_MCTP (45);
 * - syscalls newer than the tables below (number 471 and up): ENOSYS, as on an older kernel, so
 *   libraries use their fallbacks. Docker's allow-list refuses those too.
 * - setuid and setgid bits: chmod, fchmod, fchmodat and fchmodat2 with S_ISUID or S_ISGID in the mode,
 *   and open, openat, creat, mknod and mknodat creating a file with either bit, get EPERM (a file the
 *   code writes into a writable workspace must never become a setuid program on the host; nosuid
 *   mounts only stop the bits at exec, not their creation); openat2, whose mode sits in memory a filter
 *   cannot read, gets ENOSYS (glibc and Python never use it; others fall back to openat).
 * Docker allows ptrace, process_vm_readv and process_vm_writev on kernels from 4.8; so does this filter
 * unless `denyPtrace` is set. chroot needs CAP_SYS_CHROOT, which the sandbox does not have; vm86,
 * vm86old and stime exist only in the i386 ABI, which the architecture check refuses.
 *
 * Architecture: the filter is built for one architecture (x86_64 or aarch64; syscall numbers differ).
 * A syscall made through another ABI (i386 `int 0x80` on x86_64, AArch32 on aarch64) kills the
 * process, since its numbers mean other syscalls. On x86_64, x32-ABI syscalls (number with bit
 * 0x40000000) are refused with EPERM.
 *
 * Sources of the numbers: the kernel's arch/x86/entry/syscalls/syscall_64.tbl and
 * include/uapi/asm-generic/unistd.h (aarch64 uses the generic table), as shipped in Debian's
 * linux-libc-dev 6.1 (/usr/include/x86_64-linux-gnu/asm/unistd_64.h, /usr/include/asm-generic/unistd.h),
 * plus the later common numbers 459-470 (lsm_*, open_tree_attr, file_getattr, file_setattr, listns),
 * which are the same on both architectures.
 */

export type SeccompArch = 'x86_64' | 'aarch64';

export interface SeccompOptions {
  /** The architecture of the sandboxed processes; default: this process's (see hostSeccompArch). */
  arch?: SeccompArch;
  /**
   * Allow unshare, setns, listns and clone with CLONE_NEW* flags (default: refused). For a trusted
   * supervisor that creates namespaces inside the sandbox before user code runs; that supervisor
   * then installs the default filter on itself (filters stack, the strictest answer wins).
   */
  allowNamespaces?: boolean;
  /** Allow mount, umount2, pivot_root and the new mount API (default: refused). Same use. */
  allowMounts?: boolean;
  /** Also refuse ptrace, process_vm_readv and process_vm_writev (Docker allows them). */
  denyPtrace?: boolean;
}

/** AUDIT_ARCH_* values of `seccomp_data.arch` (include/uapi/linux/audit.h). */
export const AUDIT_ARCH: Record<SeccompArch, number> = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };

/**
 * Syscall numbers, only of the syscalls this filter names: name, x86_64, aarch64 (`-`: not on that
 * architecture). `#` starts a comment line.
 */
const SYSCALL_TABLE = `
  # keyring
  add_key                 248 217
  request_key             249 218
  keyctl                  250 219
  # namespaces
  clone                    56 220
  clone3                  435 435
  unshare                 272  97
  setns                   308 268
  listns                  470 470
  # mounts
  mount                   165  40
  umount2                 166  39
  pivot_root              155  41
  open_tree               428 428
  move_mount              429 429
  fsopen                  430 430
  fsconfig                431 431
  fsmount                 432 432
  fspick                  433 433
  mount_setattr           442 442
  open_tree_attr          467 467
  # modules, kexec
  init_module             175 105
  finit_module            313 273
  delete_module           176 106
  create_module           174   -
  get_kernel_syms         177   -
  query_module            178   -
  kexec_load              246 104
  kexec_file_load         320 294
  # kernel attack surface
  bpf                     321 280
  perf_event_open         298 241
  userfaultfd             323 282
  io_uring_setup          425 425
  io_uring_enter          426 426
  io_uring_register       427 427
  fanotify_init           300 262
  lookup_dcookie          212  18
  lsm_get_self_attr       459 459
  lsm_set_self_attr       460 460
  lsm_list_modules        461 461
  file_getattr            468 468
  file_setattr            469 469
  # file handles
  name_to_handle_at       303 264
  open_by_handle_at       304 265
  # the machine
  reboot                  169 142
  swapon                  167 224
  swapoff                 168 225
  acct                    163  89
  settimeofday            164 170
  clock_settime           227 112
  sethostname             170 161
  setdomainname           171 162
  syslog                  103 116
  vhangup                 153  58
  quotactl                179  60
  quotactl_fd             443 443
  nfsservctl              180  42
  uselib                  134   -
  ustat                   136   -
  sysfs                   139   -
  _sysctl                 156   -
  iopl                    172   -
  ioperm                  173   -
  getpmsg                 181   -
  putpmsg                 182   -
  afs_syscall             183   -
  tuxcall                 184   -
  security                185   -
  vserver                 236   -
  # other processes, NUMA
  kcmp                    312 272
  pidfd_getfd             438 438
  process_madvise         440 440
  mbind                   237 235
  set_mempolicy           238 237
  get_mempolicy           239 236
  set_mempolicy_home_node 450 450
  migrate_pages           256 238
  move_pages              279 239
  # file modes, checked on their arguments (the mode's low word: the kernel reads it as a umode_t)
  chmod                    90   -
  fchmod                   91  52
  fchmodat                268  53
  fchmodat2               452 452
  open                      2   -
  openat                  257  56
  creat                    85   -
  mknod                   133   -
  mknodat                 259  33
  openat2                 437 437
  # ptrace (only with denyPtrace)
  ptrace                  101 117
  process_vm_readv        310 270
  process_vm_writev       311 271
  # checked on their arguments
  personality             135  92
  socket                   41 198
`;

const SYSCALLS: Record<string, { x86_64?: number; aarch64?: number }> = Object.fromEntries(
  SYSCALL_TABLE.split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([name]) => name && !name.startsWith('#'))
    .map(([name, x86, arm]) => [name, { ...(x86 !== '-' ? { x86_64: Number(x86) } : {}), ...(arm !== '-' ? { aarch64: Number(arm) } : {}) }]),
);

/** The first syscall number past the tables above (listns, 470, is the last one known). */
const FIRST_UNKNOWN_SYSCALL = 471;

const NAMESPACE_SYSCALLS = ['unshare', 'setns', 'listns'];
const MOUNT_SYSCALLS = [
  'mount',
  'umount2',
  'pivot_root',
  'open_tree',
  'open_tree_attr',
  'move_mount',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
];
const PTRACE_SYSCALLS = ['ptrace', 'process_vm_readv', 'process_vm_writev'];
/**
 * Syscalls that can give a file the setuid or setgid bit, with the argument holding the mode and, for
 * the open family, the argument holding the flags (the mode only counts with O_CREAT or O_TMPFILE).
 */
const MODE_SYSCALLS: Record<string, { mode: number; flags?: number }> = {
  chmod: { mode: 1 },
  fchmod: { mode: 1 },
  creat: { mode: 1 },
  mknod: { mode: 1 },
  fchmodat: { mode: 2 },
  fchmodat2: { mode: 2 },
  mknodat: { mode: 2 },
  open: { flags: 1, mode: 2 },
  openat: { flags: 2, mode: 3 },
};
/** S_ISUID | S_ISGID. */
const SETID_BITS = 0o6000;
/** O_CREAT | __O_TMPFILE (the same on x86_64 and aarch64). */
const CREATE_FLAGS = 0o100 | 0o20000000;
/** Refused outright, whatever the options. */
const ALWAYS_DENIED = Object.keys(SYSCALLS).filter(
  (n) =>
    ![
      ...NAMESPACE_SYSCALLS,
      ...MOUNT_SYSCALLS,
      ...PTRACE_SYSCALLS,
      ...Object.keys(MODE_SYSCALLS),
      'openat2',
      'clone',
      'clone3',
      'personality',
      'socket',
    ].includes(n),
);

/** CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET. */
const CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
/** personality() values Docker allows: PER_LINUX, PER_LINUX32, UNAME26, UNAME26|PER_LINUX32, query. */
const ALLOWED_PERSONAS = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];
/** Refused socket families: DECnet 12, Econet 19, ATMSVC 20, IrDA 23, WANPIPE 25, ISDN 34, CAIF 37, ALG 38, VSOCK 40. */
const DENIED_SOCKET_FAMILIES = [12, 19, 20, 23, 25, 34, 37, 38, 40];
/** Families from here on (past AF_MCTP, 45) are refused too. */
const FIRST_UNKNOWN_SOCKET_FAMILY = 46;

const X32_SYSCALL_BIT = 0x40000000;
const EPERM = 1;
const ENOSYS = 38;

// seccomp return values (include/uapi/linux/seccomp.h)
const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;

// classic BPF opcodes (include/uapi/linux/filter.h, bpf_common.h)
const BPF_LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const BPF_JSET_K = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K = 0x06; // BPF_RET | BPF_K
const BPF_JA = 0x05; // BPF_JMP | BPF_JA: jump by k

/** Offsets in `struct seccomp_data` (little-endian on both architectures). */
const OFF_NR = 0;
const OFF_ARCH = 4;
/** Low 32 bits of args[0]: clone's flags, personality's persona and socket's family are all read there. */
const OFF_ARG0_LO = 16;
/** Low 32 bits of args[i] (modes and open flags are 32-bit values). */
const argLo = (i: number) => OFF_ARG0_LO + 8 * i;

/** The architecture of this process, if the filter supports it. */
export function hostSeccompArch(arch: string = process.arch): SeccompArch | undefined {
  return arch === 'x64' ? 'x86_64' : arch === 'arm64' ? 'aarch64' : undefined;
}

/** What the filter does with each named syscall for these options, by name (for docs and tests). */
export function seccompPolicy(options: SeccompOptions = {}): Map<string, { nr: number; action: 'EPERM' | 'ENOSYS' | 'args' }> {
  const arch = resolveArch(options.arch);
  const out = new Map<string, { nr: number; action: 'EPERM' | 'ENOSYS' | 'args' }>();
  const add = (name: string, action: 'EPERM' | 'ENOSYS' | 'args') => {
    const nr = SYSCALLS[name]?.[arch];
    if (nr !== undefined) out.set(name, { nr, action });
  };
  for (const n of ALWAYS_DENIED) add(n, 'EPERM');
  if (!options.allowNamespaces) for (const n of NAMESPACE_SYSCALLS) add(n, 'EPERM');
  if (!options.allowMounts) for (const n of MOUNT_SYSCALLS) add(n, 'EPERM');
  if (options.denyPtrace) for (const n of PTRACE_SYSCALLS) add(n, 'EPERM');
  add('clone3', 'ENOSYS');
  add('openat2', 'ENOSYS');
  for (const n of Object.keys(MODE_SYSCALLS)) add(n, 'args');
  if (!options.allowNamespaces) add('clone', 'args');
  add('personality', 'args');
  add('socket', 'args');
  return out;
}

function resolveArch(arch: SeccompArch | undefined): SeccompArch {
  const a = arch ?? hostSeccompArch();
  if (a !== 'x86_64' && a !== 'aarch64') {
    throw new Error(`The sandbox's seccomp filter supports x86_64 and aarch64, not ${arch ?? process.arch}.`);
  }
  return a;
}

// ---- a tiny assembler with labels -----------------------------------------------------------------

type Target = string | number; // a label, or 0 for "the next instruction"
interface Insn {
  code: number;
  k: number;
  jt?: Target;
  jf?: Target;
  /** For BPF_JA: where to go (resolved into k). */
  to?: string;
}

class Program {
  private readonly insns: Insn[] = [];
  private readonly labels = new Map<string, number>();

  load(offset: number): this {
    this.insns.push({ code: BPF_LD_W_ABS, k: offset });
    return this;
  }
  jump(code: number, k: number, jt: Target, jf: Target = 0): this {
    this.insns.push({ code, k: k >>> 0, jt, jf });
    return this;
  }
  goto(label: string): this {
    this.insns.push({ code: BPF_JA, k: 0, to: label });
    return this;
  }
  ret(k: number): this {
    this.insns.push({ code: BPF_RET_K, k: k >>> 0 });
    return this;
  }
  label(name: string): this {
    if (this.labels.has(name)) throw new Error(`seccomp: label ${name} defined twice`);
    this.labels.set(name, this.insns.length);
    return this;
  }

  /** `struct sock_filter[]`: u16 code, u8 jt, u8 jf, u32 k, little-endian, 8 bytes each. */
  assemble(): Buffer {
    if (this.insns.length > 4096) throw new Error(`seccomp: ${this.insns.length} instructions, over BPF_MAXINSNS (4096)`);
    const buf = Buffer.alloc(this.insns.length * 8);
    this.insns.forEach((insn, i) => {
      const rel = (t: Target | undefined): number => {
        if (t === undefined || t === 0) return 0;
        const at = typeof t === 'number' ? i + 1 + t : this.labels.get(t);
        if (at === undefined) throw new Error(`seccomp: unknown label ${t}`);
        const off = at - (i + 1);
        if (off < 0 || off > 255) throw new Error(`seccomp: jump from ${i} to ${at} does not fit in 8 bits`);
        return off;
      };
      buf.writeUInt16LE(insn.code, i * 8);
      buf.writeUInt8(rel(insn.jt), i * 8 + 2);
      buf.writeUInt8(rel(insn.jf), i * 8 + 3);
      buf.writeUInt32LE(insn.to === undefined ? insn.k : rel(insn.to), i * 8 + 4);
    });
    return buf;
  }
}

/**
 * The filter program for bubblewrap's `--seccomp FD`: a `struct sock_filter[]` as bytes (8 per
 * instruction). Throws for an architecture it does not know.
 */
export function buildSeccompFilter(options: SeccompOptions = {}): Buffer {
  const arch = resolveArch(options.arch);
  const policy = seccompPolicy({ ...options, arch });
  const nr = (name: string) => policy.get(name)!.nr;
  const p = new Program();

  p.load(OFF_ARCH).jump(BPF_JEQ_K, AUDIT_ARCH[arch], 1).ret(SECCOMP_RET_KILL_PROCESS);
  p.load(OFF_NR);
  if (arch === 'x86_64') p.jump(BPF_JSET_K, X32_SYSCALL_BIT, 'eperm');
  p.jump(BPF_JGE_K, FIRST_UNKNOWN_SYSCALL, 'enosys');
  if (policy.has('clone')) p.jump(BPF_JEQ_K, nr('clone'), 'clone');
  p.jump(BPF_JEQ_K, nr('personality'), 'personality');
  p.jump(BPF_JEQ_K, nr('socket'), 'socket');
  p.jump(BPF_JEQ_K, nr('clone3'), 'enosys');
  p.jump(BPF_JEQ_K, nr('openat2'), 'enosys');
  const modeSyscalls = Object.entries(MODE_SYSCALLS).filter(([name]) => policy.has(name));
  for (const [name, where] of modeSyscalls) p.jump(BPF_JEQ_K, nr(name), where.flags === undefined ? `mode${where.mode}` : `create${where.flags}`);
  const denied = [...policy.values()].filter((e) => e.action === 'EPERM').map((e) => e.nr);
  for (const n of [...new Set(denied)].sort((a, b) => a - b)) p.jump(BPF_JEQ_K, n, 'eperm');
  p.ret(SECCOMP_RET_ALLOW);

  // Argument checks (classic BPF jumps only forward, so the shared returns come last).
  if (policy.has('clone')) p.label('clone').load(OFF_ARG0_LO).jump(BPF_JSET_K, CLONE_NEW_FLAGS, 'eperm', 'allow');

  p.label('personality').load(OFF_ARG0_LO);
  for (const persona of ALLOWED_PERSONAS) p.jump(BPF_JEQ_K, persona, 'allow');
  p.goto('eperm');

  p.label('socket').load(OFF_ARG0_LO);
  for (const family of DENIED_SOCKET_FAMILIES) p.jump(BPF_JEQ_K, family, 'eperm');
  p.jump(BPF_JGE_K, FIRST_UNKNOWN_SOCKET_FAMILY, 'eperm', 'allow');

  // open(at): only a call that creates a file passes its mode; then the mode decides.
  for (const flags of new Set(modeSyscalls.map(([, w]) => w.flags).filter((f): f is number => f !== undefined))) {
    p.label(`create${flags}`)
      .load(argLo(flags))
      .jump(BPF_JSET_K, CREATE_FLAGS, `mode${flags + 1}`, 'allow');
  }
  for (const mode of new Set(modeSyscalls.map(([, w]) => w.mode))) p.label(`mode${mode}`).load(argLo(mode)).jump(BPF_JSET_K, SETID_BITS, 'eperm', 'allow');

  p.label('allow').ret(SECCOMP_RET_ALLOW);
  p.label('eperm').ret(SECCOMP_RET_ERRNO | EPERM);
  p.label('enosys').ret(SECCOMP_RET_ERRNO | ENOSYS);

  return p.assemble();
}

// ---- wiring it into a bwrap launch ----------------------------------------------------------------

/**
 * The bwrap options that install the program read from `fd` in the sandboxed command. Put them
 * among bwrap's options, before the `--` that starts the command.
 */
export function seccompBwrapArgs(fd: number): string[] {
  if (!Number.isInteger(fd) || fd < 3) throw new Error(`seccomp: the program's fd must be 3 or more, not ${fd}`);
  return ['--seccomp', String(fd)];
}

/**
 * Writes the program into the pipe the child was given at stdio index `fd` (spawn it with
 * `'pipe'` there) and closes our end, so bwrap reads it to end-of-file. The program is smaller than
 * a pipe's buffer, so this never waits on bwrap.
 */
export function sendSeccompProgram(child: { stdio: ReadonlyArray<unknown> }, fd: number, program: Buffer): void {
  const stream = child.stdio[fd] as NodeJS.WritableStream & { on(event: 'error', cb: (err: Error) => void): unknown };
  if (!stream || typeof stream.end !== 'function') {
    throw new Error(`seccomp: stdio[${fd}] of the child is not a pipe; spawn it with 'pipe' at index ${fd}`);
  }
  // bwrap that fails early closes its end; the launch reports that failure, not EPIPE.
  stream.on('error', () => {});
  stream.end(program);
}
