/**
 * How the local guest is launched: inside bubblewrap (Linux: own PID, network, IPC and mount namespaces,
 * no capabilities, the seccomp deny-list of seccomp.ts, a read-only minimal view of the system, and a
 * working directory, /tmp and /dev/shm that are each a tmpfs of `fileSize`; see workspaceMount.ts for
 * the workspace) or as a hardened plain process (minimal environment, own process group, rlimits,
 * subreaper-based teardown).
 *
 * `auto` picks bubblewrap when it works on this machine, otherwise the hardened process with a warning.
 */
import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { SandboxInfo } from '../../../common/events';
import type { PythonInfo } from './python';
import { STAGE_NEEDS_SANDBOX, type StagedWorkspace } from './stagedWorkspace';
import { buildSeccompFilter, hostSeccompArch, seccompBwrapArgs, sendSeccompProgram, type SeccompArch } from './seccomp';
import { isUnder } from '../../util/paths';
import { planWorkspaceMount, type HostRunFile, type WorkspaceMount } from './workspaceMount';
import { FONT_PATHS, matplotlibCacheDir, prebuildMatplotlibCache } from './mplCache';
import { CodeActError } from '../../util/errors';
import { DEFAULT_SANDBOX_LIMITS } from '../types';
import {
  BWRAP_NOT_FOUND,
  NOT_LINUX,
  diagnoseUserns,
  fallbackDetail,
  fallbackWarning,
  unavailableMessage,
  type UsernsDiagnosis,
  type UsernsHost,
} from './usernsDiagnosis';

/** The descriptor bwrap reads the seccomp program from (stdio index 4 of the launch). */
export const SECCOMP_FD = 4;

export type SandboxSetting = 'auto' | 'bubblewrap' | 'none' | 'sandbox-exec';

interface SandboxLimits {
  /** Address-space cap, like the OpenAI container's memory_limit: "512m", "1g", "2g". */
  memory?: string;
  cpuSeconds?: number;
  processes?: number;
  /** Largest file the code may write: "256m". */
  fileSize?: string;
  openFiles?: number;
}

export interface SandboxOptions {
  kind?: SandboxSetting;
  network?: boolean;
  mountWorkspace?: WorkspaceMount;
  workspace?: string;
  limits?: SandboxLimits;
  bwrapPath?: string;
  /** matplotlib's font cache of the interpreter (default: mplCache.ts; null: none). */
  mplCache?: string | null;
  /**
   * The seccomp deny-list (default true, where the architecture has one). false runs without it: for
   * diagnostics and for tests that show what it closes; the sandbox info then says so.
   */
  seccomp?: boolean;
  /**
   * Files in the workspace that declared tools run on the host (hostFiles.ts): read-only
   * inside a `readwrite` workspace.
   */
  hostRunPaths?: HostRunFile[];
  /** Where the diagnosis of a failing bubblewrap looks (usernsDiagnosis.ts; default: this machine). */
  host?: UsernsHost;
  /** Review mode (./stagedWorkspace): a `readwrite` workspace's sandboxes start inside its namespaces, where the workspace is an overlay. */
  stage?: Pick<StagedWorkspace, 'pid' | 'enter'>;
}

export interface LaunchPlan {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  info: SandboxInfo;
  /** True when the kernel tears the whole tree down (PID namespace); false when we must do it. */
  pidNamespace: boolean;
  /** rlimits the guest applies to itself, in bytes / seconds / counts. */
  rlimits: Record<string, number>;
  /** Limits for the whole process tree, applied through cgroups where they can be created. */
  treeLimits: { pids: number; memoryBytes: number };
  /** One-time warning to show the user (sandbox unavailable, falling back). */
  warning?: string;
  /** The warning's full detail, for the log (what was looked at, every fix). */
  warningDetail?: string;
  /** The code's working directory, as the guest sees it. */
  workdir: string;
  /** Zygote: the socket path as the guests see it. */
  socketPath?: string;
  /** The seccomp program bwrap installs (written on fd SECCOMP_FD), when there is one. */
  seccomp?: Buffer;
  /** Zygote: the strict program each forked guest installs on itself before user code runs. */
  guestSeccomp?: Buffer;
  /** Placeholder folders the launch holds in the workspace (given back on release). */
  placeholders?: string[];
  /** Where the workspace is mounted in the sandbox, when it is. */
  workspacePath?: string;
  /** Mounts under /tmp or /dev/shm (the workspace, a venv) a forked guest carries over its private tmpfs. */
  keepMounts?: string[];
  /** The host folder the launch made for itself through `LaunchRequest.workdir` (removed on release). */
  hostWorkdir?: string;
  /** Environment every guest of this launch gets besides the minimal one (matplotlib's folders); forked guests too. */
  guestEnv: Record<string, string>;
}

