/**
 * The memory of each session's process tree, for `codeact sessions`: the resident set (VmRSS) of the guest and
 * every process under it, read from /proc. Pages a forked guest still shares with the zygote count in each
 * process that maps them (as `ps` shows), so the figure is an upper bound of what ending the session frees.
 *
 * One pass without blocking the event loop, bounded: at most {@link MAX_PROCS} entries of /proc, read in slices;
 * only processes under this host (the guests are its descendants) are read past their `stat`. Linux only;
 * elsewhere, and for a session whose tree is not found, no figure.
 */
import { readFile } from 'node:fs/promises';
import type { GuestRoot } from '../runtime/local/guestProcess';
import { procChildren } from '../util/processTree';

/** Entries of /proc read at most (a machine with more processes gets figures from the first ones). */
const MAX_PROCS = 65_536;
const SLICE = 64;

interface Proc {
  rssBytes: number;
  /** Its PIDs, the host's first, then in each nested PID namespace. */
  nsPids: number[];
}

/** `root` and every process under it (a visited set: a PID reused mid-scan cannot loop). */
function subtree(children: Map<number, number[]>, root: number): number[] {
  const out = [root];
  const seen = new Set(out);
  for (let i = 0; i < out.length; i++)
    for (const c of children.get(out[i]) ?? [])
      if (!seen.has(c)) {
        seen.add(c);
        out.push(c);
      }
  return out;
}

async function readProcs(pids: number[]): Promise<Map<number, Proc>> {
  const out = new Map<number, Proc>();
  for (let i = 0; i < pids.length; i += SLICE) {
    await Promise.all(
      pids.slice(i, i + SLICE).map(async (pid) => {
        try {
          const status = await readFile(`/proc/${pid}/status`, 'latin1');
          const rss = /^VmRSS:\s+(\d+) kB/m.exec(status);
          const ns = /^NSpid:\s+([\d\s]+)$/m.exec(status);
          out.set(pid, { rssBytes: rss ? Number(rss[1]) * 1024 : 0, nsPids: ns ? ns[1].trim().split(/\s+/).map(Number) : [pid] });
        } catch {
          // gone meanwhile
        }
      }),
    );
  }
  return out;
}

/** Bytes resident in each session's process tree, by session id; a session whose tree is not found has none. */
export async function treeMemory(roots: Map<string, GuestRoot | undefined>, top = process.pid): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (process.platform !== 'linux' || ![...roots.values()].some(Boolean)) return out;
  const children = await procChildren(MAX_PROCS);
  const ours = subtree(children, top);
  const procs = await readProcs(ours);
  for (const [id, root] of roots) {
    if (!root) continue;
    let pid: number | undefined;
    if ('pid' in root) pid = root.pid;
    else {
      // The guest is the process under `under` whose PID in the sandbox's namespace is nsPid.
      pid = subtree(children, root.under).find((p) => procs.get(p)?.nsPids[1] === root.nsPid);
    }
    if (pid === undefined || !procs.has(pid)) continue;
    out.set(
      id,
      subtree(children, pid).reduce((sum, p) => sum + (procs.get(p)?.rssBytes ?? 0), 0),
    );
  }
  return out;
}
