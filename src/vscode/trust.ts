/**
 * Workspace Trust: in an untrusted workspace CodeAct runs no code and ignores workspace-declared tools.
 * Every attempt explains why and offers "Manage Workspace Trust".
 */
import * as vscode from 'vscode';

export const MANAGE_TRUST = 'Manage Workspace Trust';

export function untrustedMessage(what: string): string {
  return `CodeAct: ${what} is disabled because this workspace is not trusted. Its settings could declare tools that run commands on your machine. Trust the workspace to allow it.`;
}

export function showUntrusted(what: string): void {
  void vscode.window.showWarningMessage(untrustedMessage(what), MANAGE_TRUST).then((choice) => {
    if (choice === MANAGE_TRUST) void vscode.commands.executeCommand('workbench.trust.manage');
  });
}
