/**
 * "4 files changed": what an execution's code created, changed and deleted in the workspace (its item's
 * `changes`, issue 35). One row per file (the kind, the path relative to the workspace) with Diff (VS Code's
 * diff editor: the file before the execution against the file now), Open (a file that exists) and Revert
 * (back as it was before the execution; the host asks the person first), and Revert All. A change whose
 * earlier content was not kept says it cannot be reverted; a changeset that is not complete says why.
 *
 * Review mode (`changes.staged`): the changes are in the code's view only. Each row also has Keep (into the
 * workspace, after the host's confirmation), the summary Keep All; the label says how many are still staged.
 */
import { describeChange, formatChangeCount, type FileChange, type FilesChanged } from '../common/rewind';
import type { WebviewToHost } from '../common/protocol';
import { h, setText } from './dom';
import { icon, type IconName } from './icons';
import { revealed, revealedPlain } from './reveal';

interface ChangesEnv {
  post(message: WebviewToHost): void;
  itemId(): string;
}

/** Rows drawn at most (a run that rewrote 10,000 files lists the first ones and a count). */
const MAX_ROWS = 200;

const KIND_LABEL: Record<FileChange['kind'], string> = { created: 'A', changed: 'M', deleted: 'D', renamed: 'R', mode: 'M' };

/** The host path of a change's file (POSIX paths: the local runtime's workspace). */
const hostPath = (root: string, rel: string) => `${root.replace(/\/+$/, '')}/${rel}`;

function action(label: string, iconName: IconName, title: string, onClick: () => void): HTMLButtonElement {
  return h(
    'button',
    { class: 'file-action', type: 'button', title, 'aria-label': title, onclick: () => onClick() },
    icon(iconName),
    h('span', { text: label }),
  );
}

/** The changes section of an execution card (hidden until a changeset with something in it arrives). */
export class ChangesList {
  readonly el: HTMLElement;
  private readonly label: HTMLElement;
  private readonly list: HTMLElement;
  private readonly note: HTMLElement;
  private readonly revertAll: HTMLButtonElement;
  private readonly keepAll: HTMLButtonElement;
  private readonly rows = new Map<string, HTMLElement>();
  /** Paths reverted so far (rows past the drawn ones too). */
  private readonly reverted = new Set<string>();
  /** Review mode: paths kept into the workspace so far. */
  private readonly kept = new Set<string>();
  private shown: FilesChanged | undefined;

  constructor(private readonly env: ChangesEnv) {
    this.label = h('span');
    this.list = h('ul', { class: 'change-list' });
    this.note = h('div', { class: 'change-note', hidden: true });
    // Staged: only what is still staged (a kept file's revert would stage it again).
    this.revertAll = action('Revert All', 'history', 'Revert every file this execution changed to before it ran', () =>
      this.env.post({ type: 'changes.revert', itemId: this.env.itemId(), ...(this.shown?.staged ? { paths: this.pending() } : {}) }),
    );
    this.keepAll = action('Keep All', 'check', 'Keep every staged file of this execution in the workspace', () =>
      this.env.post({ type: 'changes.keep', itemId: this.env.itemId(), paths: this.pending() }),
    );
    this.keepAll.hidden = true;
    // Inside the summary: the click reverts or keeps, it does not fold the list.
    for (const b of [this.revertAll, this.keepAll]) b.addEventListener('click', (e) => e.preventDefault());
    this.el = h(
      'details',
      { class: 'section changes-section', hidden: true },
      h('summary', { class: 'section-label' }, icon('edit'), this.label, h('span', { class: 'spacer' }), this.keepAll, this.revertAll),
      this.list,
      this.note,
    );
  }

  /** The paths not yet kept or reverted (review mode). */
  private pending(): string[] {
    return (this.shown?.changes ?? []).filter((c) => !this.kept.has(c.path) && !this.reverted.has(c.path)).map((c) => c.path);
  }

  /** "3 files changed", and in review mode where they are. */
  private labelText(): string {
    const changes = this.shown?.changes ?? [];
    if (!changes.length) return 'Workspace changes';
    if (!this.shown?.staged) return formatChangeCount(changes.length);
    const left = this.pending().length;
    const where = left === changes.length ? 'staged, not in the workspace yet' : left ? `${left} still staged` : 'reviewed';
    return `${formatChangeCount(changes.length)} · ${where}`;
  }

