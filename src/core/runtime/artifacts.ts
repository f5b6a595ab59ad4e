/**
 * Files the code wrote, copied out of its working directory (a sandbox's tmpfs, or a kernel's folder) into a
 * private host folder, so the user can open and save them after the run: one folder per execution under
 * one root per runtime (0700), removed when the runtime is disposed. Bounded: relative paths only (no `..`,
 * no absolute path, no NUL), a depth and length cap, never an overwrite, and a total size past which the
 * oldest executions' copies are removed.
 */
import { rmSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { FileOutput } from '../../common/events';
import { mimeOfExtension } from '../../common/mimeTypes';
import { ownTempDir } from './local/tempFolders';

const MAX_DEPTH = 8;
const MAX_COMPONENT = 200;
/** What all copies of one runtime may take on disk before the oldest executions' copies go. */
const DEFAULT_STORE_BYTES = 512 * 1024 * 1024;

/** The MIME type of a file name, by its extension (../../common/mimeTypes; application/octet-stream when unknown). */
function mimeOfName(name: string): string {
  return mimeOfExtension(path.extname(name).slice(1)) ?? 'application/octet-stream';
}

/** A relative path from untrusted input, made safe, or undefined when it cannot be. */
export function safeRelativePath(raw: unknown): string | undefined {
  if (typeof raw !== 'string' || !raw || raw.length > 1000 || raw.includes('\0')) return undefined;
  const parts = raw
    .replace(/\\/g, '/')
    .split('/')
    .filter((p) => p !== '' && p !== '.');
  if (!parts.length || parts.length > MAX_DEPTH || raw.startsWith('/')) return undefined;
  if (parts.some((p) => p === '..' || p.length > MAX_COMPONENT || /[\u0000-\u001f]/.test(p))) return undefined;
  return parts.join('/');
}

export class ArtifactStore {
  private root?: string;
  private readonly folders: { name: string; bytes: number }[] = [];
  private bytes = 0;
  private disposed = false;

  constructor(private readonly maxBytes = DEFAULT_STORE_BYTES) {}

  private rootDir(): string {
    if (!this.root) {
      this.root = ownTempDir('files');
      const root = this.root;
      process.once('exit', () => rmSync(root, { recursive: true, force: true }));
    }
    return this.root;
  }

  /** The host folder of an execution's files. */
  folderOf(itemId: string): string {
    return path.join(this.rootDir(), itemId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80));
  }

  /** Writes one file of an execution; resolves with its host path. `relPath` must come from safeRelativePath. */
  async write(itemId: string, relPath: string, data: Buffer): Promise<string> {
    if (this.disposed) throw new Error('the runtime was closed');
    const folder = this.folderOf(itemId);
    const target = path.join(folder, ...relPath.split('/'));
    if (!target.startsWith(folder + path.sep)) throw new Error('the path leaves the folder');
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    await writeFile(target, data, { flag: 'wx', mode: 0o600 });
    let entry = this.folders.find((f) => f.name === folder);
    if (!entry) this.folders.push((entry = { name: folder, bytes: 0 }));
    entry.bytes += data.length;
    this.bytes += data.length;
    while (this.bytes > this.maxBytes && this.folders.length > 1 && this.folders[0] !== entry) {
      const old = this.folders.shift()!;
      this.bytes -= old.bytes;
      await rm(old.name, { recursive: true, force: true }).catch(() => {});
    }
    return target;
  }

  /** The `file` output of a copied file (or of one that could not be copied, with the reason). */
  static output(relPath: string, size: number, hostPath?: string, note?: string): FileOutput {
    return {
      type: 'file',
      filename: relPath,
      ...(hostPath ? { path: hostPath } : {}),
      mime_type: mimeOfName(relPath),
      bytes: size,
      ...(note ? { note } : {}),
    };
  }

  dispose(): void {
    this.disposed = true;
    if (this.root) rmSync(this.root, { recursive: true, force: true });
    this.root = undefined;
  }
}
