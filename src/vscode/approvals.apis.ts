/**
 * The seam between the approvals (./approvals) and VS Code: the modal dialog and the user's
 * `codeact.approval.alwaysAllow`, as an interface, and its implementation bound to `vscode`.
 */
import * as vscode from 'vscode';

export interface ApprovalsApis {
  /** A warning with buttons; resolves with the one picked (undefined: dismissed). */
  showWarningMessage(message: string, options: { modal: boolean; detail?: string }, ...items: string[]): PromiseLike<string | undefined>;
  /** `codeact.approval.alwaysAllow` as VS Code merges its layers. */
  alwaysAllowed(): string[];
  /** Saves `codeact.approval.alwaysAllow` in the user's settings. */
  saveAlwaysAllowed(names: string[]): PromiseLike<void>;
  /** Opens `content` in a read-only editor (what an approval dialog could not show). */
  showFullText(content: string, language: 'json' | 'python'): PromiseLike<void>;
}

export const vscodeApprovalsApis: ApprovalsApis = {
  showWarningMessage: (message, options, ...items) => vscode.window.showWarningMessage(message, options, ...items),
  alwaysAllowed: () => vscode.workspace.getConfiguration('codeact').get<string[]>('approval.alwaysAllow', []),
  saveAlwaysAllowed: (names) => vscode.workspace.getConfiguration('codeact').update('approval.alwaysAllow', names, vscode.ConfigurationTarget.Global),
  // An untitled document, made read-only for the session: VS Code's editor shows its invisible and
  // bidirectional characters itself.
  showFullText: async (content, language) => {
    const doc = await vscode.workspace.openTextDocument({ language, content });
    await vscode.window.showTextDocument(doc, { preview: true });
    await vscode.commands.executeCommand('workbench.action.files.setActiveEditorReadonlyInSession');
  },
};
