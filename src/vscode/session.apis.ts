/**
 * The seam between the session (./session, ./workspaceTools) and VS Code: the little of the `vscode` API
 * they use, as an interface, and its implementation bound to `vscode`. The logic imports only the types,
 * so test/vscode/ runs it in plain Node with fakes.
 */
import * as vscode from 'vscode';
import type { ResolvedConfig } from '../core/config/resolve';
import { resolveSettings, workspaceFolder } from './settings';
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

export interface SessionApis {
  /** The `codeact.*` settings through VS Code's layers, resolved by the one policy (./settings). */
  resolveSettings(): ResolvedConfig;
  /** Workspace Trust. */
  isTrusted(): boolean;
  /** The folder command tools run in: the first workspace folder. */
  workspaceFolder(): string | undefined;
  showWarningMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
  showErrorMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
  executeCommand(command: string, ...args: unknown[]): PromiseLike<unknown>;
}

export const vscodeSessionApis: SessionApis = {
  resolveSettings: () => resolveSettings(),
  isTrusted: () => vscode.workspace.isTrusted,
  workspaceFolder,
  showWarningMessage: (message, ...items) => vscode.window.showWarningMessage(message, ...items),
  showErrorMessage: (message, ...items) => vscode.window.showErrorMessage(message, ...items),
  executeCommand: (command, ...args) => vscode.commands.executeCommand(command, ...args),
};

/** Everything the session is built from: where it saves, and its seams to VS Code (real ones in ./service, fakes in tests). */
export interface SessionDeps {
  /** The folder conversations are saved in. */
  storeDir: string;
  /** The extension's version, for the panel. */
  version: string;
  log: Log;
  secrets: Pick<Secrets, 'apiKey' | 'hasKey' | 'jupyterToken'>;
  apis: SessionApis;
  approvalsApis: ApprovalsApis;
  runtimeApis: RuntimeCacheApis;
  lmTools: LmToolApis;
  /** Where the open conversation is remembered across reloads (the workspace's state); none: not remembered. */
  workspaceState?: Memento;
}
