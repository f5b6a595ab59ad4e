/**
 * Process-tree teardown for the hardened (non-namespaced) guest on Linux.
 *
 * With bubblewrap the guest lives in its own PID namespace and the kernel kills every process in it
 * when the namespace's init exits; nothing here is needed. Without it, the guest makes itself a child
 * subreaper, so orphans (after `setsid()` or a double fork) are re-parented to it and stay findable
 * through /proc. This module freezes and kills that whole tree, and as a last net kills any process
 * that still carries the run's marker in its environment.
 *
 * Other platforms: only the process group is killed; a process that calls setsid() there can outlive
 * the run (documented in README).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

const isLinux = process.platform === 'linux';

function parentMap(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return children;
  }
  for (const name of entries) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const pid = Number(name);
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(fields[1]);
    let list = children.get(ppid);
    if (!list) children.set(ppid, (list = []));
    list.push(pid);
  }
  return children;
}

export function descendantsOf(root: number): number[] {
  if (!isLinux) return [];
  const children = parentMap();
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    for (const c of children.get(stack.pop()!) ?? []) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {}
}

/** Freezes the tree under `root` (repeatedly, so forks in flight are caught), then kills it and its group. */
export function killTree(root: number, includeRoot = true): number {
  const frozen = new Set<number>();
  if (isLinux) {
    if (includeRoot) signal(root, 'SIGSTOP');
    for (let round = 0; round < 50; round++) {
      const fresh = descendantsOf(root).filter((p) => !frozen.has(p));
      if (!fresh.length) break;
      for (const pid of fresh) {
        frozen.add(pid);
        signal(pid, 'SIGSTOP');
      }
    }
  }
  signal(-root, 'SIGKILL');
  if (includeRoot) signal(root, 'SIGKILL');
  for (const pid of frozen) signal(pid, 'SIGKILL');
  return frozen.size;
}

/** Kills every process whose environment holds `NAME=value`. Returns how many it found. */
export function killByMarker(name: string, value: string): number {
  if (!isLinux) return 0;
  const needle = Buffer.from(`${name}=${value}\0`);
  let found = 0;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const c = entry.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const env = readFileSync(`/proc/${pid}/environ`);
      if (env.indexOf(needle) >= 0) {
        found++;
        signal(pid, 'SIGKILL');
      }
    } catch {}
  }
  return found;
}

/** PIDs of live processes whose command line contains `needle` (for tests and the soak script). */
export function processesWithCmdline(needle: string): number[] {
  if (!isLinux) return [];
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'latin1');
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'Z' && cmd.includes(needle)) out.push(Number(entry));
    } catch {}
  }
  return out;
}

/**
 * The host PID of a process under `root` whose PID in its own namespace is `nsPid` (the Python guest
 * inside bubblewrap reports its namespace PID; signals from the host need the host's).
 */
export function hostPidOf(root: number, nsPid: number): number | undefined {
  if (!isLinux) return undefined;
  for (const pid of descendantsOf(root)) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'latin1');
      const line = status.split('\n').find((l) => l.startsWith('NSpid:'));
      const ids = line?.slice(6).trim().split(/\s+/).map(Number) ?? [];
      if (ids.length > 1 && ids[ids.length - 1] === nsPid) return pid;
    } catch {}
  }
  return undefined;
}

