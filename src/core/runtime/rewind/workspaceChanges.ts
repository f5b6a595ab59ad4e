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
import type { FileChange, FilesChanged } from '../../../common/rewind';
import type { RevertOutcome } from '../types';
import { cacheFolder } from './storeRoot';
import { ownTempDir } from '../local/tempFolders';
import { removeTree } from '../local/workdirCleanup';
import { PROTECTED_NAMES } from '../local/workspaceMount';
import { DEFAULT_REWIND_BUDGETS } from '../types';
import { diffManifests } from './changeset';
import { entryOf, FileStore, sameKey, type FileEntry, type Manifest, type StoreBudgets } from './fileStore';

/** Executions whose changes can be reverted (the newest; an older one says it is too old). */
const MAX_REVERTIBLE = 200;

export class WorkspaceChanges {
  private readonly dir: string;
  private readonly store: FileStore;
  private last: Manifest | undefined;
  private failed: string | undefined;
  /** The scans, one after the other. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Runs between {@link ready} and {@link after}: a revert waits for none to be going on. */
  private running = 0;
  /** Per execution (newest last): each path it changed, as it was before (null: it did not exist), and the folders above them that existed. */
  private readonly befores = new Map<string, { files: Map<string, FileEntry | null>; dirs: string[] }>();
  /** Every execution scanned after (and each redo point), oldest first: the points a rewind can go back to. */
  private readonly points: string[] = [];

  /** Review mode: the workspace itself, as last scanned (what Keep copies into, what Discard puts back). */
  private real: Manifest | undefined;
  /**
   * Review mode: files copied across whole by Keep or Discard (too large for the store, so never hashed), by path:
   * both sides' keys right after. While both stay so, they hold the same bytes, and are not a staged change.
   */
  private readonly copiedAcross = new Map<string, { real: FileEntry; view: FileEntry }>();

