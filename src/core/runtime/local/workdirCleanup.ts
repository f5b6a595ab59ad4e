/**
 * Removing a guest's host working folder (the no-sandbox mode works in a host folder), however
 * hostile the code made it: paths longer than PATH_MAX, thousands of entries, folders without read,
 * write or search permission, symbolic-link loops, FIFOs and sockets where files were.
 *
 * - Nothing is followed: links are unlinked, FIFOs are never opened, and nothing outside the folder
 *   is touched.
 * - Paths never grow past PATH_MAX: a folder deeper than that is first moved up to the top of the
 *   tree under a short name (a rename only needs the old path to fit), then emptied from there.
 * - A folder we may not read, search or write is made 0700 first (the code ran as the same user).
 * - All of it is asynchronous, a few operations at a time on libuv's thread pool, so the host's
 *   event loop never waits on the disk.
 *
 * A folder that cannot be removed (a mount inside it, an immutable file) is never dropped silently:
 * the cleaner reports it with the reason and what to do, keeps it, and tries again on dispose.
 */
import { promises as fsp, type Dir } from 'node:fs';
import * as path from 'node:path';
import { randomToken } from '../../util/ids';

/** Past this length a folder is moved up before it is emptied (PATH_MAX is 4096, a name up to 255). */
const MAX_DIR_PATH = 2048;
/** Unlinks in flight at once. */
const BATCH = 16;
const RESCUE_PREFIX = '.codeact-rm-';

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException)?.code;
}

/** Runs `op`; a path already gone (ENOENT) is no failure here: undefined. */
async function unlessGone<T>(op: () => Promise<T>): Promise<T | undefined> {
  try {
    return await op();
  } catch (e) {
    if (code(e) === 'ENOENT') return undefined;
    throw e;
  }
}

/** Makes a folder we own readable, searchable and writable; false when that is not possible. */
async function openUp(dir: string): Promise<boolean> {
  try {
    await fsp.chmod(dir, 0o700);
    return true;
  } catch {
    return false;
  }
}

async function unlinkIn(dir: string, file: string): Promise<void> {
  try {
    await fsp.unlink(file);
  } catch (e) {
    const c = code(e);
    if (c === 'ENOENT') return;
    // The folder has no write or search permission (EACCES), or carries the sticky bit (EPERM).
    if ((c === 'EACCES' || c === 'EPERM') && (await openUp(dir))) return void (await unlessGone(() => fsp.unlink(file)));
    throw e;
  }
}

async function openDir(dir: string): Promise<Dir> {
  try {
    return await fsp.opendir(dir, { bufferSize: 64 });
  } catch (e) {
    if (code(e) === 'EACCES' && (await openUp(dir))) return fsp.opendir(dir, { bufferSize: 64 });
    throw e;
  }
}

interface Walk {
  root: string;
  fail: (what: string, e: unknown) => void;
}

/**
 * Unlinks everything in `dir` but its folders, reading it a few entries at a time (a folder of a
 * million entries is never listed in one go), and returns its folders (moved up when too deep).
 */
async function emptyDir(dir: string, walk: Walk): Promise<string[]> {
  const handle = await openDir(dir);
  // The folder must be writable for its entries to go (it may be readable but read-only).
  await openUp(dir);
  const subdirs: string[] = [];
  let batch: string[] = [];
  const flush = async () => {
    const files = batch;
    batch = [];
    await Promise.all(files.map((f) => unlinkIn(dir, f).catch((e) => walk.fail(f, e))));
  };
  for await (const entry of handle) {
    let child = path.join(dir, entry.name);
    let isDir = entry.isDirectory();
    if (!isDir && !entry.isFile() && !entry.isSymbolicLink() && !entry.isFIFO() && !entry.isSocket() && !entry.isBlockDevice() && !entry.isCharacterDevice()) {
      // The file system did not say what it is: ask, without following it.
      try {
        isDir = (await fsp.lstat(child)).isDirectory();
      } catch {}
    }
    if (!isDir) {
      batch.push(child);
      if (batch.length >= BATCH) await flush();
      continue;
    }
    if (child.length > MAX_DIR_PATH) {
      // Too deep to address much further: move it up under a short name nobody could have guessed, and
      // empty it from there (a rename only needs the old path to fit in PATH_MAX).
      const moved = path.join(walk.root, `${RESCUE_PREFIX}${randomToken(8)}`);
      try {
        // Moving a folder to another parent rewrites its "..": it needs write permission itself.
        await fsp.rename(child, moved).catch(async (e: unknown) => {
          if (code(e) !== 'EACCES' || !(await openUp(child))) throw e;
          await fsp.rename(child, moved);
        });
        child = moved;
      } catch (e) {
        walk.fail(`${child.slice(0, 120)}…`, e);
        continue;
      }
    }
    subdirs.push(child);
  }
  await flush();
  return subdirs;
}

