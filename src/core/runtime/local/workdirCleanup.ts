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
import { promises as fsp, type Dirent } from 'node:fs';
import * as path from 'node:path';

/** Past this length a folder is moved up before it is emptied (PATH_MAX is 4096, a name up to 255). */
const MAX_DIR_PATH = 2048;
/** Unlinks in flight at once. */
const BATCH = 16;
const RESCUE_PREFIX = '.codeact-rm-';

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException)?.code;
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
    if ((c === 'EACCES' || c === 'EPERM') && (await openUp(dir))) {
      try {
        await fsp.unlink(file);
        return;
      } catch (e2) {
        if (code(e2) === 'ENOENT') return;
        throw e2;
      }
    }
    throw e;
  }
}

async function readEntries(dir: string): Promise<Dirent[]> {
  try {
    return await fsp.readdir(dir, { withFileTypes: true });
  } catch (e) {
    if (code(e) === 'EACCES' && (await openUp(dir))) return fsp.readdir(dir, { withFileTypes: true });
    throw e;
  }
}

/**
 * Removes `root` and everything in it. Rejects, after removing all it could, with an error that
 * lists the first few entries that would not go.
 */
export async function removeTree(root: string): Promise<void> {
  let st;
  try {
    st = await fsp.lstat(root);
  } catch (e) {
    if (code(e) === 'ENOENT') return;
    throw e;
  }
  if (!st.isDirectory()) {
    await unlinkIn(path.dirname(root), root);
    return;
  }
  const failures: string[] = [];
  const fail = (what: string, e: unknown) => {
    if (failures.length < 5) failures.push(`${what}: ${code(e) ?? (e as Error).message}`);
    else if (failures.length === 5) failures.push('…');
  };
  let rescued = 0;
  // Folders in the order they were first seen; removed in reverse, so children go before parents.
  const dirs: string[] = [root];
  for (let i = 0; i < dirs.length; i++) {
    const dir = dirs[i];
    let entries: Dirent[];
    try {
      entries = await readEntries(dir);
    } catch (e) {
      if (code(e) !== 'ENOENT') fail(dir, e);
      continue;
    }
    // The folder must be writable for its entries to go (it may be readable but read-only).
    if (entries.length) await openUp(dir);
    const files: string[] = [];
    for (const entry of entries) {
      let child = path.join(dir, entry.name);
      let isDir = entry.isDirectory();
      if (!isDir && !entry.isFile() && !entry.isSymbolicLink() && !entry.isFIFO() && !entry.isSocket() && !entry.isBlockDevice() && !entry.isCharacterDevice()) {
        // The file system did not say what it is: ask, without following it.
        try {
          isDir = (await fsp.lstat(child)).isDirectory();
        } catch {}
      }
      if (!isDir) {
        files.push(child);
        continue;
      }
      if (child.length > MAX_DIR_PATH) {
        // Too deep to address much further: move it up under a short name, and empty it from there.
        const moved = path.join(root, `${RESCUE_PREFIX}${++rescued}`);
        try {
          await fsp.rename(child, moved);
          child = moved;
        } catch (e) {
          fail(child.slice(0, 120) + '…', e);
          continue;
        }
      }
      dirs.push(child);
    }
    for (let j = 0; j < files.length; j += BATCH) {
      await Promise.all(files.slice(j, j + BATCH).map((f) => unlinkIn(dir, f).catch((e) => fail(f, e))));
    }
  }
  for (let i = dirs.length - 1; i >= 0; i--) {
    try {
      await fsp.rmdir(dirs[i]);
    } catch (e) {
      const c = code(e);
      if (c === 'ENOENT') continue;
      if (c === 'EACCES' || c === 'EPERM') {
        const parent = path.dirname(dirs[i]);
        if (parent !== dirs[i] && (await openUp(parent))) {
          try {
            await fsp.rmdir(dirs[i]);
            continue;
          } catch (e2) {
            fail(dirs[i], e2);
            continue;
          }
        }
      }
      // A parent of a folder that failed fails too (ENOTEMPTY): the first cause is the one to report.
      if (c !== 'ENOTEMPTY' || !failures.length) fail(dirs[i], e);
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
