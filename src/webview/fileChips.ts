/**
 * The files an execution wrote, one chip each: name, size and type, and what can be done with it. A file
 * with a host path (the local guest's session folder, Jupyter's) has Open, Save to Workspace… and Copy Path;
 * a hosted sandbox's file has Download… (the host fetches it through the provider). A file that could not be
 * copied out says why (`note`), and one whose session ended says so once the host finds it gone.
 */
import type { FileOutput } from '../common/events';
import { mimeLabel } from '../common/mimeTypes';
import type { WebviewToHost } from '../common/protocol';
import { h, setText } from './dom';
import { icon } from './icons';
import { revealed, revealedPlain, setRevealed } from './reveal';

interface FileEnv {
  post(message: WebviewToHost): void;
  itemId(): string;
}

/** "1.2 KiB" (approximate: a size to read at a glance). */
function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(1)} GiB`;
}

const baseName = (p: string): string => p.split(/[\\/]/).filter(Boolean).pop() ?? p;

function fileName(f: FileOutput): string {
  return (f.filename && baseName(f.filename)) || (f.path && baseName(f.path)) || f.file_id || 'file';
}

/** "CSV", "PNG image", or the extension in capitals. */
function fileType(f: FileOutput): string {
  const mime = f.mime_type?.split(';')[0].trim().toLowerCase();
  const known = mime && mimeLabel(mime);
  if (known) return known;
  const ext = /\.([A-Za-z0-9]{1,10})$/.exec(fileName(f))?.[1];
  if (ext) return ext.toUpperCase();
  return mime && mime !== 'application/octet-stream' ? mime : 'File';
}

const isHosted = (f: FileOutput) => !!(f.file_id || f.container_id);
const keyOf = (f: FileOutput) => f.path ?? f.file_id ?? f.url ?? f.filename ?? '';

function actionButton(label: string, iconName: 'external' | 'save' | 'copy', onClick: () => void, title?: string): HTMLButtonElement {
  return h('button', { class: 'file-action', type: 'button', title: title ?? label, onclick: () => onClick() }, icon(iconName), h('span', { text: label }));
}

/** One chip. */
function renderChip(f: FileOutput, env: FileEnv): HTMLElement {
  const raw = fileName(f);
  /** For attributes (tooltips, labels): one line, invisible characters as markers; the chip's text draws them as boxes. */
  const name = revealedPlain(raw, { line: true });
  const note = typeof f.note === 'string' && f.note ? f.note.slice(0, 500) : undefined;
  const details = [f.bytes !== undefined ? formatSize(f.bytes) : '', fileType(f)].filter(Boolean).join(' · ');
  const actions = h('div', { class: 'file-actions' });
  let kind: 'local' | 'hosted' | 'unavailable';
  if (isHosted(f)) {
    kind = 'hosted';
    actions.append(
      actionButton('Download…', 'save', () => env.post({ type: 'openFile', itemId: env.itemId(), file: f }), `Download ${name} from the sandbox and save it`),
    );
  } else if (f.path && !note) {
    kind = 'local';
    const path = f.path;
    const post = (type: 'file.open' | 'file.save' | 'file.copyPath') => env.post({ type, itemId: env.itemId(), path });
    actions.append(
      actionButton('Open', 'external', () => post('file.open'), `Open ${name} in an editor`),
      actionButton('Save to Workspace…', 'save', () => post('file.save'), `Save a copy of ${name} in the workspace`),
      actionButton('Copy Path', 'copy', () => post('file.copyPath'), `Copy the path of ${name}`),
    );
  } else kind = 'unavailable';
  const chip = h(
    'div',
    { class: 'file-chip', 'data-kind': kind, role: 'group', 'aria-label': `File ${name}` },
    h('span', { class: 'file-icon', 'aria-hidden': 'true' }, icon('file')),
    h(
      'span',
      { class: 'file-meta' },
      h('span', { class: 'file-name', title: f.path ? revealedPlain(f.path, { line: true }) : name }, revealed(raw, { line: true })),
      // The size is CodeAct's; the type may be the provider's MIME type (outside text).
      h('span', { class: 'file-detail' }, revealed(details, { line: true })),
    ),
    actions,
  );
  const why = note ?? (kind === 'unavailable' ? 'This file could not be copied out of the sandbox.' : undefined);
  if (why) chip.append(h('div', { class: 'file-note' }, icon('warning'), h('span', null, revealed(why))));
  return chip;
}

/** The files section of an execution card. */
export class FileChips {
  readonly el: HTMLElement;
  private readonly list: HTMLElement;
  private readonly label: HTMLElement;
  private readonly chips = new Map<string, HTMLElement>();
  private shown = 0;

  constructor(private readonly env: FileEnv) {
    this.label = h('span', { text: 'Files' });
    this.list = h('div', { class: 'file-list' });
    this.el = h('div', { class: 'section files-section', hidden: true }, h('div', { class: 'section-label' }, icon('file'), this.label), this.list);
  }

  sync(files: readonly FileOutput[]): void {
    if (files.length <= this.shown) return;
    for (let i = this.shown; i < files.length; i++) {
      const chip = renderChip(files[i], this.env);
      this.chips.set(keyOf(files[i]), chip);
      this.list.append(chip);
    }
    this.shown = files.length;
    this.el.hidden = false;
    setText(this.label, files.length === 1 ? 'File' : `Files (${files.length})`);
  }

  /** The host found the file gone: the chip says so, and its actions go. */
  markMissing(path: string, message: string): boolean {
    const chip = this.chips.get(path);
    if (!chip) return false;
    chip.dataset.kind = 'unavailable';
    chip.querySelector('.file-actions')?.replaceChildren();
    let note = chip.querySelector('.file-note span');
    if (!note) {
      note = h('span');
      chip.append(h('div', { class: 'file-note' }, icon('warning'), note));
    }
    setRevealed(note, message);
    return true;
  }
}