export class SandboxUnavailableError extends CodeActError {
  readonly category = 'environment' as const;
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}

function parseSize(value: string | number | undefined, fallback: number): number {
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value === 'number') return value;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$/i.exec(value);
  if (!m) throw new Error(`"${value}" is not a size; write it like "512m" or "2g".`);
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2].toLowerCase() as '' | 'k' | 'm' | 'g' | 't'];
  return Math.floor(Number(m[1]) * mult);
}

interface ProbeResult {
  /** Why bubblewrap cannot be used here, or null. */
  bwrap: string | null;
  /** Why bubblewrap cannot install the seccomp filter here, or null. */
  seccomp: string | null;
  /** Why bubblewrap cannot run here and what to do, when it cannot. */
  diagnosis?: UsernsDiagnosis;
}

/** Probed once per process for each bwrap and host (a few: bounded). */
const sandboxProbes = new Map<string, Promise<ProbeResult>>();

/** The options every launch uses (bwrap before 0.8 lacks --disable-userns and --size). */
const PROBE_ARGS = [
  '--unshare-all',
  '--unshare-user',
  '--disable-userns',
  '--die-with-parent',
  '--new-session',
  '--clearenv',
  '--cap-drop',
  'ALL',
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  '--symlink',
  'usr/lib64',
  '/lib64',
  '--proc',
  '/proc',
  '--dev',
  '/dev',
  '--size',
  '1048576',
  '--tmpfs',
  '/dev/shm',
  '--size',
  '1048576',
  '--tmpfs',
  '/tmp',
  '--remount-ro',
  '/dev',
  '--remount-ro',
  '/',
];

function tryBwrap(bwrapPath: string, program?: Buffer): Promise<string | null> {
  return new Promise((resolve) => {
    const args = [...PROBE_ARGS, ...(program ? seccompBwrapArgs(SECCOMP_FD) : []), '/usr/bin/true'];
    let stderr = '';
    const child = spawn(bwrapPath, args, { stdio: ['ignore', 'ignore', 'pipe', 'ignore', program ? 'pipe' : 'ignore'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-2000)));
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(err.code === 'ENOENT' ? BWRAP_NOT_FOUND : `bwrap failed: ${err.message}`);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve(code === 0 ? null : `bwrap failed: ${stderr.trim() || (signal ? `killed by ${signal}` : `exit code ${code}`)}`);
    });
    if (program) sendSeccompProgram(child, SECCOMP_FD, program);
  });
}

/** Whether bubblewrap works here, and whether it can install the seccomp filter (probed once per process). */
function probeSandbox(bwrapPath = 'bwrap', host?: UsernsHost): Promise<ProbeResult> {
  if (process.platform !== 'linux') return Promise.resolve({ bwrap: 'bubblewrap is Linux-only', seccomp: 'bubblewrap is Linux-only', diagnosis: NOT_LINUX });
  const key = JSON.stringify([bwrapPath, host ?? null]);
  const known = sandboxProbes.get(key);
  if (known) return known;
  if (sandboxProbes.size >= 16) sandboxProbes.clear();
  const probe = (async (): Promise<ProbeResult> => {
    const arch = hostSeccompArch();
    if (!arch) {
      const bwrap = await tryBwrap(bwrapPath);
      return { bwrap, seccomp: `the seccomp filter is built for x86_64 and aarch64, not ${process.arch}` };
    }
    const withFilter = await tryBwrap(bwrapPath, buildSeccompFilter({ arch }));
    if (!withFilter) return { bwrap: null, seccomp: null };
    const bwrap = await tryBwrap(bwrapPath);
    return { bwrap, seccomp: bwrap ? withFilter : `bubblewrap could not install the seccomp filter (${withFilter})` };
  })().then((r) => (r.bwrap ? { ...r, diagnosis: diagnoseUserns(r.bwrap, bwrapPath, host) } : r));
  sandboxProbes.set(key, probe);
  return probe;
}

