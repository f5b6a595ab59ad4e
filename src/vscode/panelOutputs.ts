/**
 * What the panel asks for about an execution's outputs: an image opened full size in an editor tab (written
 * to a temporary file, shown by VS Code's image preview) or saved where the user says; a file the code wrote
 * opened, saved to the workspace (a copy), or its path copied. The page is not trusted with paths: a file
 * action names an execution and a path, and only a file that execution lists is touched. Image data is
 * checked (type, base64, size) before anything is written.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, isAbsolute, join, resolve } from 'node:path';
import type { CodeInterpreterCallItem, FileOutput } from '../common/events';
import { checkImagePixels, DEFAULT_MAX_IMAGE_PIXELS, imageHeader } from '../common/imageHeader';
import { imageTypeName, isBinary, isRaster, MIME_TYPES, type PanelImageMime } from '../common/mimeTypes';
import type { ImageMessage, LocalFileMessage } from '../common/outputMessages';
import { writeFileAtomic } from '../core/util/atomicFile';
import { changePaths, describeChange, settledRows, type FileChange, type FilesChanged, type SettledRows } from '../common/rewind';
import { forDisplay } from '../common/untrusted';
import { blobPath } from '../core/runtime/rewind/fileStore';
import type { RewindOutcome, Runtime } from '../core/runtime/types';
import { rewindNote, rewoundLines } from '../core/agent/rewindNote';
import { isMessage } from '../core/agent/conversationRewind';
import { clip } from '../common/format';
import type { TurnSource } from '../common/transcript';
import type { PanelOutputsApis } from './panelOutputs.apis';

/** An image decodes to at most this many bytes (the runtimes cap a display at a few MB). */
const MAX_IMAGE_BYTES = 32 * 1024 * 1024;

/** The save dialog's filter for an image type: its label and extensions ("JPEG image": jpg, jpeg). */
function imageFilter(mime: PanelImageMime): Record<string, string[]> {
  const row = MIME_TYPES[mime];
  return { [row.label]: [...row.extensions] };
}

/** VS Code's image preview (the built-in media preview): SVG opens as text unless asked for it. */
export const IMAGE_PREVIEW = 'imagePreview.previewEditor';

/** A file the execution no longer has (its session ended, or something removed it). */
export class FileGoneError extends Error {
  constructor(
    readonly path: string,
    name: string,
  ) {
    super(`${name} is no longer available: the session that wrote it has ended, so its folder is gone.`);
  }
}

interface PanelOutputsDeps {
  apis: PanelOutputsApis;
  /** The finished item of an execution (its outputs list the files it wrote). */
  execution(itemId: string): CodeInterpreterCallItem | undefined;
  /** Where opened images are written (a folder of our own under the system's temporary folder by default). */
  tempRoot?: string;
  /** codeact.outputs.maxImageMegapixels, in pixels: the full-size view opens no image over it (default DEFAULT_MAX_IMAGE_PIXELS). */
  maxImagePixels?(): number;
  /** The runtime a session ran in (a revert or a rewind goes to it). */
  runtimeOf?(sessionId: string | undefined): Pick<Runtime, 'revertChanges' | 'rewind' | 'staged'> | undefined;
}

/** What a rewind of the conversation would do (the dialog says it): the turn it goes back to before, and the branch's title. */
export interface RewindTurn {
  turn: number;
  prompt: string;
  branchTitle: string;
  /** Asked from the turn's message (not an execution's card): the code goes back to before the turn's first execution. */
  fromTurn?: boolean;
  /** Where the turn came from: a person's message is put back in the chat box; a Run with Tools label is not. */
  source?: TurnSource;
  /** The turn's first execution (its item id): with the conversation, the code goes back to before it. */
  firstExecution?: string;
}

