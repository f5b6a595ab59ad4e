/**
 * Why bubblewrap cannot make its sandbox on this machine, and the exact fix: read when the launch probe
 * of sandbox.ts fails. It looks where the restrictions live: the sysctls under /proc/sys (AppArmor's
 * `kernel.apparmor_restrict_unprivileged_userns` on Ubuntu 23.10 and later, Debian's
 * `kernel.unprivileged_userns_clone`, `user.max_user_namespaces`), the marks of a container (/.dockerenv,
 * /run/.containerenv, /proc/1/cgroup, the `container` variable), PATH, and bwrap's own error text.
 *
 * Each diagnosis has a full form (what was found, every fix: the strict setting's error and the log) and a
 * brief one (what is missing, and the one command that fixes it on this system: `auto`'s two-line warning).
 * The command that installs bubblewrap comes from /etc/os-release (`installCommand`).
 *
 * Every place it looks is injectable (`UsernsHost`), so tests lay out a fake /proc in a folder. Files are
 * read bounded, and only regular ones (opened without blocking): a FIFO there does not hang the extension host.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { onPath } from './hostFiles';

type UsernsCause = 'bwrap-missing' | 'bwrap-old' | 'wsl1' | 'container' | 'apparmor' | 'userns-clone' | 'max-user-namespaces' | 'unknown';

/** Where the diagnosis looks (defaults: this machine). */
export interface UsernsHost {
  /** Where /proc is: its `sys/...` files and `1/cgroup`, `self/mountinfo`. */
  procRoot?: string;
  /** The root the container marks (/.dockerenv, /run/.containerenv) are looked for under. */
  rootDir?: string;
  /** PATH and `container`. */
  env?: Record<string, string | undefined>;
  /** The user id (0: commands without sudo; default: this process's). */
  uid?: number;
}

export interface UsernsDiagnosis {
  cause: UsernsCause;
  /** What was found, as a clause ("AppArmor restricts …"). */
  detected: string;
  /** What to do: exact commands, as sentences. */
  fix: string;
  /** What is missing, in a short clause: no PATH, no bwrap error text (the first screen; `detected` has the detail). */
  brief: string;
  /** The one thing to do, ending in its command, without a final period (the first screen; `fix` has every choice). */
  next: string;
}

/** Where bubblewrap does not exist (macOS, Windows). */
export const NOT_LINUX: UsernsDiagnosis = {
  cause: 'unknown',
  detected: 'bubblewrap is Linux-only',
  fix: 'To isolate it here, run code on a remote Jupyter runtime or in a provider\'s hosted sandbox (codeact.mode: "hosted").',
  brief: 'bubblewrap is Linux-only',
  next: 'To isolate it here, run code on a remote Jupyter runtime or in a provider\'s hosted sandbox (codeact.mode: "hosted")',
};

/** The reason the launch probe gives when the program is not there (spawn's ENOENT). */
export const BWRAP_NOT_FOUND = 'bubblewrap (bwrap) is not installed';

const SYSCTL_FILE = 'sys/kernel/apparmor_restrict_unprivileged_userns';
const CLONE_FILE = 'sys/kernel/unprivileged_userns_clone';
const MAX_FILE = 'sys/user/max_user_namespaces';
const PERSIST = '/etc/sysctl.d/60-codeact-userns.conf';

/** The profile that lets bwrap (and only bwrap) create user namespaces under Ubuntu's AppArmor restriction. */
export function apparmorProfile(bwrap: string): string {
  return [
    'abi <abi/4.0>,',
    'include <tunables/global>',
    '',
    `profile bwrap ${bwrap} flags=(unconfined) {`,
    '  userns,',
    '',
    '  include if exists <local/bwrap>',
    '}',
    '',
  ].join('\n');
}

const INSTALL_BWRAP =
  'Install bubblewrap to isolate it (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora/RHEL: sudo dnf install bubblewrap; ' +
  'openSUSE: sudo zypper install bubblewrap; Arch: sudo pacman -S bubblewrap; Alpine: sudo apk add bubblewrap; ' +
  'in a dev container, install it in the image, e.g. RUN apt-get update && apt-get install -y bubblewrap).';