/** Resolves to null when bubblewrap works here, else the reason it does not. */
export async function probeBubblewrap(bwrapPath = 'bwrap'): Promise<string | null> {
  return (await probeSandbox(bwrapPath)).bwrap;
}

function limitsFor(
  limits: SandboxLimits | undefined,
  includeNproc: boolean,
): { rlimits: Record<string, number>; shown: Record<string, string | number>; treeLimits: LaunchPlan['treeLimits'] } {
  const l = { ...DEFAULT_SANDBOX_LIMITS, ...(limits ?? {}) };
  const rlimits: Record<string, number> = {
    as: parseSize(l.memory, parseSize(DEFAULT_SANDBOX_LIMITS.memory, 0)),
    cpu: l.cpuSeconds,
    fsize: parseSize(l.fileSize, parseSize(DEFAULT_SANDBOX_LIMITS.fileSize, 0)),
    nofile: l.openFiles,
    core: 0,
  };
  const shown: Record<string, string | number> = { memory: l.memory, cpuSeconds: l.cpuSeconds, fileSize: l.fileSize, openFiles: l.openFiles };
  if (includeNproc) {
    rlimits.nproc = l.processes;
    shown.processes = l.processes;
  }
  return { rlimits, shown, treeLimits: { pids: l.processes, memoryBytes: rlimits.as } };
}

const GUEST_MOUNT = '/run/codeact/guest';
/** matplotlib's font cache of the interpreter, read-only (the guest copies it into its own MPLCONFIGDIR). */
const MPL_CACHE_MOUNT = '/run/codeact/mplcache';
const HOST_MOUNT = '/run/codeact/host';
/** The working directory inside the sandbox: a size-capped tmpfs, private to the run or session. */
export const SANDBOX_WORKDIR = '/run/codeact/work';

export type LaunchRole = 'guest' | 'zygote';

interface LaunchRequest {
  /** A guest runs user code; a zygote preloads modules and forks guests (it never runs user code). */
  role: LaunchRole;
  /** Marker put in the environment, to find stray processes of this launch without a PID namespace. */
  marker: string;
  /**
   * Without a sandbox: the host folder to work in, or a function that makes it (called only when the
   * launch has no sandbox; the sandbox's working directory is a tmpfs, and needs no host folder).
   */
  workdir: string | (() => string);
  /** Zygote only: the host folder holding the socket its guests connect back to. */
  socketDir?: string;
}

/** The interpreter command line: the guest library from its private folder, never a file on sys.path. */
function guestArgs(dir: string): string[] {
  const boot = `import sys;sys.path[:]=[p for p in sys.path if p not in ("", ".")];sys.path.insert(0,${JSON.stringify(dir)});import codeact_guest;codeact_guest.run()`;
  return ['-I', '-c', boot];
}