/**
 * Removes `root` and everything in it. Rejects, after removing all it could, with an error that
 * lists the first few entries that would not go.
 */
export async function removeTree(root: string): Promise<void> {
  try {
    // The common case: the code left nothing behind.
    await fsp.rmdir(root);
    return;
  } catch (e) {
    if (code(e) === 'ENOENT') return;
  }
  const st = await unlessGone(() => fsp.lstat(root));
  if (!st) return;
  if (!st.isDirectory()) {
    await unlinkIn(path.dirname(root), root);
    return;
  }
  const failures: string[] = [];
  const walk: Walk = {
    root,
    fail: (what, e) => {
      if (failures.length < 5) failures.push(`${what}: ${code(e) ?? (e as Error).message}`);
      else if (failures.length === 5) failures.push('…');
    },
  };
  // Depth first: a folder is removed once everything under it is (children sit above it on the stack).
  const stack: Array<{ dir: string; emptied: boolean; again: boolean }> = [{ dir: root, emptied: false, again: false }];
  while (stack.length) {
    const top = stack[stack.length - 1];
    if (!top.emptied) {
      top.emptied = true;
      try {
        for (const sub of await emptyDir(top.dir, walk)) stack.push({ dir: sub, emptied: false, again: false });
      } catch (e) {
        if (code(e) !== 'ENOENT') walk.fail(top.dir, e);
      }
      continue;
    }
    stack.pop();
    try {
      await fsp.rmdir(top.dir);
    } catch (e) {
      const c = code(e);
      if (c === 'ENOENT') continue;
      if ((c === 'EACCES' || c === 'EPERM') && path.dirname(top.dir) !== top.dir && (await openUp(path.dirname(top.dir)))) {
        try {
          await fsp.rmdir(top.dir);
          continue;
        } catch (e2) {
          walk.fail(top.dir, e2);
          continue;
        }
      }
      if (c === 'ENOTEMPTY' && !top.again && !failures.length) {
        // Something was not listed the first time (entries added while it was read): once more.
        stack.push({ dir: top.dir, emptied: false, again: true });
        continue;
      }
      // A parent of a folder that failed fails too (ENOTEMPTY): the first cause is the one to report.
      if (c !== 'ENOTEMPTY' || !failures.length) walk.fail(top.dir, e);
    }
  }
  if (failures.length) throw new Error(failures.join('; '));
}

/**
 * Removes working folders in the background and never forgets one: a folder that will not go is
 * reported (with the reason and what to do) and tried again by `settle()`, which dispose calls.
 */
export class WorkdirCleaner {
  private readonly inFlight = new Set<Promise<void>>();
  /** Folders that could not be removed, with the reason. */
  readonly leftovers = new Map<string, string>();

  constructor(private readonly report: (message: string) => void = () => {}) {}

  /** Starts removing `dir`; returns when it is gone or reported. */
  remove(dir: string): Promise<void> {
    const job = removeTree(dir).then(
      () => {
        this.leftovers.delete(dir);
      },
      (e: Error) => {
        this.leftovers.set(dir, e.message);
        this.report(
          `Could not remove the working folder ${dir} (${e.message}). The run's result is not affected. ` +
            'CodeAct tries again when it shuts down; if it is still there then, remove it by hand (for a mount inside it: umount it first; for an immutable file: chattr -i).',
        );
      },
    );
    this.inFlight.add(job);
    void job.finally(() => this.inFlight.delete(job));
    return job;
  }

  /** Waits for removals in flight, tries the leftovers once more, and returns the folders still there. */
  async settle(): Promise<string[]> {
    await Promise.all([...this.inFlight]);
    const left: string[] = [];
    for (const dir of [...this.leftovers.keys()]) {
      try {
        await removeTree(dir);
        this.leftovers.delete(dir);
      } catch (e) {
        this.leftovers.set(dir, (e as Error).message);
        left.push(dir);
      }
    }
    return left;
  }
}
