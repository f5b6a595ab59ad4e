/**
 * How the local guest is launched: inside bubblewrap (Linux: own PID, network, IPC and mount namespaces,
 * a read-only minimal view of the system, a writable empty work dir) or as a hardened plain process
 * (minimal environment, own process group, rlimits, subreaper-based teardown).
 *
 * `auto` picks bubblewrap when it works on this machine, otherwise the hardened process with a warning.
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import type { SandboxInfo } from '../../../common/events';
import type { PythonInfo } from './python';

export type SandboxSetting = 'auto' | 'bubblewrap' | 'none' | 'sandbox-exec';
export type WorkspaceMount = 'none' | 'readonly' | 'readwrite';

export interface SandboxLimits {
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
}

export const DEFAULT_SANDBOX_LIMITS: Required<SandboxLimits> = {
  memory: '2g',
  cpuSeconds: 300,
  processes: 256,
  fileSize: '256m',
  openFiles: 1024,
};

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
  /** The code's working directory, as the guest sees it. */
  workdir: string;
  /** Zygote: the socket path as the guests see it. */
  socketPath?: string;
}

export class SandboxUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}

export function parseSize(value: string | number | undefined, fallback: number): number {
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value === 'number') return value;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$/i.exec(value);
  if (!m) throw new Error(`"${value}" is not a size; write it like "512m" or "2g".`);
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2].toLowerCase() as '' | 'k' | 'm' | 'g' | 't'];
  return Math.floor(Number(m[1]) * mult);
}

let bwrapProbe: Promise<string | null> | undefined;

/** Resolves to null when bubblewrap works here, else the reason it does not. */
export function probeBubblewrap(bwrapPath = 'bwrap'): Promise<string | null> {
  if (process.platform !== 'linux') return Promise.resolve('bubblewrap is Linux-only');
  bwrapProbe ??= new Promise((resolve) => {
    execFile(
      bwrapPath,
      // The same options the real launch uses (bwrap before 0.8 lacks --disable-userns and --size), so a
      // bwrap that passes here does not fail every run later.
      ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--clearenv', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', '--size', '1048576', '--tmpfs', '/tmp', '/usr/bin/true'],
      { timeout: 5000 },
      (err, _stdout, stderr) => {
        if (!err) return resolve(null);
        const e = err as NodeJS.ErrnoException;
        resolve(e.code === 'ENOENT' ? 'bubblewrap (bwrap) is not installed' : `bwrap failed: ${stderr.trim() || e.message}`);
      },
    );
  });
  return bwrapProbe;
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
const HOST_MOUNT = '/run/codeact/host';
/** The working directory inside the sandbox: a size-capped tmpfs, private to the run or session. */
export const SANDBOX_WORKDIR = '/run/codeact/work';

export type LaunchRole = 'guest' | 'zygote';

export interface LaunchRequest {
  /** A guest runs user code; a zygote preloads modules and forks guests (it never runs user code). */
  role: LaunchRole;
  /** Marker put in the environment, to find stray processes of this launch without a PID namespace. */
  marker: string;
  /** Without a sandbox: the host folder to work in (made by the caller). */
  workdir: string;
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
  let warning: string | undefined;
  if (kind === 'sandbox-exec') {
    throw new SandboxUnavailableError('codeact.sandbox.kind "sandbox-exec" (macOS) is not implemented yet. Use "auto" or "none".');
  }
  if (kind === 'auto' || kind === 'bubblewrap') {
    const reason = await probeBubblewrap(options.bwrapPath);
    if (!reason) return bwrapPlan(python, guestDir, request, options);
    if (kind === 'bubblewrap') {
      throw new SandboxUnavailableError(
        `codeact.sandbox.kind is "bubblewrap" but ${reason}. Install it (Debian/Ubuntu: sudo apt-get install bubblewrap), ` +
          'or set codeact.sandbox.kind to "auto" to fall back to an unsandboxed process.',
      );
    }
    warning =
      `Code runs without a sandbox: ${reason}. It can read your files, use the network, and read this process's environment through /proc, API keys included. ` +
      'Install bubblewrap to isolate it (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap), or set codeact.sandbox.kind to "none" to silence this warning.';
  }
  const { rlimits, shown, treeLimits } = limitsFor(options.limits, false);
  return {
    command: python.executable,
    args: guestArgs(guestDir),
    env: minimalEnv(request.workdir, { CODEACT_RUN: request.marker }),
    cwd: request.workdir,
    info: { kind: 'none', network: true, limits: shown },
    pidNamespace: false,
    rlimits,
    treeLimits,
    warning,
    workdir: request.workdir,
    socketPath: request.socketDir ? path.join(request.socketDir, SOCKET_NAME) : undefined,
  };
}

