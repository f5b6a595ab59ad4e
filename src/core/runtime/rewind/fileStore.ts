/**
 * Rewind (issue 35) for files: a content-addressed store of a writable folder, kept by stat scans
 * (docs/design/rewind.md, "2. Files" (a)). A scan stats every regular file and hashes and copies only
 * those whose stat key (ino, size, mtime, ctime, mode) moved; a restore puts chosen paths back byte for
 * byte through a temporary file and a rename.
 *
 * The files come from untrusted code that may still be running: nothing here follows a symbolic link or
 * opens a FIFO or a device, everything is bounded before it is done. On Linux each name is resolved in an
 * open folder (`/proc/self/fd/N/name`, Node's openat), so a folder swapped for a link cannot redirect a
 * walk or a restore; elsewhere each folder is checked with lstat just before use.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants, existsSync, promises as fsp } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import * as path from 'node:path';

export interface FileEntry {
  ino: number;
  size: number;
  mtimeNs: string;
  ctimeNs: string;
  mode: number; // the whole st_mode, file type bits included
  digest: string | null; // sha256 hex of the bytes kept in the store; null when they were not kept (`why` says why)
  why?: string;
}

export interface Manifest {
  files: Record<string, FileEntry>; // by path relative to the scanned root, '/' separators
  dirs?: string[]; // the folders the scan saw (relative, '/' separators): a restore never removes one of them
  incomplete?: string; // set when the scan stopped early: says what is not tracked
}

/** Where a store in folder `dir` keeps the bytes of `digest` (sha256 hex; check it is one first). */
export function blobPath(dir: string, digest: string): string {
  return path.join(dir, 'blobs', digest.slice(0, 2), digest);
}

export interface StoreBudgets {
  storeBytes: number;
  maxFileBytes: number;
  maxFiles: number;
}

type RestoreOutcome = { written: string[]; removed: string[]; failed: { path: string; why: string }[] };

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const NEW_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const CHUNK = 1 << 20;
const DIGEST = /^[0-9a-f]{64}$/;
const PARALLEL = 8; // files hashed (or stat'ed) at once
const MAX_DEPTH = 64; // folders deeper are not walked (each level holds one open folder)

/** An open folder (null handle where /proc/self/fd is not available) and its path. */
type Dir = { fh: fsp.FileHandle | null; path: string };

let procFd: Promise<boolean> | undefined;
/** Whether `/proc/self/fd/N/name` resolves names relative to an open folder here (Linux). */
function hasProcFd(): Promise<boolean> {
  return (procFd ??= exists('/proc/self/fd'));
}

function at(d: Dir, name: string): string {
  return d.fh ? `/proc/self/fd/${d.fh.fd}/${name}` : path.join(d.path, name);
}

/** Opens `p` as a folder without following a link at its last component; checks it is the one lstat saw. */
async function openDir(p: string, shown: string, useFd: boolean, seen?: BigIntStats): Promise<Dir> {
  if (!useFd) return { fh: null, path: shown };
  const fh = await fsp.open(p, DIR_FLAGS);
  const st = await fh.stat({ bigint: true });
  const swapped = !st.isDirectory() || (seen && (st.ino !== seen.ino || st.dev !== seen.dev));
  if (swapped) await fh.close();
  return swapped ? Promise.reject(Object.assign(new Error(`${shown} changed while it was opened`), { code: 'ESWAPPED' })) : { fh, path: shown };
}

const closeDir = async (d: Dir): Promise<void> => d.fh?.close().catch(() => undefined);

/** Runs `fn` on every item, at most `limit` at once. */
async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Without /proc/self/fd: whether `p` is still a folder, not a link, just before a name in it is used. */
const isDir = async (p: string): Promise<boolean> => (await fsp.lstat(p).catch(() => null))?.isDirectory() === true;
const exists = async (p: string): Promise<boolean> => (await fsp.lstat(p).catch(() => null)) !== null;