export async function planLaunch(python: PythonInfo, guestDir: string, request: LaunchRequest, options: SandboxOptions = {}): Promise<LaunchPlan> {
  const kind = options.kind ?? 'auto';
  if (options.mplCache === undefined) {
    const dir = matplotlibCacheDir(python);
    if (dir) void prebuildMatplotlibCache(python, dir);
    options = { ...options, mplCache: dir ?? null };
  }
  let warning: string | undefined;
  let warningDetail: string | undefined;
  if (kind === 'sandbox-exec') {
    throw new SandboxUnavailableError('codeact.sandbox.kind "sandbox-exec" (macOS) is not implemented yet. Use "auto" or "none".');
  }
  // Review mode stages writes inside the sandbox: without one they would reach the workspace unreviewed.
  const staged = options.stage && options.mountWorkspace === 'readwrite' ? options.stage : undefined;
  if (staged && kind === 'none') throw new SandboxUnavailableError(STAGE_NEEDS_SANDBOX);
  if (kind === 'auto' || kind === 'bubblewrap') {
    const probe = await probeSandbox(options.bwrapPath, options.host);
    if (!probe.diagnosis) return bwrapPlan(python, guestDir, request, options, probe.seccomp, staged && (await staged.pid()));
    if (kind === 'bubblewrap') throw new SandboxUnavailableError(unavailableMessage(probe.diagnosis));
    if (staged) throw new SandboxUnavailableError(`${STAGE_NEEDS_SANDBOX} ${unavailableMessage(probe.diagnosis)}`);
    warning = fallbackWarning(probe.diagnosis);
    warningDetail = fallbackDetail(probe.diagnosis);
  }
  const { rlimits, shown, treeLimits } = limitsFor(options.limits, false);
  const workdir = typeof request.workdir === 'function' ? request.workdir() : request.workdir;
  // Without a sandbox the interpreter's cache folder is matplotlib's own (the user's, written by the user's code anyway).
  const guestEnv: Record<string, string> = options.mplCache ? { MPLCONFIGDIR: options.mplCache } : {};
  return {
    command: python.executable,
    args: guestArgs(guestDir),
    env: minimalEnv(workdir, { CODEACT_RUN: request.marker, ...guestEnv }),
    guestEnv,
    cwd: workdir,
    info: { kind: 'none', network: true, limits: shown },
    pidNamespace: false,
    rlimits,
    treeLimits,
    warning,
    warningDetail,
    workdir,
    hostWorkdir: typeof request.workdir === 'function' ? workdir : undefined,
    socketPath: request.socketDir ? path.join(request.socketDir, SOCKET_NAME) : undefined,
  };
}

/** The kernel's transparent-huge-page settings (read-only facts: the mode and the page size). */
const THP_SYSFS = '/sys/kernel/mm/transparent_hugepage';

export function minimalEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    TMPDIR: home,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PYTHONIOENCODING: 'utf-8',
    // Python's heap in transparent huge pages where the kernel offers them (madvise mode): a fork of the session
    // (a rewind checkpoint after each run, a background job) copies 512 times fewer page-table entries (measured:
    // 11.7 ms -> 2.8 ms for a 500 MB session). A copy-on-write fault still copies 4 KB, not 2 MB (Linux 5.8+).
    GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1',
    ...extra,
  };
}

const filters = new Map<string, Buffer>();

/**
 * The seccomp program for a guest (strict) or a zygote (lets unshare and mount through), built once.
 * Both refuse ptrace and process_vm_readv/writev (kcmp and pidfd_getfd always are): no process in the
 * sandbox reads or writes another's memory, even one it could otherwise see.
 */
function filterFor(arch: SeccompArch, zygote: boolean): Buffer {
  const key = `${arch}:${zygote}`;
  let program = filters.get(key);
  if (!program) filters.set(key, (program = buildSeccompFilter({ arch, allowNamespaces: zygote, allowMounts: zygote, denyPtrace: true })));
  return program;
}

/**
 * Whether bwrap may leave out --disable-userns: only for a zygote started by root, with the seccomp
 * filter. Started by root, bwrap covers /proc/irq and /proc/bus with read-only mounts, and
 * --disable-userns moves the sandbox into a second user namespace; in the mount namespace a forked
 * guest then makes, those covers are locked, and the kernel refuses it a /proc of its own (EPERM), so
 * guests would share the sandbox's /proc. Without it the zygote stays in the first user namespace and
 * each guest gets its /proc. New user namespaces stay refused: the strict filter every guest installs
 * refuses unshare, setns and clone with CLONE_NEW* flags (clone3: ENOSYS), and the zygote runs no user code.
 */
function keepUserns(zygote: boolean, seccomp: boolean): boolean {
  return zygote && seccomp && process.getuid?.() === 0;
}

