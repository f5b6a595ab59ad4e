/**
 * "4 files changed": what an execution's code created, changed and deleted in the workspace (its item's
 * `changes`, issue 35). One row per file (the kind, the path relative to the workspace) with Diff (VS Code's
 * diff editor: the file before the execution against the file now), Open (a file that exists) and Revert
 * (back as it was before the execution; the host asks the person first), and Revert All. A change whose
 * earlier content was not kept says it cannot be reverted; a changeset that is not complete says why.
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
  private readonly rows = new Map<string, HTMLElement>();
  /** Paths reverted so far (rows past the drawn ones too). */
  private readonly reverted = new Set<string>();
  private shown: FilesChanged | undefined;

  constructor(private readonly env: ChangesEnv) {
    this.label = h('span');
    this.list = h('ul', { class: 'change-list' });
    this.note = h('div', { class: 'change-note', hidden: true });
    this.revertAll = action('Revert All', 'history', 'Revert every file this execution changed to before it ran', () =>
      this.env.post({ type: 'changes.revert', itemId: this.env.itemId() }),
    );
    // Inside the summary: the click reverts, it does not fold the list.
    this.revertAll.addEventListener('click', (e) => e.preventDefault());
    this.el = h(
      'details',
      { class: 'section changes-section', hidden: true },
      h('summary', { class: 'section-label' }, icon('edit'), this.label, h('span', { class: 'spacer' }), this.revertAll),
      this.list,
      this.note,
    );
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
    setText(this.label, n ? formatChangeCount(n) : 'Workspace changes');
    this.revertAll.hidden = !changes.changes.some((c) => !c.notRestorable);
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

  /** A revert ended: its rows say "Reverted" (their Revert goes), or why not. */
  markReverted(reverted: readonly string[], failed: readonly { path: string; why: string }[]): void {
    for (const path of reverted) {
      this.reverted.add(path);
      const row = this.rows.get(path);
      if (!row || row.dataset.reverted) continue;
      row.dataset.reverted = 'true';
      row.querySelector('button[aria-label^="Revert"]')?.remove();
      // A file the code made is gone once reverted: nothing to open.
      if (row.classList.contains('change-created')) row.querySelector('button[aria-label^="Open"]')?.remove();
      row.querySelector('.change-actions')?.prepend(h('span', { class: 'change-reverted' }, icon('check'), h('span', { text: 'Reverted' })));
    }
    for (const f of failed) {
      const row = this.rows.get(f.path);
      if (row) row.append(h('div', { class: 'change-note' }, icon('warning'), h('span', null, 'Not reverted: ', revealed(f.why))));
    }
    if (this.shown && this.shown.changes.every((c) => c.notRestorable || this.reverted.has(c.path))) this.revertAll.hidden = true;
  }
}
