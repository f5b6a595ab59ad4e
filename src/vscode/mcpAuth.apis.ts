/**
 * The seam between MCP sign-in in VS Code (./mcpAuth) and the `vscode` API it uses: notifications, the
 * browser, the clipboard, port forwarding in remote windows, the quick pick, SecretStorage.
 */
import * as vscode from 'vscode';
import type { McpSecretStore } from '../core/tools/sources/mcp/authStore';

export interface McpSignInApis {
  secrets: McpSecretStore;
  appName: string;
  /** The remote's kind in a remote window (ssh-remote, wsl, dev-container…), else undefined. */
  remoteName: string | undefined;
  showInformationMessage(message: string, ...items: string[]): Thenable<string | undefined>;
  showWarningMessage(message: string, ...items: string[]): Thenable<string | undefined>;
  showErrorMessage(message: string): Thenable<unknown>;
  withProgress<T>(title: string, task: () => Promise<T>): Thenable<T>;
  openExternal(url: string): Thenable<boolean>;
  /** The URI the local browser reaches a loopback URI of this (maybe remote) machine at. */
  asExternalUri(url: string): Thenable<string>;
  writeClipboard(text: string): Thenable<void>;
  pickMany<T extends { label: string; description?: string }>(items: T[], options: { title: string; placeHolder: string }): Thenable<T[] | undefined>;
}

export function vscodeMcpSignInApis(storage: vscode.SecretStorage): McpSignInApis {
  return {
    secrets: {
      get: async (k) => (await storage.get(k)) ?? undefined,
      set: (k, v) => Promise.resolve(storage.store(k, v)),
      delete: (k) => Promise.resolve(storage.delete(k)),
    },
    appName: vscode.env.appName,
    remoteName: vscode.env.remoteName,
    showInformationMessage: (m, ...items) => vscode.window.showInformationMessage(m, ...items),
    showWarningMessage: (m, ...items) => vscode.window.showWarningMessage(m, ...items),
    showErrorMessage: (m) => vscode.window.showErrorMessage(m),
    withProgress: (title, task) => vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, task),
    openExternal: (url) => vscode.env.openExternal(vscode.Uri.parse(url, true)),
    asExternalUri: async (url) => (await vscode.env.asExternalUri(vscode.Uri.parse(url, true))).toString(true),
    writeClipboard: (text) => vscode.env.clipboard.writeText(text),
    pickMany: (items, options) => vscode.window.showQuickPick(items, { ...options, canPickMany: true }),
  };
}
