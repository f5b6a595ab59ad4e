/**
 * The seam between the controller (./controller, ./workspaceTools) and VS Code: the little of the `vscode` API
 * they use, as an interface, and its implementation bound to `vscode`. The logic imports only the types,
 * so test/vscode/ runs it in plain Node with fakes.
 */
import * as vscode from 'vscode';
import type { HostState } from '../common/protocol';
import type { ResolvedConfig } from '../core/config/resolve';
import { folderOf, resolveSettings, workspaceFolders } from './settings';
import type { FolderApis } from './chatFolder';
import type { ApprovalsApis } from './approvals.apis';
import type { LmToolApis } from './lmToolSource.apis';
import type { RuntimeCacheApis } from './runtimeCache.apis';
import type { Secrets } from './secrets';

/** The extension's log (a `LogOutputChannel`). */
export interface Log {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  show(): void;
}

/** A run's cancellation from VS Code (a chat request's or a tool invocation's `CancellationToken`). */
export interface CancellationToken {
  onCancellationRequested(listener: () => void): { dispose(): void };
}

/** A key-value store that outlives the window: the workspace's state (`ExtensionContext.workspaceState`). */
export interface Memento {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}

export interface ControllerApis extends FolderApis {
  /** The `codeact.*` settings through VS Code's layers for a folder (fs path; none: the first), resolved by the one policy (./settings). */
  resolveSettings(folder?: string): ResolvedConfig;
  /** The `codeact.*` settings, Workspace Trust or the workspace folders changed: resolved settings are stale (./hostStateCache). */
  onDidChangeSettings(listener: () => void): { dispose(): void };
  /** Workspace Trust (the window's: every folder of a multi-root workspace shares it). */
  isTrusted(): boolean;
  /** The workspace folder (fs path) of a document's URI string, if it is in one. */
  folderOfUri?(uri: string): string | undefined;
  showWarningMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
  showErrorMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
  /** A notification that needs no answer. */
  showInformationMessage(message: string): void;
  executeCommand(command: string, ...args: unknown[]): PromiseLike<unknown>;
}

/** The folder of the last editor (text or notebook) whose file is in a workspace folder. */
let lastEditorFolder: string | undefined;

export const vscodeControllerApis: ControllerApis = {
  resolveSettings: (folder) => resolveSettings(folder),
  onDidChangeSettings: (listener) =>
    vscode.Disposable.from(
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('codeact') && listener()),
      vscode.workspace.onDidGrantWorkspaceTrust(() => listener()),
      vscode.workspace.onDidChangeWorkspaceFolders(() => listener()),
    ),
  isTrusted: () => vscode.workspace.isTrusted,
  folders: workspaceFolders,
  folderOfUri: (uri) => folderOf(vscode.Uri.parse(uri)),
  activeEditorFolder: () => {
    const uri = vscode.window.activeTextEditor?.document.uri ?? vscode.window.activeNotebookEditor?.notebook.uri;
    const folder = uri && folderOf(uri);
    if (folder !== undefined) lastEditorFolder = folder;
    return lastEditorFolder;
  },
  showWarningMessage: (message, ...items) => vscode.window.showWarningMessage(message, ...items),
  showErrorMessage: (message, ...items) => vscode.window.showErrorMessage(message, ...items),
  showInformationMessage: (message) => void vscode.window.showInformationMessage(message),
  executeCommand: (command, ...args) => vscode.commands.executeCommand(command, ...args),
};

/** Everything the controller is built from: where it saves, and its seams to VS Code (real ones in ./service, fakes in tests). */
export interface ControllerDeps {
  /** The folder conversations are saved in. */
  storeDir: string;
  /** The extension's version, for the panel. */
  version: string;
  log: Log;
  secrets: Pick<Secrets, 'apiKey' | 'hasKey' | 'jupyterToken' | 'onDidChange'>;
  apis: ControllerApis;
  approvalsApis: ApprovalsApis;
  runtimeApis: RuntimeCacheApis;
  lmTools: LmToolApis;
  /** Where the open conversation is remembered across reloads (the workspace's state); none: not remembered. */
  workspaceState?: Memento;
  /** The panel's state only VS Code has: the notebook the chat's turns work in, the folder's interpreter (none: neither). */
  hostExtras?: () => Pick<HostState, 'notebook' | 'python'>;
}