/** What a rewind from a card did: which parts, the runtime's outcome, whether it was a redo, what the card and the model are told. */
interface Rewound {
  /** Whether the conversation is to be cut back too (the caller does it: it holds the conversation). */
  conversation: boolean;
  /** The code's rewind (none: the conversation only). */
  outcome?: RewindOutcome;
  redone: boolean;
  /** For the card: one line per part (the Python state, the files), file names shown safely. */
  lines: string[];
  /** For the model, at its next step (../core/agent/rewindNote): what the code's rewind did. */
  note?: string;
}

/** The rewind dialog's choices (issue 35: code and conversation, code only, conversation only). */
const REWIND_CHOICES = { both: 'Code and Conversation', code: 'Code Only', conversation: 'Conversation Only' } as const;

/** Largest earlier version of a file the diff view shows (bigger ones say so). */
const MAX_BEFORE_BYTES = 8 * 1024 * 1024;
const DIGEST = /^[0-9a-f]{64}$/;

export class PanelOutputs {
  private readonly tempRoot: string;

  constructor(private readonly deps: PanelOutputsDeps) {
    this.tempRoot = deps.tempRoot ?? join(tmpdir(), `codeact-images-${process.pid}`);
  }

  /** The image's bytes, checked. */
  private bytes(m: ImageMessage): Buffer {
    const binary = isBinary(m.mime);
    const buf = Buffer.from(m.data, binary ? 'base64' : 'utf8');
    if (!buf.length) throw new Error('The image is empty.');
    if (buf.length > MAX_IMAGE_BYTES) throw new Error(`The image is over ${MAX_IMAGE_BYTES / 1024 / 1024} MB.`);
    if (binary ? imageHeader(buf)?.format !== MIME_TYPES[m.mime].image.format : !/<svg[\s>]/i.test(buf.subarray(0, 65536).toString('utf8'))) {
      throw new Error(`That is not a ${imageTypeName(m.mime)} image.`);
    }
    return buf;
  }

  /** Writes the image to a temporary file (one per image content) and opens it in an editor tab. */
  async openImage(m: ImageMessage): Promise<string> {
    const buf = this.bytes(m);
    // The image preview decodes it at full size: its header within the pixel cap first.
    const pixels = checkImagePixels(m.mime, buf, this.deps.maxImagePixels?.() ?? DEFAULT_MAX_IMAGE_PIXELS);
    if (!pixels.ok) throw new Error(pixels.note);
    const dir = join(this.tempRoot, createHash('sha256').update(buf).digest('hex').slice(0, 16));
    const file = join(dir, safeName(m.name));
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(file, buf, { mode: 0o600 });
    // The image preview shows raster images by itself; SVG would open as its XML text.
    await this.deps.apis.openFile(file, isRaster(m.mime) ? undefined : IMAGE_PREVIEW);
    return file;
  }

  /** Asks where to save the image (the workspace folder and its name by default) and writes it there. */
  async saveImage(m: ImageMessage): Promise<string | undefined> {
    const buf = this.bytes(m);
    const folder = this.deps.apis.workspaceFolder();
    const target = await this.deps.apis.showSaveDialog({
      title: 'Save Image',
      defaultPath: folder ? join(folder, safeName(m.name)) : safeName(m.name),
      filters: imageFilter(m.mime),
    });
    if (!target) return undefined;
    await writeFileAtomic(target, buf);
    return target;
  }

  /** The file of an execution that the message names, checked: listed by that execution, and still there. */
  private async file(m: LocalFileMessage): Promise<{ path: string; name: string }> {
    const item = this.deps.execution(m.itemId);
    const listed = item?.outputs.find((o): o is FileOutput => o.type === 'file' && typeof o.path === 'string' && o.path === m.path);
    // Or a workspace file its code created or changed (the card's "N files changed").
    const changed = !listed && item?.changes?.changes.some((c) => c.kind !== 'deleted' && join(item.changes!.root, c.path) === m.path);
    if ((!listed && !changed) || !isAbsolute(m.path)) throw new Error('That file is not one this execution wrote.');
    const name = safeName(listed?.filename ?? basename(m.path));
    const st = await stat(m.path).catch(() => undefined);
    if (!st?.isFile()) throw new FileGoneError(m.path, name);
    return { path: m.path, name };
  }