  constructor(
    /** The folder the code writes, on this machine: the workspace, or in review mode the code's view of it (../local/stagedWorkspace). */
    readonly root: string,
    budgets: StoreBudgets = DEFAULT_REWIND_BUDGETS,
    private readonly log?: (line: string) => void,
    /** Review mode: the workspace the staged writes reach only when kept. */
    readonly workspace?: string,
    /** Review mode: paths (and folders) never kept from the code's view (what the host runs: ../local/stagedWorkspace `neverKept`). */
    private readonly neverKept: () => readonly string[] = () => [],
  ) {
    this.dir = ownTempDir('rewind', cacheFolder('rewind', root));
    this.store = new FileStore(this.dir, budgets);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Keeps the workspace's files now, ahead of the first run (the runtime starts): that run then copies only what changed since. */
  warm(): Promise<void> {
    return this.serial(() => (this.last ? Promise.resolve() : this.rescan()));
  }

  /**
   * A run starts: the workspace is scanned first, so what changed since the last run (the person's own edits)
   * is kept as the state before this one and is not counted as its change; the first run waits for the first
   * copy. With another run of the workspace going on, only the first copy is waited for (its writes stay its own).
   */
  ready(): Promise<void> {
    const alone = this.running++ === 0;
    return this.serial(() => (!this.last || alone ? this.rescan() : Promise.resolve()));
  }

  private async rescan(): Promise<void> {
    const t = performance.now();
    const first = !this.last;
    try {
      this.last = await this.store.scan(this.root, this.last, PROTECTED_NAMES);
      this.failed = undefined;
      if (first) this.log?.(`rewind: kept the workspace's ${Object.keys(this.last.files).length} files in ${Math.round(performance.now() - t)} ms`);
    } catch (e) {
      // A run after a failed scan compares with the last good one.
      if (first) this.failed = `the workspace could not be read before the run (${(e as Error).message})`;
      this.log?.(`rewind: the workspace could not be read (${(e as Error).message})`);
    }
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
      for (const c of changes) for (const p of c.from ? [c.from, c.path] : [c.path]) before.set(p, entryOf(this.last.files, p) ?? null);
      if (before.size) {
        // The folders above the changed files that existed before the run (empty ones too): a revert keeps them.
        const had = new Set(this.last.dirs ?? []);
        const dirs = new Set<string>();
        for (const p of before.keys()) for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) if (had.has(p.slice(0, i))) dirs.add(p.slice(0, i));
        this.befores.set(itemId, { files: before, dirs: [...dirs] });
        if (this.befores.size > MAX_REVERTIBLE) this.forget(this.befores.keys().next().value!);
      }
      this.addPoint(itemId);
      this.last = next;
      return {
        root: this.root,
        store: this.dir,
        changes,
        ...(next.incomplete ? { incomplete: next.incomplete } : {}),
        ...(this.workspace ? { staged: true } : {}),
      };
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
      const targets = paths ? paths.filter((p) => before.files.has(p)) : [...before.files.keys()];
      // No prototype: a file named __proto__ is an entry like any other.
      const to: Manifest = { files: Object.create(null) as Manifest['files'], dirs: before.dirs };
      for (const p of targets) {
        const e = before.files.get(p);
        if (e) to.files[p] = e;
      }
      const done = await this.store.restore(this.root, to, targets);
      this.last = await this.store.scan(this.root, this.last, PROTECTED_NAMES);
      this.log?.(`rewind: reverted execution ${itemId}: ${done.written.length} written, ${done.removed.length} removed, ${done.failed.length} failed`);
      return done;
    });
  }

  private addPoint(point: string): void {
    this.points.push(point);
    if (this.points.length > 5 * MAX_REVERTIBLE) this.points.shift();
  }

  /** The oldest kept changes go: neither they nor any point before them can be rewound to. */
  private forget(oldest: string): void {
    this.befores.delete(oldest);
    const at = this.points.indexOf(oldest);
    if (at >= 0) this.points.splice(0, at + 1);
  }

  /** Whether the workspace as it was before execution (or redo point) `point` can be brought back. */
  has(point: string): boolean {
    return this.points.includes(point);
  }

  /**
   * "Rewind to here": every file the code changed from execution `point` on goes back as it was before it (one it made
   * is removed). `redo`: first keep those files as they are now, as a point to rewind to. Rejects during a run.
   */
  rewindTo(point: string, redo?: string): Promise<RevertOutcome> {
    return this.serial(async () => {
      if (this.running > 0) throw new Error('Code is running in this workspace: rewind once it has ended.');
      const at = this.points.indexOf(point);
      if (at < 0 || !this.last) throw new Error('The workspace files from before that execution are no longer kept.');
      // The earliest record of each path from `point` on is how it was then.
      const want = new Map<string, FileEntry | null>();
      const dirs = new Set<string>();
      for (const p of this.points.slice(at)) {
        const before = this.befores.get(p);
        for (const [file, entry] of before?.files ?? []) if (!want.has(file)) want.set(file, entry);
        for (const d of before?.dirs ?? []) dirs.add(d);
      }
      // The person may have changed files since the last run: what is there now is what a redo gives back.
      this.last = await this.store.scan(this.root, this.last, PROTECTED_NAMES);
      if (redo && want.size) {
        const now = this.last;
        const had = new Set(now.dirs ?? []);
        const keep = new Map<string, FileEntry | null>();
        const above = new Set<string>();
        for (const file of want.keys()) {
          keep.set(file, entryOf(now.files, file) ?? null);
          for (let i = file.indexOf('/'); i >= 0; i = file.indexOf('/', i + 1)) if (had.has(file.slice(0, i))) above.add(file.slice(0, i));
        }
        this.befores.set(redo, { files: keep, dirs: [...above] });
      }
      const to: Manifest = { files: Object.create(null) as Manifest['files'], dirs: [...dirs] };
      for (const [file, entry] of want) if (entry) to.files[file] = entry;
      const done = await this.store.restore(this.root, to, [...want.keys()]);
      if (redo) this.addPoint(redo);
      this.last = await this.store.scan(this.root, this.last, PROTECTED_NAMES);
      this.log?.(`rewind: files to before ${point}: ${done.written.length} written, ${done.removed.length} removed, ${done.failed.length} failed`);
      return done;
    });
  }

  /** Review mode: what the code's view holds that the workspace does not (the staged changes), both scanned now. */
  staged(): Promise<FilesChanged> {
    return this.serial(async () => {
      const { changes, incomplete } = await this.stagedNow();
      return { root: this.root, workspace: this.workspace, store: this.dir, changes, staged: true, ...(incomplete ? { incomplete } : {}) };
    });
  }

  private async stagedNow(): Promise<{ changes: FileChange[]; real: Manifest; view: Manifest; incomplete?: string }> {
    if (!this.workspace) throw new Error('Review mode is off: the code writes the workspace itself.');
    const view = (this.last = await this.store.scan(this.root, this.last, PROTECTED_NAMES));
    const real = (this.real = await this.store.scan(this.workspace, this.real, PROTECTED_NAMES));
    const incomplete = view.incomplete ?? real.incomplete;
    const same = (p: string) => {
      const k = this.copiedAcross.get(p);
      const r = entryOf(real.files, p);
      const v = entryOf(view.files, p);
      return !!(k && r && v && sameKey(k.real, r) && sameKey(k.view, v));
    };
    const changes = diffManifests(real, view).filter((c) => c.kind !== 'changed' || !same(c.path));
    return { changes, real, view, ...(incomplete ? { incomplete } : {}) };
  }

  /**
   * Review mode: `paths` (default: every staged change) go into the workspace as the code's view has them now (a
   * file the code deleted is removed there), or with `discard` the code's view gets the workspace's back. Paths that
   * are not staged changes are left alone. Rejects while a run is going on.
   */
  settle(how: 'keep' | 'discard', paths?: readonly string[]): Promise<RevertOutcome> {
    return this.serial(async () => {
      if (this.running > 0) throw new Error(`Code is running in this workspace: ${how} its changes once it has ended.`);
      const { changes, real, view } = await this.stagedNow();
      const asked = paths && new Set(paths);
      const targets = [
        ...new Set(
          changes
            .filter((c) => !asked || asked.has(c.path) || (c.from !== undefined && asked.has(c.from)))
            .flatMap((c) => (c.from !== undefined ? [c.from, c.path] : [c.path])),
        ),
      ];
      const [from, into] = how === 'keep' ? [view, this.workspace!] : [real, this.root];
      const guarded = how === 'keep' ? this.neverKept() : [];
      const refused = targets.filter((p) => guarded.some((g) => p === g || p.startsWith(`${g}/`)));
      const to: Manifest = { files: Object.create(null) as Manifest['files'], dirs: from.dirs };
      for (const p of targets) {
        const e = entryOf(from.files, p);
        if (e) to.files[p] = e;
      }
      // A file too large for the store is copied straight from the other side.
      const done = await this.store.restore(
        into,
        to,
        targets.filter((p) => !refused.includes(p)),
        how === 'keep' ? this.root : this.workspace,
      );
      for (const p of refused)
        done.failed.push({ path: p, why: 'a declared tool runs it on the host, so it is not kept from the code: read it and copy it yourself' });
      if (how === 'keep') this.real = await this.store.scan(this.workspace!, this.real, PROTECTED_NAMES);
      else this.last = await this.store.scan(this.root, this.last, PROTECTED_NAMES);
      for (const p of done.written) {
        const r = entryOf(this.real!.files, p);
        const v = entryOf(this.last!.files, p);
        if (entryOf(from.files, p)?.digest === null && r && v) this.copiedAcross.set(p, { real: r, view: v });
      }
      this.log?.(
        `review mode: ${how === 'keep' ? 'kept' : 'discarded'} ${done.written.length + done.removed.length} of ${targets.length} staged files, ${done.failed.length} failed`,
      );
      return done;
    });
  }

  /** Removes the store (the runtime ends). */
  async dispose(): Promise<void> {
    await this.queue;
    await removeTree(this.dir);
  }
}
