/**
 * The seam between the panel's message handlers (./panelHost), the dialogs the panel and the commands share
 * (./dialogs) and VS Code: the little of the `vscode` API they use, as an interface, and its implementation
 * bound to `vscode`. The logic imports only the types, so test/vscode/ runs it in plain Node with fakes.
 */
import * as vscode from 'vscode';
import { saveToUri } from './saveToUri';
import { folderUri } from './settings';
import { showUntrusted } from './trust';

/** Where "Save As" starts and what it offers. */
export interface SaveAsOptions {
  /** The folder the suggested file is in: the first of these fs paths that is a workspace folder (none: VS Code's choice). */
  folders: Array<string | undefined>;
  /** The suggested file name. */
  name: string;
  title: string;
  /** Filter name -> extensions, for example `{ 'Jupyter Notebook': ['ipynb'] }`. */
  filters?: Record<string, string[]>;
}

export interface PanelHostApis {
  executeCommand(command: string, ...args: unknown[]): PromiseLike<unknown>;
  /** The provider and model, saved in the user's settings (both pickers: the panel's and Select Model). */
  saveModel(provider: string, model: string): PromiseLike<void>;
  writeClipboard(text: string): PromiseLike<void>;
  /** Puts code at the active editor's selection, or in a new Python editor when none is open. */
  insertCode(code: string): PromiseLike<void>;
  /** Opens text in an untitled editor (a preview). */
  openText(content: string, language: string): PromiseLike<void>;
  /** Runs a task under a progress notification. */
  withProgress<T>(title: string, task: () => PromiseLike<T>): PromiseLike<T>;
  /** Asks where to save, then writes the bytes there whole (./saveToUri): the target's URI, or undefined when the person cancelled. */
  saveAs(options: SaveAsOptions, bytes: () => Uint8Array): PromiseLike<string | undefined>;
  /** Opens a URI in its editor (`viewType`: with that one, falling back to a text editor). */
  openUri(uri: string, viewType?: string): PromiseLike<void>;
  /** A URI as the person reads it: relative to its workspace folder. */
  relativePath(uri: string): string;
  openExternal(href: string): PromiseLike<unknown>;
  /** A warning (`modal`: a dialog): the button pressed, or undefined when dismissed. */
  showWarningMessage(message: string, options: { modal: boolean }, ...items: string[]): PromiseLike<string | undefined>;
  showInformationMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
  /** The Workspace Trust refusal, with "Manage Workspace Trust" (./trust). */
  showUntrusted(what: string): void;
}

export const vscodePanelHostApis: PanelHostApis = {
  executeCommand: (command, ...args) => vscode.commands.executeCommand(command, ...args),
  saveModel: async (provider, model) => {
    const c = vscode.workspace.getConfiguration('codeact');
    await c.update('provider', provider, vscode.ConfigurationTarget.Global);
    await c.update('model', model, vscode.ConfigurationTarget.Global);
  },
  writeClipboard: (text) => vscode.env.clipboard.writeText(text),
  insertCode: async (code) => {
    const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
    if (!editor) {
      const doc = await vscode.workspace.openTextDocument({ language: 'python', content: code });
      await vscode.window.showTextDocument(doc);
      return;
    }
    await editor.edit((b) => b.replace(editor.selection, code));
  },
  openText: async (content, language) => {
    const doc = await vscode.workspace.openTextDocument({ content, language });
    await vscode.window.showTextDocument(doc, { preview: true });
  },
  withProgress: (title, task) => vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, task),
  saveAs: async (o, bytes) => {
    const folder = o.folders.map(folderUri).find((u) => u !== undefined);
    const target = await vscode.window.showSaveDialog({
      defaultUri: folder ? vscode.Uri.joinPath(folder, o.name) : undefined,
      ...(o.filters ? { filters: o.filters } : {}),
      title: o.title,
    });
    if (!target) return undefined;
    await saveToUri(vscode.workspace.fs, target, bytes());
    return target.toString();
  },
  openUri: async (uri, viewType) => {
    const target = vscode.Uri.parse(uri);
    if (!viewType) await vscode.commands.executeCommand('vscode.open', target);
    else await vscode.commands.executeCommand('vscode.openWith', target, viewType).then(undefined, () => vscode.window.showTextDocument(target));
  },
  relativePath: (uri) => vscode.workspace.asRelativePath(vscode.Uri.parse(uri)),
  openExternal: (href) => vscode.env.openExternal(vscode.Uri.parse(href)),
  showWarningMessage: (message, options, ...items) => vscode.window.showWarningMessage(message, options, ...items),
  showInformationMessage: (message, ...items) => vscode.window.showInformationMessage(message, ...items),
  showUntrusted,
};