/** `stagePid`: review mode's helper (./stagedWorkspace), whose namespaces the sandbox starts in. */
function bwrapPlan(
  python: PythonInfo,
  guestDir: string,
  request: LaunchRequest,
  options: SandboxOptions,
  noSeccomp: string | null,
  stagePid?: number,
): LaunchPlan {
  const network = options.network === true;
  const zygote = request.role === 'zygote';
  const { rlimits, shown, treeLimits } = limitsFor(options.limits, true);
  const size = String(rlimits.fsize);
  const arch = hostSeccompArch();
  const useSeccomp = options.seccomp !== false && !noSeccomp && !!arch;
  // The zygote creates a PID and mount namespace for each guest, so its own filter lets unshare and mount
  // through; each guest stacks the strict filter on itself before user code runs (codeact_zygote.py).
  const seccomp = useSeccomp ? filterFor(arch, zygote) : undefined;
  const guestSeccomp = useSeccomp && zygote ? filterFor(arch, false) : undefined;
  const args: string[] = [
    '--unshare-all',
    '--unshare-user',
    ...(keepUserns(zygote, useSeccomp) ? [] : ['--disable-userns']),
    '--die-with-parent',
    '--new-session',
    '--clearenv',
  ];
  if (network) args.push('--share-net');
  // No capability inside: bwrap started by root keeps them all otherwise (CAP_FSETID, CAP_SETFCAP, CAP_DAC_OVERRIDE
  // over the host's root-owned files in a writable workspace). The zygote keeps CAP_SYS_ADMIN to give each guest
  // a PID and mount namespace of its own; guests drop it before user code runs.
  args.push('--cap-drop', 'ALL');
  if (zygote) args.push('--cap-add', 'CAP_SYS_ADMIN');
  args.push('--ro-bind', '/usr', '/usr');
  for (const [link, target] of [
    ['/bin', 'usr/bin'],
    ['/sbin', 'usr/sbin'],
    ['/lib', 'usr/lib'],
    ['/lib64', 'usr/lib64'],
    ['/lib32', 'usr/lib32'],
  ]) {
    if (existsSync(link)) args.push('--symlink', target, link);
  }
  const etc = [
    '/etc/alternatives',
    '/etc/ld.so.cache',
    '/etc/ld.so.conf',
    '/etc/ld.so.conf.d',
    '/etc/localtime',
    '/etc/mime.types',
    '/etc/matplotlibrc',
    '/etc/python3',
  ];
  if (network) etc.push('/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf', '/etc/ssl', '/etc/ca-certificates', '/etc/pki');
  for (const p of etc) args.push('--ro-bind-try', p, p);
  // fontconfig's configuration and cache (matplotlib and Pillow find fonts through them; without them every
  // plot prints "Fontconfig error: Cannot load default config file").
  for (const p of FONT_PATHS) args.push('--ro-bind', p, p);
  // Storage: the working directory, /tmp and /dev/shm are each a tmpfs of fileSize; everything else is read-only.
  // /proc is read-only: started by root, the code runs as the host's root (no capabilities, but sysctls
  // check only the uid), and through a writable /proc/sys it could set kernel.core_pattern and run a
  // program as root on the host.
  args.push('--proc', '/proc', '--remount-ro', '/proc', '--dev', '/dev', '--size', size, '--tmpfs', '/dev/shm', '--size', size, '--tmpfs', '/tmp');
  args.push('--ro-bind', guestDir, GUEST_MOUNT);
  // glibc reads the huge-page mode and size here before it asks for huge pages (GLIBC_TUNABLES in minimalEnv).
  args.push('--ro-bind-try', THP_SYSFS, THP_SYSFS);
  args.push('--size', size, '--tmpfs', SANDBOX_WORKDIR);
  // matplotlib writes its config folder: each guest its own, in its /tmp, seeded from the read-only cache.
  const guestEnv: Record<string, string> = { MPLCONFIGDIR: '/tmp/matplotlib' };
  if (options.mplCache) {
    args.push('--ro-bind', options.mplCache, MPL_CACHE_MOUNT);
    guestEnv.CODEACT_MPL_CACHE = MPL_CACHE_MOUNT;
  }
  if (zygote && request.socketDir) args.push('--ro-bind', request.socketDir, HOST_MOUNT);
  let warning: string | undefined;
  let placeholders: string[] | undefined;
  let workspace: WorkspaceMount = 'none';
  const ws = options.mountWorkspace ?? 'none';
  if (ws !== 'none' && options.workspace && existsSync(options.workspace) && statSync(options.workspace).isDirectory()) {
    const view = planWorkspaceMount(options.workspace, ws, !!seccomp, options.hostRunPaths, !!stagePid);
    args.push(...view.args);
    warning = view.warning;
    placeholders = view.placeholders.length ? view.placeholders : undefined;
    workspace = view.mode;
  }
  const workspacePath = workspace === 'none' ? undefined : options.workspace;
  // The interpreter and its libraries, read-only, at their own paths (pyenv, venvs, conda live outside
  // /usr): its prefixes and site-packages. Of editable installs of other projects (folders .pth files add
  // to sys.path), only each package's own folder: never the project around it (.env, .ssh, other source).
  // After /tmp's tmpfs (a project's venv under /tmp is not hidden by it) and after the workspace (the
  // folder's own .venv stays read-only in a writable workspace).
  const interpreter = mountRoots([python.executable, ...(python.roots ?? [python.prefix, python.basePrefix]), ...(python.editable ?? [])]);
  for (const p of interpreter) args.push('--ro-bind', p, p);
  // A forked guest mounts a private /tmp and /dev/shm: the mounts under them are carried over (each mount tree once).
  const underTmp = [...(workspacePath ? [workspacePath] : []), ...interpreter].filter((p) => isUnder(p, '/tmp') || isUnder(p, '/dev/shm'));
  const keepMounts = underTmp.filter((p) => !underTmp.some((q) => q !== p && isUnder(p, q)));
  // bwrap's own root and /dev are tmpfs the code could fill: read-only once everything is mounted.
  args.push('--remount-ro', '/dev', '--remount-ro', '/');
  args.push('--chdir', SANDBOX_WORKDIR);
  for (const [k, v] of Object.entries(minimalEnv(SANDBOX_WORKDIR, guestEnv))) args.push('--setenv', k, v);
  if (seccomp) args.push(...seccompBwrapArgs(SECCOMP_FD));
  args.push('--', python.executable, ...guestArgs(GUEST_MOUNT));
  const enter = stagePid && options.stage ? options.stage.enter(stagePid) : [];
  const bwrap = options.bwrapPath ?? 'bwrap';
  return {
    command: enter.length ? enter[0] : bwrap,
    args: enter.length ? [...enter.slice(1), bwrap, ...args] : args,
    env: {},
    guestEnv,
    // bwrap's own working directory on the host does not matter (the guest starts in SANDBOX_WORKDIR).
    cwd: typeof request.workdir === 'string' ? request.workdir : tmpdir(),
    info: { kind: 'bubblewrap', network, limits: shown, seccomp: !!seccomp, workspace, ...(enter.length && workspace === 'readwrite' ? { staged: true } : {}) },
    pidNamespace: true,
    rlimits,
    treeLimits,
    warning,
    workdir: SANDBOX_WORKDIR,
    socketPath: request.socketDir ? `${HOST_MOUNT}/${SOCKET_NAME}` : undefined,
    seccomp,
    guestSeccomp,
    placeholders,
    workspacePath,
    keepMounts,
  };
}

/** The folders to bind (outside /usr, existing), each once: none inside another that is bound. */
function mountRoots(paths: string[]): string[] {
  const roots = [...new Set(paths.filter((p) => p && path.isAbsolute(p) && !isUnder(p, '/usr') && existsSync(p)))].sort();
  return roots.filter((p) => !roots.some((q) => q !== p && isUnder(p, q)));
}

/** The name of the socket a zygote's guests connect back to, in the socket folder. */
const SOCKET_NAME = 'guest.sock';
