/**
 * The status bar while a run waits for the person's approval: "CodeAct: approve "send_note"?", which opens
 * the approval (its card in the panel, or a modal dialog when the panel is hidden). The run's clock is paused
 * meanwhile, so nothing times out behind the person's back; this makes sure they know they are waited for.
 */
import * as vscode from 'vscode';
import type { CodeActController } from './controller';

export class ApprovalStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('codeact.approval', vscode.StatusBarAlignment.Left, 1000);
  private readonly listener: vscode.Disposable;

  constructor(private readonly controller: CodeActController) {
    this.item.name = 'CodeAct Approval';
    this.item.command = 'codeact.showApproval';
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    this.listener = controller.onState(() => this.update());
    this.update();
  }

  private update(): void {
    const pending = this.controller.pendingApprovals();
    if (!pending.length) {
      this.item.hide();
      return;
    }
    const first = pending[0];
    const what = first.kind === 'code' ? 'the code' : first.kind === 'install' ? 'installing packages' : `"${first.name}"`;
    this.item.text = `$(shield) CodeAct: approve ${what}?${pending.length > 1 ? ` (+${pending.length - 1})` : ''}`;
    this.item.tooltip = `CodeAct waits for your approval of ${what}; its time does not count against the timeout. Click to open it.`;
    this.item.show();
  }

  dispose(): void {
    this.listener.dispose();
    this.item.dispose();
  }
}
