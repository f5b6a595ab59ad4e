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

interface CgroupLimits {
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
  /** The controllers it has: `pids`, and `memory` where a memory cgroup could be made. */
  controllers: string[];
  /** Host PIDs of the processes in it. */
  memberPids(): number[];
  /** A cgroup inside this one (cgroup v1), for one of the processes in it; undefined when none can be made. */
  child(name: string, limits: CgroupLimits): RunCgroup | undefined;
  /** Moves a process (by host PID) into this cgroup. Throws when it cannot. */
  adopt(pid: number): void;
  /** Kills what is left inside, then removes it (its child cgroups first); settles when it is gone. */
  remove(): Promise<void>;
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
      const self = readFileSync('/proc/self/cgroup', 'utf8')
        .split('\n')
        .find((l) => l.startsWith('0::'));
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

/** True when runs get a memory cgroup (tmpfs pages then count against the memory limit). */
export function memoryCgroupAvailable(): boolean {
  if (!cgroupsAvailable() || !layout) return false;
  if (layout.kind === 'v1') return !!layout.memory;
  try {
    return /\bmemory\b/.test(readFileSync(path.join(layout.parent!, 'cgroup.subtree_control'), 'utf8'));
  } catch {
    return false;
  }
}

/** Removals in progress (a cgroup can only go once its killed tasks have left it). */
const removals = new Set<Promise<void>>();

/** Removes an empty cgroup folder, retrying while its killed tasks leave (EBUSY), for up to 2 s. */
function rmdirLater(dir: string): Promise<void> {
  const job = new Promise<void>((resolve) => {
    const attempt = (n: number) => {
      try {
        rmdirSync(dir);
        resolve();
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || n >= 100) return resolve();
        // Not unref'd: dispose waits for this, and an unref'd timer would let the process end mid-dispose.
        setTimeout(() => attempt(n + 1), 20);
      }
    };
    attempt(0);
  });
  removals.add(job);
  void job.then(() => removals.delete(job));
  return job;
}

/** Waits until the cgroups being removed are gone (dispose calls it, so that none is left behind). */
export async function settleCgroups(): Promise<void> {
  while (removals.size) await Promise.all([...removals]);
}

/** Creates the run's cgroups, or returns undefined when none can be made here. */
export function createRunCgroup(name: string, limits: CgroupLimits): RunCgroup | undefined {
  if (!cgroupsAvailable() || !layout) return undefined;
  const l = layout;
  const bases = l.kind === 'v1' ? { pids: l.pids, memory: l.memory } : undefined;
  return makeCgroup(l, bases, l.kind === 'v1' ? name : `codeact-${name}`, limits);
}

interface Dirs {
  pids?: string;
  memory?: string;
  /** v2: the one folder. */
  both?: string;
}

function makeCgroup(l: Layout, bases: { pids?: string; memory?: string } | undefined, name: string, limits: CgroupLimits): RunCgroup | undefined {
  const dirs: Dirs = {};
  const made: string[] = [];
  try {
    if (l.kind === 'v1') {
      if (bases?.pids) {
        const d = path.join(bases.pids, name);
        mkdirSync(d);
        made.push((dirs.pids = d));
        if (limits.pidsMax) writeFileSync(path.join(d, 'pids.max'), String(limits.pidsMax));
      }
      if (bases?.memory && limits.memoryBytes) {
        const d = path.join(bases.memory, name);
        mkdirSync(d);
        made.push((dirs.memory = d));
        writeFileSync(path.join(d, 'memory.limit_in_bytes'), String(limits.memoryBytes));
        try {
          // No swap beyond the limit, where swap is accounted.
          writeFileSync(path.join(d, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
        } catch {}
      }
    } else {
      const d = path.join(l.parent!, name);
      mkdirSync(d);
      made.push((dirs.both = d));
      if (limits.pidsMax) writeFileSync(path.join(d, 'pids.max'), String(limits.pidsMax));
      if (limits.memoryBytes) {
        try {
          writeFileSync(path.join(d, 'memory.max'), String(limits.memoryBytes));
          writeFileSync(path.join(d, 'memory.swap.max'), '0');
          dirs.memory = d;
        } catch {}
      }
      dirs.pids = d;
    }
  } catch {
    for (const d of made.reverse()) void rmdirLater(d);
    return undefined;
  }
  const read = (file: string): string => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  const procsFiles = made.map((d) => path.join(d, 'cgroup.procs'));
  let final: { memory: boolean; pids: boolean } | undefined;
  let removing: Promise<void> | undefined;
  const children: RunCgroup[] = [];
  const cgroup: RunCgroup = {
    procsFiles,
    controllers: l.kind === 'v1' ? [...(dirs.pids ? ['pids'] : []), ...(dirs.memory ? ['memory'] : [])] : ['pids', ...(dirs.memory ? ['memory'] : [])],
    memoryExceeded: () => {
      if (final) return final.memory;
      if (!dirs.memory) return false;
      if (l.kind === 'v1') {
        // oom_kill counts the kills (kernel 4.13+); failcnt counts every time the limit was reached.
        const oom = /\boom_kill (\d+)/.exec(read(path.join(dirs.memory, 'memory.oom_control')));
        return oom ? Number(oom[1]) > 0 : Number(read(path.join(dirs.memory, 'memory.failcnt')) || 0) > 0;
      }
      return /\boom_kill [1-9]/.test(read(path.join(dirs.memory, 'memory.events')));
    },
    pidsExceeded: () => (final ? final.pids : !!dirs.pids && /\bmax [1-9]/.test(read(path.join(dirs.pids, 'pids.events')))),
    memberPids: () => {
      const out = new Set<number>();
      for (const f of procsFiles) for (const p of read(f).split('\n')) if (p) out.add(Number(p));
      return [...out];
    },
    child: (childName, childLimits) => {
      // cgroup v2 allows no processes in a cgroup whose children have controllers: children are v1 only.
      if (l.kind !== 'v1') return undefined;
      const child = makeCgroup(l, { pids: dirs.pids, memory: dirs.memory }, childName, childLimits);
      if (child) children.push(child);
      return child;
    },
    adopt: (pid) => {
      for (const f of procsFiles) writeFileSync(f, String(pid));
    },
    remove: () => {
      if (removing) return removing;
      // What the limits recorded stays answerable after the cgroup is gone (a session's death is
      // handled before its last result is written).
      final = { memory: cgroup.memoryExceeded(), pids: cgroup.pidsExceeded() };
      removing = (async () => {
        // A cgroup with child cgroups cannot be removed: they go first.
        await Promise.all(children.map((c) => c.remove()));
        await Promise.all(
          made.map((d) => {
            // Anything still inside (it should all be dead) is killed before the cgroup goes.
            for (const pid of read(path.join(d, 'cgroup.procs')).split('\n').filter(Boolean)) {
              try {
                process.kill(Number(pid), 'SIGKILL');
              } catch {}
            }
            return rmdirLater(d);
          }),
        );
      })();
      return removing;
    },
  };
  return cgroup;
}

/** Wraps a command so that it joins the given cgroups before it execs. */
export function wrapJoin(command: string, args: string[], procsFiles: string[]): { command: string; args: string[] } {
  if (!procsFiles.length) return { command, args };
  const script = 'for f in $CODEACT_CGROUPS; do echo $$ > "$f" || exit 97; done; unset CODEACT_CGROUPS; exec "$@"';
  return { command: '/bin/sh', args: ['-c', script, 'codeact-guest', command, ...args] };
}