  async openFile(m: LocalFileMessage): Promise<void> {
    const f = await this.file(m);
    await this.deps.apis.openFile(f.path);
  }

  /** Asks where to save a copy (the workspace folder and the file's name by default) and copies the file there. */
  async saveFile(m: LocalFileMessage): Promise<string | undefined> {
    const f = await this.file(m);
    const folder = this.deps.apis.workspaceFolder();
    const target = await this.deps.apis.showSaveDialog({ title: `Save ${f.name} to the Workspace`, defaultPath: folder ? join(folder, f.name) : f.name });
    if (!target) return undefined;
    if (resolve(target) !== resolve(f.path)) await writeFileAtomic(target, { copyOf: f.path });
    return target;
  }

  async copyPath(m: LocalFileMessage): Promise<void> {
    const f = await this.file(m);
    await this.deps.apis.writeClipboard(f.path);
  }

  /** Execution `itemId`'s changeset and its change of `path` (a path it lists, as itself or as a rename's old name). */
  private change(itemId: string, path: string): { changes: FilesChanged; change: FileChange } {
    const changes = this.deps.execution(itemId)?.changes;
    const change = changes?.changes.find((c) => c.path === path || c.from === path);
    if (!changes || !change) throw new Error('That file is not one this execution changed.');
    return { changes, change };
  }

  /** The card's Diff: the file before the execution against the file now, in VS Code's diff editor. */
  async diffChange(m: { itemId: string; path: string }): Promise<void> {
    const { changes, change } = this.change(m.itemId, m.path);
    const before = change.kind === 'created' ? undefined : (change.from ?? change.path);
    // The file now, when it is still a plain file (not a link the code put there since).
    const now = change.kind === 'deleted' ? undefined : join(changes.root, change.path);
    const after = now && (await lstat(now).catch(() => undefined))?.isFile() ? now : undefined;
    // A file name is the code's: its invisible characters shown, on one line.
    // Review mode: the right side is the code's staged version, not the workspace's file.
    const right = changes.staged ? 'staged' : 'now';
    await this.deps.apis.diff(m.itemId, before, after, `${forDisplay(basename(change.path), { line: true })} (before the execution ↔ ${right})`);
  }

  /** The text of `path` as it was before execution `itemId` (the diff view's left side), from the rewind store. */
  async beforeText(itemId: string, path: string): Promise<string> {
    const { changes, change } = this.change(itemId, path);
    if (change.notRestorable) return `(The earlier content of this file was not kept: ${change.notRestorable}.)`;
    const digest = change.before?.digest;
    if (!changes.store || !digest || !DIGEST.test(digest)) return '(The earlier content of this file was not kept.)';
    // The store's folder is the item's (a saved conversation may say anything): no link followed, no FIFO waited on.
    const fh = await open(blobPath(changes.store, digest), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined);
    if (!fh) return '(The earlier content of this file is no longer kept: the window or session host that kept it has ended.)';
    try {
      const st = await fh.stat();
      if (!st.isFile()) return '(The earlier content of this file is no longer kept.)';
      const { size } = st;
      if (size > MAX_BEFORE_BYTES) return `(The earlier content is ${size.toLocaleString('en-US')} bytes: too large to show here.)`;
      const bytes = Buffer.alloc(size);
      const { bytesRead } = await fh.read(bytes, 0, size, 0);
      const text = bytes.subarray(0, bytesRead);
      return text.includes(0) ? `(A binary file of ${bytesRead.toLocaleString('en-US')} bytes.)` : text.toString('utf8');
    } finally {
      await fh.close();
    }
  }

  /** The changes of execution `itemId` that `paths` name (default: all of them); throws when none. */
  private changesNamed(m: { itemId: string; paths?: string[] }): { item: CodeInterpreterCallItem; named: FileChange[] } {
    const item = this.deps.execution(m.itemId);
    const all = item?.changes?.changes ?? [];
    const asked = m.paths && new Set(m.paths);
    const named = asked ? all.filter((c) => asked.has(c.path)) : all;
    if (!item || !named.length) throw new Error('Those files are not ones this execution changed.');
    return { item, named };
  }

