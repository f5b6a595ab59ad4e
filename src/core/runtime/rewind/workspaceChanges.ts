/**
 * What each execution's code changed in a writable workspace (issue 35, rewind, first slice): a baseline
 * of the workspace's files before the first run (their bytes kept in a content-addressed store, ./fileStore),
 * then a rescan after each run, whose difference with the scan before it is the run's changeset
 * ("4 files changed" on its card, listed to the model).
 *
 * - Scans are one at a time (runs of two sessions of one workspace take turns here); a background job's
 *   writes land in whichever scan sees them.
 * - The names the sandbox keeps read-only (.git, .vscode, .codeact, the venvs: ../local/workspaceMount)
 *   are not scanned: the code cannot write them.
 * - The store is a private folder of this process in the user's cache folder (removed when the runtime ends; a
 *   killed process's is swept by the next one, ../local/tempFolders), bounded by its budgets: a file that could not be kept
 *   is named in the changeset as not restorable, never skipped silently.
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import * as path from 'node:path';
import type { FilesChanged } from '../../../common/rewind';
import type { RevertOutcome } from '../types';
import { isUnder } from '../../util/paths';
import { ownTempDir } from '../local/tempFolders';
import { removeTree } from '../local/workdirCleanup';
import { PROTECTED_NAMES } from '../local/workspaceMount';
import { DEFAULT_REWIND_BUDGETS } from '../types';
import { diffManifests } from './changeset';
import { FileStore, type FileEntry, type Manifest, type StoreBudgets } from './fileStore';

/** Executions whose changes can be reverted (the newest; an older one says it is too old). */
const MAX_REVERTIBLE = 200;

/**
 * Where the stores go: the user's cache folder (`$XDG_CACHE_HOME/codeact/rewind`, else `~/.cache/…`), made 0700,
 * not the temporary folder (often a tmpfs in memory, and a store may hold gigabytes); the temporary folder when
 * the cache folder cannot be made.
 */
function storeRoot(workspace: string): string {
  const cache = process.env.XDG_CACHE_HOME && path.isAbsolute(process.env.XDG_CACHE_HOME) ? process.env.XDG_CACHE_HOME : path.join(homedir(), '.cache');
  const root = path.join(cache, 'codeact', 'rewind');
  // Never inside the workspace (a home folder opened as one): the code could write the copies, and scans would copy them.
  if (isUnder(root, workspace)) return tmpdir();
  try {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    chmodSync(root, 0o700);
    return root;
  } catch {
    return tmpdir();
  }
}

export class WorkspaceChanges {
  private readonly dir: string;
  private readonly store: FileStore;
  private last: Manifest | undefined;
  private failed: string | undefined;
  private baseline: Promise<void> | undefined;
  /** The scans, one after the other. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Runs between {@link ready} and {@link after}: a revert waits for none to be going on. */
  private running = 0;
  /** Per execution (newest last): each path it changed, as it was before (null: it did not exist). */
  private readonly befores = new Map<string, Map<string, FileEntry | null>>();

  constructor(
    /** The workspace folder on this machine. */
    readonly root: string,
    budgets: StoreBudgets = DEFAULT_REWIND_BUDGETS,
    private readonly log?: (line: string) => void,
  ) {
    this.dir = ownTempDir('rewind', storeRoot(root));
    this.store = new FileStore(this.dir, budgets);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** A run starts: resolves once the workspace's files before the first run are kept (the first run waits for it; later ones do not). */
  ready(): Promise<void> {
    this.running++;
    this.baseline ??= this.serial(async () => {
      const t = performance.now();
      try {
        this.last = await this.store.scan(this.root, undefined, PROTECTED_NAMES);
        this.log?.(`rewind: kept the workspace's ${Object.keys(this.last.files).length} files in ${Math.round(performance.now() - t)} ms`);
      } catch (e) {
        this.failed = `the workspace could not be read before the run (${(e as Error).message})`;
        this.log?.(`rewind: ${this.failed}`);
      }
    });
    return this.baseline;
  }

  /** Execution `itemId` ended (after {@link ready}): what changed since the last scan (it, and any background job of the workspace). */
  after(itemId: string): Promise<FilesChanged> {
    return this.serial(async () => {
      this.running--;
      if (!this.last) return { root: this.root, changes: [], incomplete: this.failed ?? 'the workspace was not scanned before the run' };
      let next: Manifest;
      try {
        next = await this.store.scan(this.root, this.last, PROTECTED_NAMES);
      } catch (e) {
        return { root: this.root, changes: [], incomplete: `the workspace could not be read after the run (${(e as Error).message})` };
      }
      const changes = diffManifests(this.last, next);
      const before = new Map<string, FileEntry | null>();
      for (const c of changes) for (const p of c.from ? [c.from, c.path] : [c.path]) before.set(p, this.last.files[p] ?? null);
      if (before.size) {
        this.befores.set(itemId, before);
        if (this.befores.size > MAX_REVERTIBLE) this.befores.delete(this.befores.keys().next().value!);
      }
      this.last = next;
      return { root: this.root, store: this.dir, changes, ...(next.incomplete ? { incomplete: next.incomplete } : {}) };
    });
  }

  /**
   * Puts `paths` (default: all) that execution `itemId` changed back as they were before it ran (a file it
   * made is removed); later changes to those files are lost. Then rescans, so the next run's changes do not
   * include the revert. Rejects while a run is going on, or when the execution's changes are no longer kept.
   */
  revert(itemId: string, paths?: readonly string[]): Promise<RevertOutcome> {
    return this.serial(async () => {
      if (this.running > 0) throw new Error('Code is running in this workspace: revert once it has ended.');
      const before = this.befores.get(itemId);
      if (!before || !this.last) throw new Error('The changes of that execution are no longer kept (only the newest executions can be reverted).');
      const targets = paths ? paths.filter((p) => before.has(p)) : [...before.keys()];
      const to: Manifest = { files: {} };
      for (const p of targets) {
        const e = before.get(p);
        if (e) to.files[p] = e;
      }
      const done = await this.store.restore(this.root, to, targets);
      this.last = await this.store.scan(this.root, this.last, PROTECTED_NAMES);
      this.log?.(`rewind: reverted execution ${itemId}: ${done.written.length} written, ${done.removed.length} removed, ${done.failed.length} failed`);
      return done;
    });
  }

  /** Removes the store (the runtime ends). */
  async dispose(): Promise<void> {
    await this.queue;
    await removeTree(this.dir);
  }
}