  private row(c: FileChange, root: string): HTMLElement {
    // The kind is one of ours (a saved conversation may say anything).
    const kind: FileChange['kind'] = Object.hasOwn(KIND_LABEL, c.kind) ? c.kind : 'changed';
    const name = revealedPlain(c.path, { line: true });
    const post = (m: WebviewToHost) => this.env.post(m);
    const itemId = this.env.itemId();
    const actions = h(
      'span',
      { class: 'change-actions' },
      action('Diff', 'search', `Compare ${name} before the execution with now`, () => post({ type: 'changes.diff', itemId, path: c.path })),
    );
    if (kind !== 'deleted') actions.append(action('Open', 'external', `Open ${name}`, () => post({ type: 'file.open', itemId, path: hostPath(root, c.path) })));
    if (this.shown?.staged)
      actions.append(action('Keep', 'check', `Keep ${name} in the workspace`, () => post({ type: 'changes.keep', itemId, paths: [c.path] })));
    if (!c.notRestorable)
      actions.append(action('Revert', 'history', `Revert ${name} to before the execution`, () => post({ type: 'changes.revert', itemId, paths: [c.path] })));
    const el = h(
      'li',
      { class: `change change-${kind}`, title: revealedPlain(describeChange(c), { line: true }) },
      h('span', { class: 'change-kind', 'aria-hidden': 'true' }, KIND_LABEL[kind]),
      h('span', { class: 'change-path' }, revealed(kind === 'renamed' && c.from ? `${c.from} → ${c.path}` : c.path, { line: true })),
      h('span', { class: 'sr-only' }, ` ${kind}`),
      actions,
    );
    if (c.notRestorable) el.append(h('div', { class: 'change-note' }, icon('warning'), h('span', null, 'Cannot be reverted: ', revealed(c.notRestorable))));
    return el;
  }

  sync(changes: FilesChanged | undefined): void {
    if (!changes || changes === this.shown) return;
    this.shown = changes;
    const n = changes.changes.length;
    this.el.hidden = n === 0 && !changes.incomplete;
    setText(this.label, this.labelText());
    this.revertAll.hidden = !changes.changes.some((c) => !c.notRestorable);
    this.keepAll.hidden = !changes.staged || !n;
    this.rows.clear();
    this.list.replaceChildren(
      ...changes.changes.slice(0, MAX_ROWS).map((c) => {
        const row = this.row(c, changes.root);
        this.rows.set(c.path, row);
        return row;
      }),
    );
    if (n > MAX_ROWS) this.list.append(h('li', { class: 'change-more' }, `${(n - MAX_ROWS).toLocaleString('en-US')} more not listed here`));
    this.note.hidden = !changes.incomplete;
    this.note.replaceChildren();
    if (changes.incomplete) this.note.append(icon('info'), h('span', null, 'Not every change is listed: ', revealed(changes.incomplete)));
    // A short list opens by itself; a long one waits to be opened.
    if (n && n <= 8) (this.el as HTMLDetailsElement).open = true;
  }

  /** A revert (or, `kept`, a keep) ended: its rows say "Reverted" or "Kept" (their Revert and Keep go), or why not. */
  markReverted(reverted: readonly string[], failed: readonly { path: string; why: string }[], kept = false): void {
    for (const path of reverted) {
      (kept ? this.kept : this.reverted).add(path);
      const row = this.rows.get(path);
      if (!row || row.dataset.reverted) continue;
      row.dataset.reverted = kept ? 'kept' : 'true';
      for (const b of row.querySelectorAll('button[aria-label^="Revert"], button[aria-label^="Keep"]')) b.remove();
      // A file the code made is gone once reverted: nothing to open.
      if (!kept && row.classList.contains('change-created')) row.querySelector('button[aria-label^="Open"]')?.remove();
      row.querySelector('.change-actions')?.prepend(h('span', { class: 'change-reverted' }, icon('check'), h('span', { text: kept ? 'Kept' : 'Reverted' })));
    }
    for (const f of failed) {
      const row = this.rows.get(f.path);
      if (row) row.append(h('div', { class: 'change-note' }, icon('warning'), h('span', null, kept ? 'Not kept: ' : 'Not reverted: ', revealed(f.why))));
    }
    const settled = (c: FileChange) => this.reverted.has(c.path) || this.kept.has(c.path);
    if (this.shown && this.shown.changes.every((c) => c.notRestorable || settled(c))) this.revertAll.hidden = true;
    if (this.shown?.staged) {
      if (this.shown.changes.every(settled)) this.keepAll.hidden = true;
      setText(this.label, this.labelText());
    }
  }
}
