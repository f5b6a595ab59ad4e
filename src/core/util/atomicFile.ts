/**
 * Files CodeAct writes are written whole or not at all: the bytes go to a temporary name in the same
 * folder, are flushed to the disk (fsync), and only then take the final name (rename, or link when an
 * existing file must never be replaced). A crash or a kill mid-save leaves at most a hidden `.…tmp` file,
 * never a short file under the final name. The file keeps the mode of the one it replaces (0600 stays 0600)
 * unless the caller names one.
 */
import { closeSync, constants, fchmodSync, fsyncSync, linkSync, openSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { open, rename, stat, unlink } from 'node:fs/promises';
import * as path from 'node:path';
import { randomToken } from './ids';

interface AtomicOptions {
  /** The new file's mode (default: the replaced file's, else 0644 less the umask). */
  mode?: number;
  /** Never replace an existing file: fails with EEXIST when the final name exists. */
  exclusive?: boolean;
}

/** A hidden temporary name for a file to be named `base` (in the same folder). */
export function tempNameFor(base: string): string {
  return `.${base.slice(0, 100)}.${process.pid}.${randomToken(6)}.tmp`;
}

/** A hidden temporary name beside `target`. */
function tempBeside(target: string): string {
  return path.join(path.dirname(target), tempNameFor(path.basename(target)));
}

function modeFor(target: string, o: AtomicOptions): number | undefined {
  if (o.mode !== undefined) return o.mode;
  try {
    return statSync(target).mode & 0o7777;
  } catch {
    return undefined;
  }
}

/** Writes all of `bytes` at the file's position (a short write goes on). */
export function writeAll(fd: number, bytes: Uint8Array): void {
  for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off);
}

/**
 * Writes `data` (or what `write` writes to the open file) to `target` atomically. With `exclusive`, an
 * existing `target` is an EEXIST error and is left as it was.
 */
export function writeFileAtomicSync(target: string, data: string | Uint8Array | ((fd: number) => void), o: AtomicOptions = {}): void {
  writeFirstFree([target], data, o);
}

/**
 * Writes the data once, then gives it the first of `targets` that does not exist (never replacing a file)
 * and returns it; none free is an EEXIST error. Without `exclusive` in `o`, the first target is replaced.
 */
export function writeFirstFree(targets: string[], data: string | Uint8Array | ((fd: number) => void), o: AtomicOptions = {}): string {
  const target = targets[0];
  const tmp = tempBeside(target);
  const mode = modeFor(target, o);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode ?? 0o644);
  try {
    try {
      if (mode !== undefined) fchmodSync(fd, mode);
      if (typeof data === 'function') data(fd);
      else writeAll(fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (!o.exclusive && targets.length === 1) {
      renameSync(tmp, target);
      return target;
    }
    for (const name of targets) {
      try {
        linkSync(tmp, name);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw e;
      }
      unlinkSync(tmp);
      return name;
    }
    throw Object.assign(new Error(`EEXIST: ${targets.length > 1 ? 'every name' : 'the name'} is taken: ${target}`), { code: 'EEXIST' });
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw e;
  }
}

/** The same, without blocking (the extension host): `data`, or a source file copied by its open handle. */
export async function writeFileAtomic(target: string, data: Uint8Array | { copyOf: string }, o: AtomicOptions = {}): Promise<void> {
  const tmp = tempBeside(target);
  let mode = o.mode;
  if (mode === undefined)
    mode = await stat(target).then(
      (s) => s.mode & 0o7777,
      () => undefined,
    );
  const out = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode ?? 0o644);
  try {
    try {
      if (mode !== undefined) await out.chmod(mode);
      if (data instanceof Uint8Array) await out.writeFile(data);
      else {
        const src = await open(data.copyOf, constants.O_RDONLY);
        try {
          if (!(await src.stat()).isFile()) throw new Error(`${data.copyOf} is not a regular file.`);
          const buf = Buffer.allocUnsafe(1 << 20);
          for (;;) {
            const { bytesRead } = await src.read(buf, 0, buf.length, null);
            if (bytesRead <= 0) break;
            await out.write(buf, 0, bytesRead);
          }
        } finally {
          await src.close();
        }
      }
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(tmp, target);
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
}
