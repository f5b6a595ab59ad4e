/**
 * The seam between the panel's output actions (./panelOutputs) and VS Code: the save dialog, opening a file
 * in an editor (VS Code's image preview for images), the clipboard and the workspace folder, as an interface,
 * and its implementation bound to `vscode`. Files are read and written with node:fs, for real, in tests too.
 */
import * as vscode from 'vscode';

export interface SaveDialogOptions {
  /** The suggested file: a folder and a name. */
  defaultPath?: string;
  title: string;
  /** Filter name -> extensions, for example `{ 'PNG image': ['png'] }`. */
  filters?: Record<string, string[]>;
}

export interface PanelOutputsApis {
  /** The path the user picked, or undefined when they cancelled. */
  showSaveDialog(options: SaveDialogOptions): PromiseLike<string | undefined>;
  /** Opens a file in an editor tab (`vscode.open`; `viewType`: with that editor, for example the image preview). */
  openFile(path: string, viewType?: string): PromiseLike<void>;
  writeClipboard(text: string): PromiseLike<void>;
  /** The chat's workspace folder, where saving suggests to put things. */
  workspaceFolder(): string | undefined;
  /** Asks the person (a modal warning) to confirm `action`; true when they chose it. */
  confirm(message: string, detail: string, action: string): PromiseLike<boolean>;
  /** Asks the person (a modal warning) to choose one of `actions`; undefined when they cancelled. */
  choose(message: string, detail: string, actions: readonly string[]): PromiseLike<string | undefined>;
  /**
   * VS Code's diff editor: left, a file's bytes before execution `itemId` (`before`: its path in the changeset;
   * undefined: it did not exist), right, the file now (`after`: a host path; undefined: it is gone).
   */
  diff(itemId: string, before: string | undefined, after: string | undefined, title: string): PromiseLike<void>;
}

/** The scheme of the read-only documents that show a file as it was before an execution (`codeact-before:/<path>?item=<id>`). */
const BEFORE_SCHEME = 'codeact-before';

/** Serves {@link BEFORE_SCHEME} documents from `read(itemId, path)` (path '' with no item: an empty document). */
export function registerBeforeDocuments(read: (itemId: string, path: string) => Promise<string>): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, {
    provideTextDocumentContent: async (uri) => {
      const itemId = new URLSearchParams(uri.query).get('item');
      if (!itemId) return '';
      try {
        return await read(itemId, uri.path.replace(/^\//, ''));
      } catch (err) {
        return `(${(err as Error).message})`;
      }
    },
  });
}

const beforeUri = (itemId: string | undefined, rel: string) =>
  vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${rel}`, query: itemId ? `item=${encodeURIComponent(itemId)}` : '' });

/**
 * VS Code's diff editor between two files on this machine (`before`, `after`: host paths; undefined: none, an empty
 * side), for review mode's staged files: the workspace's version and the code's.
 */
export async function stagedDiff(before: string | undefined, after: string | undefined, rel: string, title: string): Promise<void> {
  const side = (p: string | undefined) => (p !== undefined ? vscode.Uri.file(p) : beforeUri(undefined, rel));
  await vscode.commands.executeCommand('vscode.diff', side(before), side(after), title, { preview: true });
}

export const vscodePanelOutputsApis: PanelOutputsApis = {
  showSaveDialog: async (o) => {
    const uri = await vscode.window.showSaveDialog({
      title: o.title,
      ...(o.defaultPath ? { defaultUri: vscode.Uri.file(o.defaultPath) } : {}),
      ...(o.filters ? { filters: o.filters } : {}),
    });
    return uri?.fsPath;
  },
  openFile: async (path, viewType) => {
    const uri = vscode.Uri.file(path);
    if (viewType) await vscode.commands.executeCommand('vscode.openWith', uri, viewType, { preview: true });
    else await vscode.commands.executeCommand('vscode.open', uri, { preview: true });
  },
  writeClipboard: (text) => vscode.env.clipboard.writeText(text),
  workspaceFolder: () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
  confirm: async (message, detail, action) => (await vscode.window.showWarningMessage(message, { modal: true, detail }, action)) === action,
  choose: (message, detail, actions) => vscode.window.showWarningMessage(message, { modal: true, detail }, ...actions),
  diff: async (itemId, before, after, title) => {
    const rel = before ?? after ?? 'file';
    const left = before !== undefined ? beforeUri(itemId, before) : beforeUri(undefined, rel);
    const right = after !== undefined ? vscode.Uri.file(after) : beforeUri(undefined, rel);
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
  },
};