  /**
   * The card's Revert: after the person confirms, the files (`paths` of the execution's changeset, or all) go back
   * as they were before it ran, in the runtime that kept them. Resolves with what was done (undefined: not confirmed).
   */
  async revertChanges(m: { itemId: string; paths?: string[] }): Promise<SettledRows | undefined> {
    const { item, named } = this.changesNamed(m);
    // A change whose earlier content was not kept is left as it is (its row says so).
    const chosen = named.filter((c) => !c.notRestorable);
    if (!chosen.length) throw new Error(`That cannot be reverted: ${named[0].notRestorable}.`);
    const runtime = this.deps.runtimeOf?.(item.session?.id);
    if (!runtime?.revertChanges) throw new Error('The runtime that ran this execution is gone, so its changes cannot be reverted any more.');
    const n = chosen.length;
    const ok = await this.deps.apis.confirm(
      `Revert ${n === 1 ? forDisplay(chosen[0].from ?? chosen[0].path, { line: true }) : `${n} files`} to before this execution?`,
      `${listOf(chosen)}\n\nFiles it created are removed; the others get their earlier content back. Changes made to them since are lost.`,
      'Revert',
    );
    if (!ok) return undefined;
    return settledRows(chosen, await runtime.revertChanges(m.itemId, changePaths(chosen)));
  }

  /**
   * Review mode's Keep: after the person confirms, the staged changes (`paths` of the execution's changeset, or all)
   * go into the workspace as the code's view has them now. Resolves with what was done (undefined: not confirmed).
   */
  async keepChanges(m: { itemId: string; paths?: string[] }): Promise<SettledRows | undefined> {
    const { item, named } = this.changesNamed(m);
    if (!item.changes?.staged) throw new Error('Those changes were not staged: they are in the workspace already.');
    const runtime = this.deps.runtimeOf?.(item.session?.id);
    if (!runtime?.staged)
      throw new Error(
        "The runtime that staged these changes is gone, so they can no longer be kept from here (CodeAct's log names the folder that holds them).",
      );
    const n = named.length;
    const ok = await this.deps.apis.confirm(
      `Keep ${n === 1 ? forDisplay(named[0].path, { line: true }) : `${n} files`} in the workspace?`,
      `${listOf(named)}\n\nThe workspace gets these files as the code's view has them now; files the code deleted are removed.`,
      'Keep',
    );
    if (!ok) return undefined;
    return settledRows(named, await runtime.staged.keep(changePaths(named)));
  }

  /** Redo points given to the page, by the card that got each (the page may name one back only from that card). */
  private readonly redos = new Map<string, string>();

