/**
 * CodeAct settings read through VS Code's configuration layers and resolved by the one policy both hosts
 * share: Workspace Trust, a first-party base URL only from user settings, approvals only stricter from
 * a workspace (core/config/resolve.ts). In a multi-root workspace each folder's settings (its
 * `.vscode/settings.json`, over the `.code-workspace` file's, over the user's) are read for that folder.
 */
import * as vscode from 'vscode';
import { resolveEngineConfig, type EngineConfig, type ResolvedConfig } from '../core/config/resolve';
import { vscodeReader } from './settingsReader';

/** The engine's configuration, resolved by the one policy both hosts share (core/config/resolve.ts). */
export type CodeActSettings = EngineConfig;

/** The workspace folder whose fs path is `folder` (undefined: none, or it is no longer in the workspace). */
export function folderUri(folder: string | undefined): vscode.Uri | undefined {
  if (folder === undefined) return undefined;
  return vscode.workspace.workspaceFolders?.find((f) => f.uri.fsPath === folder)?.uri;
}

/**
 * The settings for a folder (an fs path; undefined: the first folder). VS Code's Workspace Trust is the
 * window's: one answer for every folder of a multi-root workspace.
 */
export function resolveSettings(folder?: string): ResolvedConfig {
  // codeact.tools and the other resource-scoped settings are read for the folder the tools run in.
  const scope = folderUri(folder) ?? vscode.workspace.workspaceFolders?.[0]?.uri;
  const c = vscode.workspace.getConfiguration('codeact', scope);
  return resolveEngineConfig(vscodeReader(c), { trusted: vscode.workspace.isTrusted });
}

/** The workspace's folders, in order: name and fs path. */
export function workspaceFolders(): Array<{ name: string; path: string }> {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, path: f.uri.fsPath }));
}

/** The folder a document belongs to (its workspace folder's fs path), if any. */
export function folderOf(uri: vscode.Uri): string | undefined {
  return vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath;
}
