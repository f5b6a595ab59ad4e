/**
 * Which Python session VS Code's agent uses through CodeAct's MCP server definition (issue 36, point 3: "where the
 * panel's conversation is open it can share that session; the person chooses").
 *
 * By default the definition (./mcpDefinition) starts `codeact mcp serve`, whose MCP sessions have Python sessions of
 * their own. When the person chooses the panel's open conversation (CodeAct: Choose the Python Session of VS Code's
 * Agent (MCP)…, remembered per workspace), the definition is instead the server of ./mcpShareServer in this extension
 * host, whose runs are turns of that conversation.
 */
import * as vscode from 'vscode';
import type { CodeActController } from './controller';
import { PANEL_SESSION, servePanelShare, type PanelShareServer } from './mcpShareServer';

/** The workspace-state key of the person's choice. */
const CHOICE_KEY = 'codeact.mcp.agentSession';
type Choice = 'own' | 'panel';

export class PanelShare implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  /** The choice changed: the definitions are provided again. */
  readonly onDidChange = this.changed.event;
  private server?: Promise<PanelShareServer>;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly controller: CodeActController,
    private readonly state: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('codeact')) void this.server?.then((s) => s.refresh()).catch(() => {});
      }),
    );
  }

  /** Whether the person chose the panel's open conversation for VS Code's agent. */
  get active(): boolean {
    return this.state.get<Choice>(CHOICE_KEY) === 'panel';
  }

  /** Asks the person which session VS Code's agent uses (or takes `choice`: a keybinding's argument, a test's). */
  async choose(choice?: unknown): Promise<void> {
    if (choice !== 'own' && choice !== 'panel') {
      const now = this.active ? 'panel' : 'own';
      const items: Array<vscode.QuickPickItem & { choice: Choice }> = [
        {
          choice: 'own',
          label: 'A Python session of its own',
          description: now === 'own' ? 'current' : '',
          detail: "Each MCP session of VS Code's agent gets a sandboxed Python session of its own; the panel does not show its runs.",
        },
        {
          choice: 'panel',
          label: "The panel's open conversation",
          description: now === 'panel' ? 'current' : '',
          detail: "Its code runs in the Python session of the conversation open in the CodeAct panel, as turns the panel shows, with the panel's approvals.",
        },
      ];
      const picked = await vscode.window.showQuickPick(items, { title: "Which Python session should VS Code's agent use through CodeAct's MCP server?" });
      if (!picked) return;
      choice = picked.choice;
    }
    if ((choice === 'panel') === this.active) return;
    await this.state.update(CHOICE_KEY, choice);
    if (choice === 'own') await this.stop();
    this.log.info(`VS Code's agent now runs CodeAct code in ${choice === 'panel' ? PANEL_SESSION : 'Python sessions of its own'} (MCP).`);
    this.changed.fire();
    void vscode.window.showInformationMessage(
      choice === 'panel'
        ? "VS Code's agent now runs its CodeAct code in the panel's open conversation: VS Code lists that server as “CodeAct: panel conversation” (MCP: List Servers)."
        : "VS Code's agent now runs its CodeAct code in Python sessions of its own.",
    );
  }

  /** The server's address and token (started at the first ask; a failed start is tried again at the next). */
  start(): Promise<PanelShareServer> {
    this.server ??= servePanelShare(this.controller).then(
      (s) => (this.log.info(`CodeAct MCP server for VS Code's agent, sharing ${PANEL_SESSION}: ${s.url}`), s),
      (e: unknown) => {
        this.server = undefined;
        throw e;
      },
    );
    return this.server;
  }

  private async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    await (await s?.catch(() => undefined))?.close();
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.changed.dispose();
    void this.stop();
  }
}