/** A process's PID in its own, innermost PID namespace, and its parent's host PID (from /proc), or undefined. */
function nsStatus(pid: number): { nsPid: number; ppid: number } | undefined {
  try {
    const lines = readFileSync(`/proc/${pid}/status`, 'latin1').split('\n');
    const ids = (
      lines
        .find((l) => l.startsWith('NSpid:'))
        ?.slice(6)
        .trim()
        .split(/\s+/) ?? []
    ).map(Number);
    const ppid = Number(
      lines
        .find((l) => l.startsWith('PPid:'))
        ?.slice(5)
        .trim(),
    );
    return ids.length ? { nsPid: ids[ids.length - 1], ppid } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The host PID of the process under `root` whose PID in its own, innermost namespace is `nsPid` and whose
 * parent's is `parentNsPid` (a fork of that parent), when exactly one is; else undefined. A guest names
 * processes in its own namespace: they are looked for only in its own tree, so a forged PID finds nothing,
 * and an ambiguous one is not guessed.
 */
export function nsChildIn(root: number, parentNsPid: number, nsPid: number): number | undefined {
  if (!isLinux || !Number.isSafeInteger(nsPid) || nsPid < 1 || nsPid === parentNsPid) return undefined;
  const found = descendantsOf(root).filter((pid) => {
    const me = nsStatus(pid);
    return me?.nsPid === nsPid && nsStatus(me.ppid)?.nsPid === parentNsPid;
  });
  return found.length === 1 ? found[0] : undefined;
}

/**
 * One pass over /proc without blocking: parent -> children of the first `max` processes, read in slices (a
 * machine with thousands of processes does not open thousands of files at once); `each` is called for every
 * process whose stat was read.
 */
export async function procChildren(max = Infinity, each?: (pid: number) => Promise<void>): Promise<Map<number, number[]>> {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return children;
  }
  const pids = entries
    .filter((e) => e.charCodeAt(0) >= 48 && e.charCodeAt(0) <= 57)
    .slice(0, max)
    .map(Number);
  for (let i = 0; i < pids.length; i += 64) {
    await Promise.all(
      pids.slice(i, i + 64).map(async (pid) => {
        try {
          const stat = await readFile(`/proc/${pid}/stat`, 'latin1');
          const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
          let list = children.get(ppid);
          if (!list) children.set(ppid, (list = []));
          list.push(pid);
          await each?.(pid);
        } catch {}
      }),
    );
  }
  return children;
}

/** One pass over /proc without blocking: parent -> children, and the processes whose environment holds `needle`. */
async function scanProc(needle: Buffer): Promise<{ children: Map<number, number[]>; marked: number[] }> {
  const marked: number[] = [];
  const children = await procChildren(Infinity, async (pid) => {
    if (pid !== process.pid && (await readFile(`/proc/${pid}/environ`)).indexOf(needle) >= 0) marked.push(pid);
  });
  return { children, marked };
}

/**
 * Kills every process whose environment holds `NAME=value`, and their descendants, however they got
 * away (a background child, `setsid`, a double fork): freezes them in rounds until no new one appears
 * (at most 20 rounds, so a fork bomb cannot keep it going), then kills them all. Reads /proc without
 * blocking the event loop. Resolves to their PIDs. A process that cleared its environment and left
 * the tree before the first round is not found. Linux only; elsewhere it finds nothing.
 */
export async function killMarked(name: string, value: string): Promise<number[]> {
  if (!isLinux) return [];
  const needle = Buffer.from(`${name}=${value}\0`);
  const frozen = new Set<number>();
  for (let round = 0; round < 20; round++) {
    const { children, marked } = await scanProc(needle);
    let added = 0;
    const stack: number[] = [];
    const stop = (pid: number) => {
      if (frozen.has(pid)) return;
      frozen.add(pid);
      signal(pid, 'SIGSTOP');
      stack.push(pid);
      added++;
    };
    marked.forEach(stop);
    // Their descendants too, in case one cleared its environment.
    stack.push(...frozen);
    while (stack.length) for (const child of children.get(stack.pop()!) ?? []) stop(child);
    if (!added) break;
  }
  for (const pid of frozen) signal(pid, 'SIGKILL');
  return [...frozen];
}

/** {@link killMarked} for `process.on('exit')`, where nothing asynchronous runs: one blocking pass, no rounds. */
export function killMarkedNow(name: string, value: string): void {
  if (!isLinux) return;
  const needle = Buffer.from(`${name}=${value}\0`);
  const tree = parentMap();
  const doomed = new Set<number>();
  for (const pids of tree.values()) {
    for (const pid of pids) {
      if (pid === process.pid) continue;
      try {
        if (readFileSync(`/proc/${pid}/environ`).indexOf(needle) >= 0) doomed.add(pid);
      } catch {}
    }
  }
  const stack = [...doomed];
  while (stack.length) {
    for (const child of tree.get(stack.pop()!) ?? []) {
      if (!doomed.has(child)) {
        doomed.add(child);
        stack.push(child);
      }
    }
  }
  for (const pid of doomed) signal(pid, 'SIGKILL');
}

/**
 * When `pid` started (field 22 of /proc/PID/stat: clock ticks since boot), as a string; undefined when it
 * is not running (or is a zombie) or off Linux. With the pid it names one process for good: a reused pid
 * has another start time.
 */
export function startTimeOf(pid: number): string | undefined {
  if (!isLinux) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

/** Whether `pid` is a live process (a zombie counts as gone). */
export function isAlive(pid: number): boolean {
  if (isLinux) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      return stat[stat.lastIndexOf(')') + 2] !== 'Z';
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once none of `pids` is alive, or after `maxMs`. SIGKILL is asynchronous: this makes "after close, nothing runs" hold. */
export async function waitGone(pids: number[], maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  let left = pids.filter(isAlive);
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
    left = left.filter(isAlive);
  }
}
