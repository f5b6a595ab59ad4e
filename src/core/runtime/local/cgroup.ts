/**
 * Whole-tree limits through cgroups, where this process may create them (root, or a delegated
 * cgroup v2 subtree). rlimits are per process: RLIMIT_AS does not cap four forked children, and
 * RLIMIT_NPROC is ignored for root. A pids cgroup and a memory cgroup hold the whole tree.
 *
 * The guest joins its cgroups before it execs (a tiny `sh` wrapper), so nothing it forks escapes.
 * When no cgroup can be created, runs go on with rlimits alone; `available()` says which.
 */
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

export interface CgroupLimits {
  pidsMax?: number;
  memoryBytes?: number;
}

export interface RunCgroup {
  /** `cgroup.procs` files the guest writes its pid into before exec. */
  procsFiles: string[];
  /** True when the memory controller recorded an out-of-memory event. */
  memoryExceeded(): boolean;
  /** True when the pids controller refused a fork. */
  pidsExceeded(): boolean;
  remove(): void;
}

interface Layout {
  kind: 'v1' | 'v2';
  pids?: string;
  memory?: string;
  /** v2: one parent for both controllers. */
  parent?: string;
}

let layout: Layout | null | undefined;

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function detect(): Layout | null {
  if (process.platform !== 'linux') return null;
  const root = '/sys/fs/cgroup';
  try {
    // cgroup v1 (separate hierarchies per controller).
    const v1pids = path.join(root, 'pids');
    const v1mem = path.join(root, 'memory');
    if (existsSync(path.join(v1pids, 'cgroup.procs')) && writable(v1pids)) {
      const base: Layout = { kind: 'v1', pids: ensureDir(path.join(v1pids, 'codeact')) };
      if (existsSync(path.join(v1mem, 'cgroup.procs')) && writable(v1mem)) base.memory = ensureDir(path.join(v1mem, 'codeact'));
      return base;
    }
    // cgroup v2: our own cgroup's parent must be writable and delegate pids/memory.
    if (existsSync(path.join(root, 'cgroup.controllers'))) {
      const self = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'));
      if (!self) return null;
      const mine = path.join(root, self.slice(3));
      const parent = path.dirname(mine);
      const controllers = readFileSync(path.join(parent, 'cgroup.subtree_control'), 'utf8');
      if (writable(parent) && /\bpids\b/.test(controllers)) return { kind: 'v2', parent };
    }
  } catch {
    return null;
  }
  return null;
}

function ensureDir(dir: string): string {
  if (!existsSync(dir)) mkdirSync(dir);
  return dir;
}

export function cgroupsAvailable(): boolean {
  if (layout === undefined) layout = detect();
  return layout !== null;
}

function rmdirLater(dir: string, attempt = 0): void {
  try {
    rmdirSync(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // Killed tasks take a moment to leave (EBUSY); try again shortly, off the hot path.
    if (code !== 'ENOENT' && attempt < 100) setTimeout(() => rmdirLater(dir, attempt + 1), 20).unref();
  }
}

/** Creates the run's cgroups, or returns undefined when none can be made here. */
export function createRunCgroup(name: string, limits: CgroupLimits): RunCgroup | undefined {
  if (!cgroupsAvailable() || !layout) return undefined;
  const l = layout;
  const dirs: string[] = [];
  try {
    if (l.kind === 'v1') {
      if (l.pids) {
        const d = path.join(l.pids, name);
        mkdirSync(d);
        dirs.push(d);
        if (limits.pidsMax) writeFileSync(path.join(d, 'pids.max'), String(limits.pidsMax));
      }
      if (l.memory && limits.memoryBytes) {
        const d = path.join(l.memory, name);
        mkdirSync(d);
        dirs.push(d);
        writeFileSync(path.join(d, 'memory.limit_in_bytes'), String(limits.memoryBytes));
        try {
          writeFileSync(path.join(d, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
        } catch {}
      }
    } else {
      const d = path.join(l.parent!, `codeact-${name}`);
      mkdirSync(d);
      dirs.push(d);
      if (limits.pidsMax) writeFileSync(path.join(d, 'pids.max'), String(limits.pidsMax));
      if (limits.memoryBytes) {
        try {
          writeFileSync(path.join(d, 'memory.max'), String(limits.memoryBytes));
          writeFileSync(path.join(d, 'memory.swap.max'), '0');
        } catch {}
      }
    }
  } catch {
    for (const d of dirs.reverse()) rmdirLater(d);
    return undefined;
  }
  const read = (file: string): string => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  return {
    procsFiles: dirs.map((d) => path.join(d, 'cgroup.procs')),
    memoryExceeded: () => {
      if (l.kind === 'v1') {
        const mem = dirs.find((d) => d.includes('/memory/'));
        return !!mem && Number(read(path.join(mem, 'memory.failcnt')) || 0) > 0;
      }
      return /\boom_kill [1-9]/.test(read(path.join(dirs[0], 'memory.events')));
    },
    pidsExceeded: () => {
      const d = l.kind === 'v1' ? dirs.find((x) => x.includes('/pids/')) : dirs[0];
      return !!d && /\bmax [1-9]/.test(read(path.join(d, 'pids.events')));
    },
    remove: () => {
      for (const d of dirs) {
        // Anything still inside (it should all be dead) is killed before the cgroup goes.
        for (const pid of read(path.join(d, 'cgroup.procs')).split('\n').filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {}
        }
        rmdirLater(d);
      }
    },
  };
}

/** Wraps a command so that it joins the given cgroups before it execs. */
export function wrapJoin(command: string, args: string[], procsFiles: string[]): { command: string; args: string[] } {
  if (!procsFiles.length) return { command, args };
  const script = 'for f in $CODEACT_CGROUPS; do echo $$ > "$f" || exit 97; done; unset CODEACT_CGROUPS; exec "$@"';
  return { command: '/bin/sh', args: ['-c', script, 'codeact-guest', command, ...args] };
}