/** An own entry of a manifest (a file may be named `constructor` or `__proto__`). */
export function entryOf(files: Record<string, FileEntry>, rel: string): FileEntry | undefined {
  return Object.hasOwn(files, rel) ? files[rel] : undefined;
}

/** Copies `src` from its start into `out` (when given), hashing it; null when more than `max` bytes came. */
async function hashCopy(src: fsp.FileHandle, out: fsp.FileHandle | null, max: number, sizeHint: number): Promise<{ digest: string; total: number } | null> {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(Math.min(CHUNK, sizeHint + 1)); // + 1: the end is seen in one read
  let total = 0;
  for (let n: number; (n = (await src.read(buf, 0, buf.length, total)).bytesRead) > 0;) {
    if ((total += n) > max) return null;
    hash.update(buf.subarray(0, n));
    if (out) await out.write(buf, 0, n);
  }
  return { digest: hash.digest('hex'), total };
}

/** lstat, or null when nothing is there. */
function lstatOrNull(p: string): Promise<BigIntStats | null> {
  return fsp.lstat(p, { bigint: true }).catch((e: unknown) => (code(e) === 'ENOENT' ? null : Promise.reject(e as Error)));
}

const code = (e: unknown): string => (e as NodeJS.ErrnoException)?.code ?? String(e);
const formatBytes = (n: number): string => (n >= 1 << 20 ? `${Math.round(n / (1 << 20))} MB` : `${n} bytes`);

/** The same file, unchanged: its inode, size, times and mode as before. */
export function sameKey(a: FileEntry, b: FileEntry): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.mode === b.mode;
}

function keyOf(st: BigIntStats): FileEntry {
  return { ino: Number(st.ino), size: Number(st.size), mtimeNs: String(st.mtimeNs), ctimeNs: String(st.ctimeNs), mode: Number(st.mode), digest: null };
}

type ScanState = {
  files: Record<string, FileEntry>;
  dirs: string[];
  prev: Record<string, FileEntry>;
  skip: Set<string>;
  count: number;
  entries: number;
  incomplete?: string;
  stop?: boolean;
};
const halt = (st: ScanState, why: string) => void Object.assign(st, { stop: true, incomplete: why });

export class FileStore {
  private made: Promise<void> | undefined;
  /** Bytes of the blobs (counted once, then kept up to date) plus the bytes being copied now. */
  private used: number | undefined;
  private reserved = 0;
  private readonly copying = new Set<Promise<unknown>>();
  private readonly shards = new Set<string>(); // blobs/xx folders made

  constructor(
    private readonly dir: string,
    private readonly budgets: StoreBudgets,
  ) {}

  /** Stats every regular file under root and keeps (hashes and copies) those whose stat key differs from `prev`. */
  async scan(root: string, prev?: Manifest, skip: readonly string[] = []): Promise<Manifest> {
    await this.ready();
    const st: ScanState = {
      files: Object.create(null) as Record<string, FileEntry>,
      dirs: [],
      prev: prev?.files ?? {},
      skip: new Set(skip),
      count: 0,
      entries: 0,
    };
    const top = await openDir(root, root, await hasProcFd());
    await this.walk(top, '', 0, st).finally(() => closeDir(top));
    return st.incomplete ? { files: st.files, dirs: st.dirs, incomplete: st.incomplete } : { files: st.files, dirs: st.dirs };
  }

