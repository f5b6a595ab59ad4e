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
};