  /**
   * The card's "Rewind to here" (or its Redo: `redo`, a point an earlier rewind from that card returned). The person
   * chooses what goes back: the code (the session's Python state and the workspace files, ../core/runtime/local/
   * checkpoints), the conversation (to before `turn`, the turn the execution ran in; the caller cuts it), or both; a
   * redo is of the code only. Resolves with what was done (undefined: cancelled); rejects when nothing could be.
   */
  async rewind(m: { itemId: string; redo?: string }, turn?: RewindTurn, ready?: (conversation: boolean) => void): Promise<Rewound | undefined> {
    const item = this.deps.execution(m.itemId);
    if (m.redo !== undefined && this.redos.get(m.redo) !== m.itemId) throw new Error('That redo is no longer available.');
    const runtime = item?.session ? this.deps.runtimeOf?.(item.session.id) : undefined;
    const noCode = !item?.session
      ? turn?.fromTurn
        ? 'this turn ran no code in a session.'
        : 'That execution ran in no session of this conversation, so there is no code state to rewind to.'
      : !runtime?.rewind
        ? 'The runtime that ran this execution keeps no checkpoints (only the local Python runtime does), or its session is gone.'
        : undefined;
    if (noCode && (m.redo !== undefined || !turn)) throw new Error(noCode);
    // With the conversation, the code goes back to where the conversation does: before the turn's first execution.
    const first = turn?.firstExecution && turn.firstExecution !== m.itemId ? this.deps.execution(turn.firstExecution) : undefined;
    const code =
      `Code: the Python session's variables, imports and open figures go back to how they were before ${turn?.fromTurn ? "this turn's first execution" : 'this execution'} ` +
      'ran, and the workspace files the code changed from then on are put back.' +
      (first?.session && !noCode
        ? ` With the conversation, the code goes back to before the turn's first execution (execution ${first.session.execution}).`
        : '');
    const message = turn && isMessage(turn.source);
    const said = turn ? `${message ? 'your message' : 'the run'} "${forDisplay(clip(turn.prompt, 80), { line: true })}"` : '';
    const convo = turn
      ? `Conversation: it goes back to before ${said} (turn ${turn.turn}); that turn and the ones after it are kept in History as ` +
        `"${forDisplay(turn.branchTitle, { line: true })}"${message ? ', and your message is put back in the chat box' : ''}.`
      : '';
    const choices = m.redo
      ? ['Redo']
      : [...(!noCode && turn ? [REWIND_CHOICES.both] : []), ...(!noCode ? [REWIND_CHOICES.code] : []), ...(turn ? [REWIND_CHOICES.conversation] : [])];
    const chosen = await this.deps.apis.choose(
      m.redo ? 'Redo: go back to the state just before the rewind?' : `Rewind to before this ${turn?.fromTurn ? (message ? 'message' : 'run') : 'execution'}?`,
      m.redo
        ? 'The Python session and the workspace files go back to how they were just before you rewound. The model is told when you next send a message.'
        : [
            noCode ? `The code cannot be rewound: ${noCode}` : code,
            convo,
            'The model is told what was rewound when you next send a message.',
            noCode ? '' : 'Not undone: calls to managed tools, network requests, files outside the workspace, processes still running.',
          ]
            .filter(Boolean)
            .join('\n\n'),
      choices,
    );
    if (!chosen || !choices.includes(chosen)) return undefined;
    const conversation = chosen === REWIND_CHOICES.both || chosen === REWIND_CHOICES.conversation;
    // Things may have moved while the person chose (a turn started): the caller says whether to go on.
    ready?.(conversation);
    if (chosen === REWIND_CHOICES.conversation) return { conversation, redone: false, lines: [] };
    const target = chosen === REWIND_CHOICES.both && first?.session ? first : item!;
    const outcome = await runtime!.rewind!(m.redo ?? target.id);
    if (m.redo) this.redos.delete(m.redo);
    if (outcome.redo) this.redos.set(outcome.redo, m.itemId);
    const what = m.redo ? 'the state just before its last rewind (a redo)' : `before execution ${target.session!.execution}`;
    return {
      conversation,
      outcome,
      redone: !!m.redo,
      lines: rewoundLines(outcome, (t) => forDisplay(t, { line: true })),
      note: rewindNote(outcome, what),
    };
  }

  /** Removes the temporary images. */
  async dispose(): Promise<void> {
    await rm(this.tempRoot, { recursive: true, force: true });
  }
}

/** A file name with nothing that could leave its folder. */
function safeName(name: string): string {
  const base = basename(name.replace(/\\/g, '/'))
    .replace(/[^\w.-]+/g, '_')
    .replace(/^\.+/, '');
  return base.slice(0, 100) || 'image';
}

/** The lines a confirmation lists (ten at most, then a count). */
export function listOf(changes: readonly FileChange[]): string {
  const listed = changes.slice(0, 10).map((c) => `• ${forDisplay(describeChange(c), { line: true })}`);
  if (changes.length > 10) listed.push(`• …and ${changes.length - 10} more`);
  return listed.join('\n');
}