  private async walk(dir: Dir, rel: string, depth: number, st: ScanState): Promise<void> {
    const subdirs: { name: string; lst: BigIntStats }[] = [];
    const most = this.budgets.maxFiles * 4 + 1000; // folders, links, FIFOs count too
    const batch: string[] = [];
    const flush = () => eachLimit(batch.splice(0), PARALLEL, (name) => this.visit(dir, rel, name, st, subdirs));
    try {
      for await (const ent of await fsp.opendir(dir.fh ? `/proc/self/fd/${dir.fh.fd}` : dir.path, { bufferSize: 64 })) {
        if (st.stop) break;
        if (depth === 0 && st.skip.has(ent.name)) continue;
        if (++st.entries > most) halt(st, `more than ${most} files and folders: the rest are not tracked`);
        else if (batch.push(ent.name) >= 64) await flush();
      }
      if (!st.stop) await flush();
    } catch (e) {
      st.incomplete ??= `the folder ${rel || '.'} could not be read (${code(e)}): files in it may be missing`;
    }
    for (const { name, lst } of subdirs.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (st.stop) return;
      if (depth + 1 >= MAX_DEPTH) return halt(st, `folders deeper than ${MAX_DEPTH} levels are not tracked`);
      const sub = await openDir(at(dir, name), path.join(dir.path, name), dir.fh !== null, lst).catch((e: unknown) => code(e));
      if (typeof sub !== 'string') await this.walk(sub, `${rel}${name}/`, depth + 1, st).finally(() => closeDir(sub));
      else if (!['ENOENT', 'ENOTDIR', 'ELOOP', 'ESWAPPED'].includes(sub))
        st.incomplete ??= `the folder ${rel}${name} could not be read (${sub}): nothing in it is tracked`;
      // (gone, or swapped for a link or a file since the lstat: nothing to track there)
    }
  }

  private async visit(dir: Dir, rel: string, name: string, st: ScanState, subdirs: { name: string; lst: BigIntStats }[]): Promise<void> {
    if (st.stop) return;
    if (!dir.fh && !(await isDir(dir.path))) return;
    // Asynchronous: a slow or stuck file system (NFS, FUSE) must not stall the extension host.
    const lst = await lstatOrNull(at(dir, name)).catch(() => null);
    if (!lst) return; // gone since the folder was read
    if (lst.isDirectory()) {
      st.dirs.push(rel + name);
      return void subdirs.push({ name, lst });
    }
    if (!lst.isFile()) return; // links, FIFOs, sockets, devices: never opened (not tracked in this slice)
    if (st.count >= this.budgets.maxFiles) return halt(st, `more than ${this.budgets.maxFiles} files: the rest are not tracked`);
    st.count++;
    const key = keyOf(lst);
    const old = entryOf(st.prev, rel + name);
    if (old && sameKey(old, key) && (old.digest !== null || !this.fits(old.size))) {
      st.files[rel + name] = old;
      return;
    }
    let entry = await this.keep(at(dir, name), lst);
    if (!entry) {
      // Replaced between the lstat and the open (an atomic write: a new file renamed over it): look once more.
      const again = await lstatOrNull(at(dir, name)).catch(() => null);
      if (again?.isFile()) entry = (await this.keep(at(dir, name), again)) ?? { ...keyOf(again), why: 'it changed while it was being read' };
    }
    if (entry) st.files[rel + name] = entry;
    else st.count--;
  }

  private fits(size: number): boolean {
    return (this.used ?? 0) + this.reserved + size <= this.budgets.storeBytes;
  }