export function minimalEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    TMPDIR: home,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PYTHONIOENCODING: 'utf-8',
    ...extra,
  };
}

function isUnder(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function bwrapPlan(python: PythonInfo, guestDir: string, request: LaunchRequest, options: SandboxOptions): LaunchPlan {
  const network = options.network === true;
  const { rlimits, shown, treeLimits } = limitsFor(options.limits, true);
  const args: string[] = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--clearenv'];
  if (network) args.push('--share-net');
  // A zygote gives each guest it forks a PID and mount namespace of its own (then the guest drops every
  // capability before user code runs); that needs CAP_SYS_ADMIN inside the sandbox's user namespace.
  if (request.role === 'zygote') args.push('--cap-add', 'CAP_SYS_ADMIN');
  args.push('--ro-bind', '/usr', '/usr');
  for (const [link, target] of [['/bin', 'usr/bin'], ['/sbin', 'usr/sbin'], ['/lib', 'usr/lib'], ['/lib64', 'usr/lib64'], ['/lib32', 'usr/lib32']]) {
    if (existsSync(link)) args.push('--symlink', target, link);
  }
  const etc = ['/etc/alternatives', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/localtime', '/etc/mime.types', '/etc/matplotlibrc', '/etc/python3'];
  if (network) etc.push('/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf', '/etc/ssl', '/etc/ca-certificates', '/etc/pki');
  for (const p of etc) args.push('--ro-bind-try', p, p);
  // The interpreter and its libraries, read-only, at their own paths (pyenv, venvs, conda live outside /usr).
  const roots = new Set<string>();
  for (const p of [path.dirname(path.dirname(python.executable)), python.prefix, python.basePrefix, ...python.path]) {
    if (!p || isUnder(p, '/usr') || !existsSync(p)) continue;
    roots.add(p);
  }
  for (const p of [...roots].sort()) {
    if ([...roots].some((q) => q !== p && isUnder(p, q))) continue;
    args.push('--ro-bind', p, p);
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--size', String(rlimits.fsize), '--tmpfs', '/tmp');
  args.push('--ro-bind', guestDir, GUEST_MOUNT);
  args.push('--size', String(rlimits.fsize), '--tmpfs', SANDBOX_WORKDIR);
  if (request.role === 'zygote' && request.socketDir) args.push('--ro-bind', request.socketDir, HOST_MOUNT);
  const ws = options.mountWorkspace ?? 'none';
  if (ws !== 'none' && options.workspace && existsSync(options.workspace) && statSync(options.workspace).isDirectory()) {
    args.push(ws === 'readwrite' ? '--bind' : '--ro-bind', options.workspace, options.workspace);
  }
  args.push('--chdir', SANDBOX_WORKDIR);
  for (const [k, v] of Object.entries(minimalEnv(SANDBOX_WORKDIR))) args.push('--setenv', k, v);
  args.push('--', python.executable, ...guestArgs(GUEST_MOUNT));
  return {
    command: options.bwrapPath ?? 'bwrap',
    args,
    env: {},
    cwd: request.workdir,
    info: { kind: 'bubblewrap', network, limits: shown },
    pidNamespace: true,
    rlimits,
    treeLimits,
    workdir: SANDBOX_WORKDIR,
    socketPath: request.socketDir ? `${HOST_MOUNT}/${SOCKET_NAME}` : undefined,
  };
}

/** The name of the socket a zygote's guests connect back to, in the socket folder. */
export const SOCKET_NAME = 'guest.sock';
