/**
 * Workspace Trust: in an untrusted workspace CodeAct runs no code and ignores workspace-declared tools.
 * Every attempt explains why and offers "Manage Workspace Trust".
 */
import * as vscode from 'vscode';
import { MANAGE_TRUST, untrustedMessage } from './untrusted';

export function showUntrusted(what: string): void {
  void vscode.window.showWarningMessage(untrustedMessage(what), MANAGE_TRUST).then((choice) => {
    if (choice === MANAGE_TRUST) void vscode.commands.executeCommand('workbench.trust.manage');
  });
}