  /** Hashes (and copies, when the budget allows) one regular file; null when it is not a regular file any more. */
  private async keep(p: string, lst: BigIntStats): Promise<FileEntry | null> {
    const { maxFileBytes, storeBytes } = this.budgets;
    if (lst.size > BigInt(maxFileBytes)) return { ...keyOf(lst), why: `larger than the ${formatBytes(maxFileBytes)} limit` };
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(p, READ_FLAGS);
    } catch (e) {
      if (code(e) === 'ELOOP' || code(e) === 'ENOENT' || code(e) === 'ENXIO') return null; // swapped or gone
      return { ...keyOf(lst), why: `it could not be read (${code(e)})` };
    }
    try {
      const fst = await fh.stat({ bigint: true });
      if (!fst.isFile() || fst.ino !== lst.ino || fst.dev !== lst.dev) return null; // swapped after the lstat
      const entry = keyOf(fst);
      if (fst.size > BigInt(maxFileBytes)) return { ...entry, why: `larger than the ${formatBytes(maxFileBytes)} limit` };
      const copy = this.fits(entry.size);
      if (copy) this.reserved += entry.size;
      const putting = this.put(fh, copy, maxFileBytes, entry.size);
      if (copy) this.copying.add(putting);
      const digest = await putting.catch((e: unknown) => ({ why: `it could not be kept (${code(e)})` }));
      if (copy) this.reserved -= entry.size;
      this.copying.delete(putting);
      if (digest !== null && typeof digest !== 'string') return { ...entry, ...digest };
      // The key is the one from before the read: a file written meanwhile gets a new ctime, and is kept again by the next scan.
      const after = await fh.stat({ bigint: true });
      if (digest === null || after.size !== fst.size || after.mtimeNs !== fst.mtimeNs || after.ctimeNs !== fst.ctimeNs)
        return { ...entry, why: 'it changed while it was being read' };
      if (!copy) await Promise.allSettled([...this.copying]); // the same bytes may be on their way in
      if (copy || (await exists(this.blobPath(digest)))) return { ...entry, digest };
      return { ...entry, why: `the rewind store is full (${formatBytes(storeBytes)})` };
    } finally {
      await fh.close();
    }
  }

  /** Reads the open file, hashing it, into a new blob when `copy`; the digest, or null when it outgrew `max`. */
  private async put(fh: fsp.FileHandle, copy: boolean, max: number, size: number): Promise<string | null> {
    const tmp = path.join(this.dir, 'tmp', `${process.pid}-${randomBytes(8).toString('hex')}`);
    const out = copy ? await fsp.open(tmp, NEW_FLAGS, 0o600) : null;
    try {
      const got = await hashCopy(fh, out, max, size);
      const blob = got && this.blobPath(got.digest);
      if (out && blob && !(await exists(blob))) {
        await out.close();
        if (!this.shards.has(got.digest.slice(0, 2))) await fsp.mkdir(path.dirname(blob), { recursive: true, mode: 0o700 });
        this.shards.add(got.digest.slice(0, 2));
        // link, not rename: of files with the same bytes copied at once, only the first becomes the blob (and is counted).
        const made = await fsp.link(tmp, blob).then(
          () => true,
          (e: unknown) => (code(e) === 'EEXIST' ? false : Promise.reject(e as Error)),
        );
        if (made) this.used = (this.used ?? 0) + got.total;
      }
      return got?.digest ?? null;
    } finally {
      await out?.close().catch(() => undefined);
      if (out) await fsp.unlink(tmp).catch(() => undefined); // the blob is its own link
    }
  }

  /**
   * Makes `paths` under root what `to` says, touching nothing else. Never throws for one path: it is in `failed`.
   * `source`: where a file the store holds no copy of (too large, the store full) is copied from instead, if it is
   * still the one `to` lists (review mode: the code's view, or the workspace).
   */
  async restore(root: string, to: Manifest, paths: readonly string[], source?: string): Promise<RestoreOutcome> {
    const res: RestoreOutcome = { written: [], removed: [], failed: [] };
    const kept = new Set<string>();
    for (const p of Object.keys(to.files)) for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) kept.add(p.slice(0, i));
    for (const d of to.dirs ?? []) kept.add(d);
    const useFd = await hasProcFd();
    const top = await openDir(root, root, useFd).catch((e: unknown) => code(e));
    if (typeof top === 'string') return { ...res, failed: paths.map((p) => ({ path: p, why: `the folder ${root} could not be opened (${top})` })) };
    try {
      await eachLimit([...new Set(paths)], PARALLEL, async (rel) => {
        const did = await this.restoreOne(top, rel, entryOf(to.files, rel), kept, source).catch((e: unknown) => ({
          why: `it could not be restored (${code(e)})`,
        }));
        if (did === 'written') res.written.push(rel);
        else if (did === 'removed') res.removed.push(rel);
        else if (did !== 'same') res.failed.push({ path: rel, why: did.why });
      });
    } finally {
      await closeDir(top);
    }
    for (const list of [res.written, res.removed]) list.sort();
    res.failed.sort((a, b) => (a.path < b.path ? -1 : 1));
    return res;
  }

  private async restoreOne(
    top: Dir,
    rel: string,
    want: FileEntry | undefined,
    kept: Set<string>,
    source?: string,
  ): Promise<'written' | 'removed' | 'same' | { why: string }> {
    const parts = rel.split('/');
    if (path.isAbsolute(rel) || rel.includes('\0') || rel.includes('\\') || parts.some((s) => s === '' || s === '.' || s === '..'))
      return { why: 'not a plain relative path' };
    // Not in the store (too large, the store full): from `source` itself, when given and it is still the file listed.
    const direct = want && want.digest === null && source ? await this.openUnder(source, parts) : null;
    if (direct && !sameKey(keyOf(await direct.stat({ bigint: true })), want!)) {
      await direct.close();
      return { why: 'it changed since it was listed: look at the changes again' };
    }
    if (want && want.digest === null && !direct) return { why: want.why ?? 'its content was not kept' };
    const blob = want?.digest && DIGEST.test(want.digest) ? this.blobPath(want.digest) : null;
    if (want && !direct && !(blob && (await exists(blob)))) return { why: 'its content is no longer in the rewind store' };
    try {
      return await this.restoreInto(top, parts, want, kept, direct ?? blob);
    } finally {
      await direct?.close();
    }
  }

  /** Opens `parts` under `root` to read, following no link on the way (its folders, nor itself); null when it is not there so. */
  private async openUnder(root: string, parts: string[]): Promise<fsp.FileHandle | null> {
    if (!(await hasProcFd())) return null; // the walk could not be made safe
    const chain: Dir[] = [];
    try {
      chain.push(await openDir(root, root, true));
      for (const part of parts.slice(0, -1)) {
        const d = chain[chain.length - 1];
        const lst = await lstatOrNull(at(d, part));
        if (!lst?.isDirectory()) return null;
        chain.push(await openDir(at(d, part), path.join(d.path, part), true, lst));
      }
      const fh = await fsp.open(at(chain[chain.length - 1], parts[parts.length - 1]), READ_FLAGS);
      if ((await fh.stat()).isFile()) return fh;
      await fh.close();
      return null;
    } catch {
      return null;
    } finally {
      for (const d of chain) await closeDir(d);
    }
  }

  /** `restoreOne` past its checks: the file written from `from` (a blob's path, or an open file), or removed. */
  private async restoreInto(
    top: Dir,
    parts: string[],
    want: FileEntry | undefined,
    kept: Set<string>,
    from: string | fsp.FileHandle | null,
  ): Promise<'written' | 'removed' | 'same' | { why: string }> {
    const chain: Dir[] = [top];
    try {
      for (let i = 0; i < parts.length - 1; i++) {
        const d = chain[chain.length - 1];
        const shown = parts.slice(0, i + 1).join('/');
        if (!d.fh && !(await isDir(d.path))) return { why: 'its folder was swapped while it was restored' };
        let lst = await lstatOrNull(at(d, parts[i]));
        if (!lst) {
          if (!want) return 'same'; // nothing there to remove
          await fsp.mkdir(at(d, parts[i])).catch((e: unknown) => (code(e) === 'EEXIST' ? undefined : Promise.reject(e)));
          lst = await fsp.lstat(at(d, parts[i]), { bigint: true });
        }
        if (lst.isSymbolicLink()) return { why: `its folder ${shown} is a symbolic link` };
        if (!lst.isDirectory()) return { why: `its folder ${shown} is not a folder` };
        chain.push(await openDir(at(d, parts[i]), path.join(d.path, parts[i]), d.fh !== null, lst));
      }
      const d = chain[chain.length - 1];
      const name = parts[parts.length - 1];
      if (!d.fh && !(await isDir(d.path))) return { why: 'its folder was swapped while it was restored' };
      const now = await lstatOrNull(at(d, name));
      if (!want) {
        if (!now) return 'same';
        if (!now.isFile() && !now.isSymbolicLink()) return { why: 'what is there now is not a file' };
        await fsp.unlink(at(d, name));
        await this.removeEmpty(chain, parts, kept);
        return 'removed';
      }
      if (now?.isDirectory()) return { why: 'a folder is there now' };
      if (now && sameKey(keyOf(now), want)) return 'same';
      return (await this.writeFrom(from!, d, name, want)) ?? 'written';
    } finally {
      for (const d of chain.slice(1)) await closeDir(d);
    }
  }

  /** Removes the folders of `parts` left empty, deepest first, that hold no file of the manifest restored to. */
  private async removeEmpty(chain: Dir[], parts: string[], kept: Set<string>): Promise<void> {
    for (let i = parts.length - 2; i >= 0; i--) {
      if (kept.has(parts.slice(0, i + 1).join('/'))) return;
      // Not empty (or gone): the folders above are not empty either.
      if ((await fsp.rmdir(at(chain[i], parts[i])).catch(code)) !== undefined) return;
    }
  }

  /**
   * Writes the blob (or the open file `from`, checked unchanged after the copy) into a new temporary file beside
   * `name`, with the recorded mode and mtime, then renames it over.
   */
  private async writeFrom(from: string | fsp.FileHandle, d: Dir, name: string, want: FileEntry): Promise<{ why: string } | null> {
    const tmpName = `.codeact-restore-${randomBytes(6).toString('hex')}`; // not the file's name: a long one would not fit
    const src = typeof from === 'string' ? await fsp.open(from, READ_FLAGS) : from;
    let ok = false;
    try {
      const out = await fsp.open(at(d, tmpName), NEW_FLAGS, 0o600);
      try {
        const got = await hashCopy(src, out, Infinity, want.size);
        if (typeof from !== 'string') {
          if (got?.total !== want.size || !sameKey(keyOf(await src.stat({ bigint: true })), want)) return { why: 'it changed while it was being copied' };
        } else if (got?.digest !== want.digest) return { why: 'the kept copy is damaged' };
        await out.chmod(want.mode & 0o1777); // no setuid/setgid bits
        const mtime = Number(BigInt(want.mtimeNs) / 1000n) / 1e6;
        await out.utimes(mtime, mtime);
      } finally {
        await out.close();
      }
      if (!d.fh && !(await isDir(d.path))) return { why: 'its folder was swapped while it was restored' };
      await fsp.rename(at(d, tmpName), at(d, name));
      ok = true;
      return null;
    } finally {
      if (typeof from === 'string') await src.close();
      if (!ok) await fsp.unlink(at(d, tmpName)).catch(() => undefined);
    }
  }

  /** The path of the blob kept for `digest`, or null when the store does not hold it. */
  blob(digest: string): string | null {
    if (!DIGEST.test(digest)) return null;
    const p = this.blobPath(digest);
    return existsSync(p) ? p : null;
  }

  /** Bytes the store holds now (its blobs). */
  async size(): Promise<number> {
    let total = 0;
    const blobs = path.join(this.dir, 'blobs');
    const dirs = await fsp.readdir(blobs).catch(() => [] as string[]);
    for (const sub of dirs) {
      const names = await fsp.readdir(path.join(blobs, sub)).catch(() => [] as string[]);
      await eachLimit(names, PARALLEL, async (n) => {
        const s = await fsp.lstat(path.join(blobs, sub, n)).catch(() => null);
        if (s?.isFile()) total += s.size;
      });
    }
    this.used = total;
    return total;
  }

  private blobPath(digest: string): string {
    return blobPath(this.dir, digest);
  }

  private ready(): Promise<void> {
    this.made ??= (async () => {
      await fsp.mkdir(path.join(this.dir, 'tmp'), { recursive: true, mode: 0o700 });
      await fsp.mkdir(path.join(this.dir, 'blobs'), { recursive: true, mode: 0o700 });
      await fsp.chmod(this.dir, 0o700).catch(() => undefined);
      if (this.used === undefined) await this.size();
    })();
    return this.made;
  }
}
