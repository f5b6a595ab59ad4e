/**
 * A file the user asked CodeAct to save ("Save to Workspace…" of a hosted file, the notebook export) is
 * written whole or not at all, wherever it goes. A local file goes through core/util/atomicFile (a
 * temporary name beside it, fsync, rename). Any other URI (a remote workspace, a virtual file system) is
 * written through VS Code's file system to a hidden temporary sibling, then renamed over the target; a
 * failed or interrupted write deletes the temporary and leaves the target as it was.
 */
import * as path from 'node:path';
import { tempNameFor, writeFileAtomic } from '../core/util/atomicFile';

/** The part of a `vscode.Uri` this needs (a `vscode.Uri` is one). */
export interface SaveUri {
  readonly scheme: string;
  readonly path: string;
  readonly fsPath: string;
  with(change: { path: string }): SaveUri;
}

/** The part of `vscode.workspace.fs` this needs. */
export interface SaveFileSystem<U extends SaveUri> {
  writeFile(uri: U, content: Uint8Array): PromiseLike<void>;
  rename(source: U, target: U, options: { overwrite: boolean }): PromiseLike<void>;
  delete(uri: U): PromiseLike<void>;
}

/** Writes `bytes` to `target` atomically: a local file by path, any other URI by a temporary sibling and a rename. */
export async function saveToUri<U extends SaveUri>(fs: SaveFileSystem<U>, target: U, bytes: Uint8Array): Promise<void> {
  if (target.scheme === 'file') return writeFileAtomic(target.fsPath, bytes);
  const tmp = target.with({ path: path.posix.join(path.posix.dirname(target.path), tempNameFor(path.posix.basename(target.path))) }) as U;
  try {
    await fs.writeFile(tmp, bytes);
    await fs.rename(tmp, target, { overwrite: true });
  } catch (e) {
    try {
      await fs.delete(tmp);
    } catch {
      /* never written, or already gone */
    }
    throw e;
  }
}
