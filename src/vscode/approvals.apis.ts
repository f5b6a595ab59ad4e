/**
 * The seam between the approvals (./approvals) and VS Code: the modal dialog and the user's
 * `codeact.approval.alwaysAllow`, as an interface, and its implementation bound to `vscode`.
 */
import * as vscode from 'vscode';
import type { ElicitInputApis } from './elicitQuickInput';

export interface ApprovalsApis {
  /** A warning with buttons; resolves with the one picked (undefined: dismissed). */
  showWarningMessage(message: string, options: { modal: boolean; detail?: string }, ...items: string[]): PromiseLike<string | undefined>;
  /** `codeact.approval.alwaysAllow` as VS Code merges its layers. */
  alwaysAllowed(): string[];
  /** Saves `codeact.approval.alwaysAllow` in the user's settings. */
  saveAlwaysAllowed(names: string[]): PromiseLike<void>;
  /** Opens `content` in a read-only editor (what an approval dialog could not show). */
  showFullText(content: string, language: 'json' | 'python'): PromiseLike<void>;
  /** Quick inputs for an MCP server's form when the panel cannot show it (absent: such forms are cancelled). */
  elicitInput?: ElicitInputApis;
  /** An approved install made `<folder>/.venv`: `codeact.python.path` at that folder's scope (the setting wins over any other choice). */
  savePythonPath?(folder: string, python: string): PromiseLike<void>;
}

/** `codeact-approval:` documents: what approval dialogs could not show (the latest few, in memory). */
class ApprovalDocuments implements vscode.TextDocumentContentProvider {
  private static readonly KEEP = 16;
  private readonly texts = new Map<string, string>();
  private registered = false;
  private next = 0;

  add(content: string, language: 'json' | 'python'): vscode.Uri {
    if (!this.registered) {
      // Registered once, on first use, for the life of the extension host.
      vscode.workspace.registerTextDocumentContentProvider('codeact-approval', this);
      this.registered = true;
    }
    const uri = vscode.Uri.from({ scheme: 'codeact-approval', path: `/approval-${++this.next}.${language === 'json' ? 'json' : 'py'}` });
    this.texts.set(uri.toString(), content);
    for (const key of this.texts.keys()) {
      if (this.texts.size <= ApprovalDocuments.KEEP) break;
      this.texts.delete(key);
    }
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? 'This approval is over; its text is no longer kept.';
  }
}

const approvalDocuments = new ApprovalDocuments();

function token(signal: AbortSignal): vscode.CancellationToken {
  const source = new vscode.CancellationTokenSource();
  if (signal.aborted) source.cancel();
  else signal.addEventListener('abort', () => source.cancel(), { once: true });
  return source.token;
}

const vscodeElicitInputApis: ElicitInputApis = {
  showInformationMessage: (message, options, ...items) => vscode.window.showInformationMessage(message, options, ...items),
  showQuickPick: (items, options, signal) =>
    options.canPickMany
      ? vscode.window.showQuickPick(items, { title: options.title, placeHolder: options.placeHolder, canPickMany: true, ignoreFocusOut: true }, token(signal))
      : vscode.window.showQuickPick(items, { title: options.title, placeHolder: options.placeHolder, ignoreFocusOut: true }, token(signal)),
  showInputBox: (options, signal) => vscode.window.showInputBox({ ...options, ignoreFocusOut: true }, token(signal)),
};

export const vscodeApprovalsApis: ApprovalsApis = {
  elicitInput: vscodeElicitInputApis,
  showWarningMessage: (message, options, ...items) => vscode.window.showWarningMessage(message, options, ...items),
  alwaysAllowed: () => vscode.workspace.getConfiguration('codeact').get<string[]>('approval.alwaysAllow', []),
  saveAlwaysAllowed: (names) => vscode.workspace.getConfiguration('codeact').update('approval.alwaysAllow', names, vscode.ConfigurationTarget.Global),
  savePythonPath: (folder, python) => {
    const wf = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(folder));
    const multi = (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
    return vscode.workspace
      .getConfiguration('codeact', wf?.uri)
      .update('python.path', python, wf && multi ? vscode.ConfigurationTarget.WorkspaceFolder : vscode.ConfigurationTarget.Workspace);
  },
  // A virtual document (read-only, never asks to be saved); VS Code's editor shows its invisible and
  // bidirectional characters itself.
  showFullText: async (content, language) => {
    const doc = await vscode.workspace.openTextDocument(approvalDocuments.add(content, language));
    await vscode.window.showTextDocument(doc, { preview: true });
  },
};