/** The package manager's command by os-release ID (or ID_LIKE), without sudo. */
const INSTALLERS: Readonly<Record<string, string>> = {
  debian: 'apt install bubblewrap',
  ubuntu: 'apt install bubblewrap',
  fedora: 'dnf install bubblewrap',
  rhel: 'dnf install bubblewrap',
  centos: 'dnf install bubblewrap',
  suse: 'zypper install bubblewrap',
  opensuse: 'zypper install bubblewrap',
  arch: 'pacman -S bubblewrap',
  alpine: 'apk add bubblewrap',
  gentoo: 'emerge sys-apps/bubblewrap',
  void: 'xbps-install bubblewrap',
};

/** Where no os-release names a known system. */
const INSTALL_GENERIC = 'To isolate it, install the "bubblewrap" package with your system\'s package manager';

/**
 * The command that installs bubblewrap on this system, from /etc/os-release (or /usr/lib/os-release): its ID,
 * then each of ID_LIKE ("sudo apt install bubblewrap" on Debian, Ubuntu and their derivatives). Undefined
 * where none is known. Without sudo for root.
 */
export function installCommand(host: UsernsHost = {}): string | undefined {
  const root = host.rootDir ?? '/';
  const text = readSmall(path.join(root, 'etc/os-release'), 16 * 1024) ?? readSmall(path.join(root, 'usr/lib/os-release'), 16 * 1024) ?? '';
  const field = (name: string) => {
    const m = new RegExp(`^${name}=(.*)$`, 'm').exec(text);
    return (m?.[1] ?? '')
      .trim()
      .replace(/^(["'])(.*)\1$/, '$2')
      .toLowerCase();
  };
  const ids = [field('ID'), ...field('ID_LIKE').split(/\s+/)].filter(Boolean);
  const found = ids.map((id) => (Object.prototype.hasOwnProperty.call(INSTALLERS, id) ? INSTALLERS[id] : undefined)).find((c) => c !== undefined);
  if (!found) return undefined;
  return (host.uid ?? process.getuid?.()) === 0 ? found : `sudo ${found}`;
}

/** The flags a dev container needs for bubblewrap, each for the layer of Docker that refuses it. */
export const DEVCONTAINER_RUN_ARGS = [
  '--security-opt',
  'seccomp=unconfined',
  '--security-opt',
  'apparmor=unconfined',
  '--security-opt',
  'systempaths=unconfined',
];

/** The first `max` bytes of a regular file (procfs files are), or undefined: absent, unreadable, anything else. */
function readSmall(file: string, max = 64 * 1024): string | undefined {
  let fd: number;
  try {
    if (!statSync(file).isFile()) return undefined; // not even opened: opening some devices does something
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const buf = Buffer.alloc(max);
    let got = 0;
    for (let n = 1; n > 0 && got < max; got += n) n = readSync(fd, buf, got, max - got, null);
    return buf.subarray(0, got).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function sysctl(procRoot: string, rel: string): number | undefined {
  const text = readSmall(path.join(procRoot, rel), 64)?.trim();
  return text && /^-?\d+$/.test(text) ? Number(text) : undefined;
}

/** The container this runs in, named by the mark that shows it, or undefined. */
function detectContainer(host: UsernsHost = {}): string | undefined {
  const root = host.rootDir ?? '/';
  const env = host.env ?? process.env;
  if (existsSync(path.join(root, '.dockerenv'))) return 'a Docker container (/.dockerenv)';
  if (existsSync(path.join(root, 'run/.containerenv'))) return 'a Podman container (/run/.containerenv)';
  const kind = env.container?.slice(0, 40);
  if (kind) return `a container (container=${kind})`;
  const cgroup = readSmall(path.join(host.procRoot ?? '/proc', '1/cgroup')) ?? '';
  const m = /\b(docker|kubepods|containerd|libpod|lxc|buildkit)\b/.exec(cgroup);
  if (m) return `a container (/proc/1/cgroup names ${m[1]})`;
  return undefined;
}

/** Mount points over parts of /proc (a container runtime masks /proc/keys, /proc/kcore, …), from mountinfo. */
function maskedProcPaths(procRoot = '/proc'): string[] {
  const info = readSmall(path.join(procRoot, 'self/mountinfo'), 1024 * 1024) ?? '';
  const out: string[] = [];
  for (const line of info.split('\n').slice(0, 10_000)) {
    const point = line.split(' ')[4];
    if (point?.startsWith('/proc/') && !point.startsWith('/proc/sys/fs/binfmt_misc') && out.length < 8) out.push(point);
  }
  return out;
}

const NAMESPACE_REFUSED = /No permissions to creat|Creating new namespace failed: Operation not permitted|unshare failed: Operation not permitted/;
const PROC_REFUSED = /Can't mount proc/;
const MOUNT_REFUSED = /Failed to make \/ slave|Failed to mount|Can't mount|mount.*Permission denied/;

function containerDiagnosis(where: string, bwrapError: string): UsernsDiagnosis {
  const layer = PROC_REFUSED.test(bwrapError)
    ? 'the container masks parts of /proc, so the kernel refuses the sandbox a /proc of its own'
    : NAMESPACE_REFUSED.test(bwrapError)
      ? "the container's seccomp profile refuses new namespaces"
      : MOUNT_REFUSED.test(bwrapError)
        ? "the container's AppArmor profile refuses the sandbox's mounts"
        : 'the container lacks the privilege to create namespaces';
  return {
    cause: 'container',
    detected: `CodeAct runs in ${where} that does not let bubblewrap create its namespaces: ${layer} (${bwrapError})`,
    fix:
      `Start the container with the privileges bubblewrap needs: in .devcontainer/devcontainer.json, "runArgs": ${JSON.stringify(DEVCONTAINER_RUN_ARGS)} ` +
      '(docker run takes the same flags: seccomp=unconfined lets it create namespaces, apparmor=unconfined lets it mount, systempaths=unconfined unmasks /proc so it can mount a new one), ' +
      'or "--privileged" (broader: every capability and the host\'s devices); then rebuild the container (Dev Containers: Rebuild Container).',
    brief: `CodeAct runs in ${where.replace(/ \([^)]*\)$/, '')} that does not let bubblewrap create its namespaces`,
    next: `To isolate it, add to .devcontainer/devcontainer.json and rebuild the container: "runArgs": ${JSON.stringify(DEVCONTAINER_RUN_ARGS)}`,
  };
}

/** The one command that writes and loads the AppArmor profile letting `real` (bwrap) alone create user namespaces. */
function apparmorCommand(real: string): string {
  return `printf '${apparmorProfile(real).replace(/\n/g, '\\n')}' | sudo tee /etc/apparmor.d/bwrap && sudo apparmor_parser -r /etc/apparmor.d/bwrap`;
}

function apparmorDiagnosis(real: string, error: string): UsernsDiagnosis {
  return {
    cause: 'apparmor',
    detected:
      'AppArmor restricts unprivileged user namespaces on this machine (kernel.apparmor_restrict_unprivileged_userns = 1, ' +
      `the default on Ubuntu 23.10 and later), so bubblewrap cannot set up its sandbox (${error})`,
    fix:
      `Let bwrap alone create user namespaces: write the AppArmor profile /etc/apparmor.d/bwrap and load it, in one command: ` +
      `${apparmorCommand(real)} ` +
      '(any program run through bwrap can then create user namespaces). ' +
      "Or lift the restriction for every program (weaker: it gives the kernel's user-namespace attack surface back to all of them): " +
      `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, and to keep it after a reboot: ` +
      `echo 'kernel.apparmor_restrict_unprivileged_userns = 0' | sudo tee ${PERSIST}.`,
    brief: 'AppArmor restricts unprivileged user namespaces on this machine (kernel.apparmor_restrict_unprivileged_userns = 1)',
    next: `To isolate it, let bwrap alone create user namespaces: ${apparmorCommand(real)}`,
  };
}

/**
 * Why bwrap failed, from its error (`bwrapError`: the probe's reason, with bwrap's stderr) and what the
 * host shows. `bwrapPath` is the program the launch runs ("bwrap", looked up on PATH, or a path).
 */
export function diagnoseUserns(bwrapError: string, bwrapPath = 'bwrap', host: UsernsHost = {}): UsernsDiagnosis {
  const env = host.env ?? process.env;
  const procRoot = host.procRoot ?? '/proc';
  const error = bwrapError
    .replace(/^bwrap failed: /, '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 500);
  const found = bwrapPath.includes('/') ? (existsSync(bwrapPath) ? bwrapPath : undefined) : onPath(bwrapPath, '/', env.PATH ?? '');
  if (!found || bwrapError.startsWith(BWRAP_NOT_FOUND)) {
    const where = found
      ? `${found} could not be started`
      : bwrapPath.includes('/')
        ? `there is no ${bwrapPath}`
        : `no "${bwrapPath}" on PATH (${(env.PATH ?? '').slice(0, 300)})`;
    const command = installCommand(host);
    return {
      cause: 'bwrap-missing',
      detected: `bubblewrap (bwrap) is not installed: ${where}`,
      fix: INSTALL_BWRAP,
      brief: 'bubblewrap (bwrap) is not installed',
      next: command ? `To isolate it: ${command}` : INSTALL_GENERIC,
    };
  }
  const option = /Unknown option (\S+)/.exec(error);
  if (option) {
    return {
      cause: 'bwrap-old',
      detected: `this bubblewrap (${found}) is too old: it does not know ${option[1]}`,
      fix: 'Install bubblewrap 0.8 or later (Debian 12, Ubuntu 24.04, Fedora 38 and later ship it).',
      brief: 'this bubblewrap is too old (0.8 or later is needed)',
      next: `To isolate it, install bubblewrap 0.8 or later (Debian 12, Ubuntu 24.04, Fedora 38 and later ship it)${installCommand(host) ? `: ${installCommand(host)}` : ''}`,
    };
  }
  const masked = PROC_REFUSED.test(error) ? maskedProcPaths(procRoot) : [];
  // WSL 1 translates Linux calls and has no namespaces at all (its release names "Microsoft"; WSL 2's "microsoft-standard").
  if (/Microsoft/.test(readSmall(path.join(procRoot, 'sys/kernel/osrelease'), 256) ?? '')) {
    return {
      cause: 'wsl1',
      detected: `this is WSL 1, which has no Linux namespaces (${error})`,
      fix: 'Convert the distribution to WSL 2, in Windows: wsl --set-version <distribution> 2 (wsl -l -v lists them), then reopen the folder in WSL.',
      brief: 'this is WSL 1, which has no Linux namespaces',
      next: 'To isolate it, convert the distribution to WSL 2 (wsl -l -v lists them), in Windows: wsl --set-version <distribution> 2',
    };
  }
  const container =
    detectContainer({ ...host, env }) ?? (masked.length ? `a container or mount namespace that masks parts of /proc (${masked.join(', ')})` : undefined);
  const restrict = sysctl(procRoot, SYSCTL_FILE);
  const clone = sysctl(procRoot, CLONE_FILE);
  const max = sysctl(procRoot, MAX_FILE);
  const inContainerTerms = NAMESPACE_REFUSED.test(error) || PROC_REFUSED.test(error) || MOUNT_REFUSED.test(error);
  const real = found.startsWith('/') ? found : path.resolve(found);
  if (container && inContainerTerms) {
    const d = containerDiagnosis(container, error);
    if (restrict !== 1) return d;
    return {
      ...d,
      fix: `${d.fix} The host also restricts user namespaces with AppArmor (kernel.apparmor_restrict_unprivileged_userns = 1); on the host: ${apparmorDiagnosis(real, error).fix}`,
    };
  }
  if (restrict === 1) return apparmorDiagnosis(real, error);
  if (clone === 0) {
    return {
      cause: 'userns-clone',
      detected: `this kernel does not let unprivileged users create user namespaces (kernel.unprivileged_userns_clone = 0, Debian's switch on older kernels) (${error})`,
      fix:
        'Allow them: sudo sysctl -w kernel.unprivileged_userns_clone=1, and to keep it after a reboot: ' +
        `echo 'kernel.unprivileged_userns_clone = 1' | sudo tee ${PERSIST} (every program can then create user namespaces).`,
      brief: 'this kernel does not let unprivileged users create user namespaces (kernel.unprivileged_userns_clone = 0)',
      next: 'To isolate it, allow them: sudo sysctl -w kernel.unprivileged_userns_clone=1',
    };
  }
  if (max === 0 || /ENOSPC/.test(error)) {
    return {
      cause: 'max-user-namespaces',
      detected:
        max === 0
          ? `user namespaces are switched off here (user.max_user_namespaces = 0) (${error})`
          : `no more user namespaces may be created here (the nesting depth or user.max_user_namespaces = ${max ?? 'unknown'} is reached) (${error})`,
      fix:
        'Allow them: sudo sysctl -w user.max_user_namespaces=15000, and to keep it after a reboot: ' +
        `echo 'user.max_user_namespaces = 15000' | sudo tee ${PERSIST}` +
        (container ? " (on the container's host, or in the user namespace the container runs in)." : '.'),
      brief:
        max === 0
          ? 'user namespaces are switched off here (user.max_user_namespaces = 0)'
          : `no more user namespaces may be created here (user.max_user_namespaces = ${max ?? 'unknown'})`,
      next: `To isolate it, allow them${container ? " on the container's host" : ''}: sudo sysctl -w user.max_user_namespaces=15000`,
    };
  }
  if (container) return containerDiagnosis(container, error);
  return {
    cause: 'unknown',
    detected: `bubblewrap failed: ${error}`,
    fix: `Run it yourself to see more: ${real} --unshare-all --unshare-user --ro-bind / / /usr/bin/true.`,
    brief: `bubblewrap failed (${error.length > 160 ? `${error.slice(0, 159)}…` : error})`,
    next: `To see why, run: ${real} --unshare-all --unshare-user --ro-bind / / /usr/bin/true`,
  };
}

/**
 * The one-time warning of `auto` when it falls back to the unsandboxed process, in two lines: what is
 * missing and what that lets the code do; the one command that fixes it. The same text in the panel's
 * notification and on the CLI's stderr; {@link fallbackDetail} is the full diagnosis, for the log.
 */
export function fallbackWarning(d: UsernsDiagnosis): string {
  return (
    `Code runs without a sandbox: ${d.brief}. It can read your files, use the network, and read this process's environment through /proc, API keys included.\n` +
    `${d.next} (or set codeact.sandbox.kind to "none" to silence this warning)`
  );
}

/** Everything the diagnosis found and every fix, for the log (the CLI's --verbose, the CodeAct output channel). */
export function fallbackDetail(d: UsernsDiagnosis): string {
  return `Why code runs without a sandbox: ${d.detected}. ${d.fix}`;
}

/** The error of `bubblewrap` (the strict setting) when bubblewrap cannot run. */
export function unavailableMessage(d: UsernsDiagnosis): string {
  return `codeact.sandbox.kind is "bubblewrap" but bubblewrap cannot run here: ${d.detected}. ${d.fix} Or set codeact.sandbox.kind to "auto" to run code without a sandbox (with a warning).`;
}

const shown = new Set<string>();

/**
 * True the first time this process is to show `warning` (the fallback warning: once per extension
 * session, or CLI run, however many runtimes are built), false after. Bounded: a few distinct texts.
 */
export function firstTimeShown(warning: string): boolean {
  if (shown.has(warning)) return false;
  if (shown.size >= 64) shown.clear();
  shown.add(warning);
  return true;
}
