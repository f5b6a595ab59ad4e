/**
 * What an execution's code changed in the files it can write (issue 35, rewind): the changeset the card
 * shows ("4 files changed") and the model reads. Pure data, shared by core, the CLI and the webview.
 */

/** One file's content and mode as the store keeps it (`digest`: sha256 hex of the bytes, null when not kept). */
export interface FileVersion {
  digest: string | null;
  mode: number;
  size: number;
}

/** What happened to one file, by its path relative to the tracked root (forward slashes). */
export interface FileChange {
  path: string;
  kind: 'created' | 'changed' | 'deleted' | 'renamed' | 'mode';
  /** `renamed`: the old path (a deletion and a creation of the same content seen in one scan). */
  from?: string;
  before?: FileVersion;
  after?: FileVersion;
  /** Why this change cannot be reverted (its earlier content was not kept): too large, over the store's budget, unreadable. */
  notRestorable?: string;
}

/** An execution's changeset, on its item (`changes`) and in its `codeact.files.changed` event. */
export interface FilesChanged {
  /** The folder on this machine the paths are relative to (the workspace). */
  root: string;
  /** The folder of the store that keeps the files' earlier bytes (by digest: the diff view reads them there). */
  store?: string;
  changes: FileChange[];
  /** Set when the changeset is not complete (more files than tracked, a scan that failed): says why. */
  incomplete?: string;
  /** Review mode: these changes are staged in the code's view (`root`), not in the workspace until kept. */
  staged?: boolean;
  /** Review mode's list of everything staged (`Runtime.staged.list`): the workspace folder they would reach. */
  workspace?: string;
}

/** A change's kind in words: "created", "mode changed"… */
export const CHANGE_KIND_WORDS: Record<FileChange['kind'], string> = {
  created: 'created',
  changed: 'changed',
  deleted: 'deleted',
  renamed: 'renamed',
  mode: 'mode changed',
};

/** "1 file changed" / "4 files changed" (any kind of change counts). */
export function formatChangeCount(n: number): string {
  return `${n} file${n === 1 ? '' : 's'} changed`;
}

/**
 * One line per change for a person or the model: "created out/side.txt", "renamed a.csv → b.csv". The paths are
 * the code's: `show` makes them safe for where the line goes (the caller's sanitiser; as they are by default).
 */
export function describeChange(c: FileChange, show: (path: string) => string = (p) => p): string {
  if (c.kind === 'renamed' && c.from) return `renamed ${show(c.from)} → ${show(c.path)}`;
  return `${CHANGE_KIND_WORDS[c.kind] ?? 'changed'} ${show(c.path)}`;
}

/** Every path the changes touch (a rename's old name too): what a keep or a revert of them names. */
export function changePaths(changes: readonly FileChange[]): string[] {
  return [...new Set(changes.flatMap((c) => (c.from ? [c.from, c.path] : [c.path])))];
}

/** What a revert or a keep did, by the changes' rows: the files done (or already so), and those that could not be, with why. */
export interface SettledRows {
  reverted: string[];
  failed: { path: string; why: string }[];
}

/** {@link SettledRows} from a runtime's outcome (a rename's row is its new name: a failure of its old one is the row's too). */
export function settledRows(changes: readonly FileChange[], done: { failed: readonly { path: string; why: string }[] }): SettledRows {
  const failedWhy = new Map(done.failed.map((f) => [f.path, f.why]));
  const failed: SettledRows['failed'] = [];
  const reverted: string[] = [];
  for (const c of changes) {
    const why = failedWhy.get(c.path) ?? (c.from !== undefined ? failedWhy.get(c.from) : undefined);
    if (why !== undefined) failed.push({ path: c.path, why });
    else reverted.push(c.path);
  }
  return { reverted, failed };
}
