/**
 * The temporary folders CodeAct makes (the guest library, saved files, the no-sandbox working folders,
 * the zygote's sockets, pip's private working folder) carry their owner in their name:
 * `codeact-<kind>-<pid>-<start time>-XXXXXX`. A process removes its own when it ends; one that was killed
 * cannot, so the first folder a process makes starts a sweep of the stale ones: those whose owner (pid
 * and start time, so a reused pid does not count as alive) is gone.
 *
 * Only folders that are certainly ours go: a real folder (a symbolic link is never followed, nor
 * removed), owned by this user, with this name pattern, whose owner is dead. Removal follows nothing
 * (workdirCleanup.ts). Linux only (elsewhere the owner cannot be told apart from a reused pid).
 */
import { mkdtempSync, promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startTimeOf } from '../../util/processTree';
import { removeTree } from './workdirCleanup';

/** `stage` (review mode's staged writes) is never swept: what a killed process staged and nobody kept stays. */
type TempKind = 'guest' | 'files' | 'run' | 'zygote' | 'install' | 'rewind' | 'stage';

const OWNED = /^codeact-(?:guest|files|run|zygote|install|rewind)-(\d{1,10})-(\d{1,20})-[A-Za-z0-9]{6}$/;

/** The folders swept so far (each once per process). */
const swept = new Map<string, Promise<string[]>>();

/**
 * A new private folder of `kind` in `root` (default: the temporary folder), named after this process; the first
 * one in a root starts the sweep of that root.
 */
export function ownTempDir(kind: TempKind, root = tmpdir()): string {
  const dir = mkdtempSync(path.join(root, `codeact-${kind}-${process.pid}-${startTimeOf(process.pid) ?? 0}-`));
  if (!swept.has(root)) swept.set(root, sweepStaleTempFolders(root));
  return dir;
}

/**
 * Removes the stale temporary folders of dead CodeAct processes of this user in `root` (default: the
 * temporary folder), and resolves to those it removed. Never rejects: a folder that will not go stays.
 */
async function sweepStaleTempFolders(root = tmpdir()): Promise<string[]> {
  if (process.platform !== 'linux' || typeof process.getuid !== 'function') return [];
  const uid = process.getuid();
  const removed: string[] = [];
  let names: string[];
  try {
    names = await fsp.readdir(root);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = OWNED.exec(name);
    if (!m) continue;
    const [pid, start] = [Number(m[1]), m[2]];
    if (startTimeOf(pid) === start) continue;
    const dir = path.join(root, name);
    try {
      const st = await fsp.lstat(dir);
      if (!st.isDirectory() || st.uid !== uid) continue;
      await removeTree(dir);
      removed.push(dir);
    } catch {
      // Gone already, or it will not go: it stays, and the next start tries again.
    }
  }
  return removed;
}
