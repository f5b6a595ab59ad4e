/**
 * Composition root of the extension: builds the controller and its parts, and registers the contributions
 * (the commands in ./vscode/commands). Nothing else.
 * The SDKs and the Jupyter client load lazily, when a conversation or a Jupyter run first needs them.
 */
import * as vscode from 'vscode';
import { ApprovalStatusBar } from './vscode/approvalStatus';
import { ChatPanels } from './vscode/chatPanel';
import { registerCommands } from './vscode/commands';
import type { CodeActController } from './vscode/controller';
import { registerChatParticipant, registerLanguageModelTool } from './vscode/lmTool';
import { registerMcpSignIn } from './vscode/mcpAuth';
import { registerMcpDefinitions } from './vscode/mcpDefinition';
import { PanelShare } from './vscode/mcpShare';
import { vscodeMcpSignInApis } from './vscode/mcpAuth.apis';
import { InlineResults } from './vscode/runWithTools';
import { Secrets } from './vscode/secrets';
import { createController } from './vscode/service';
import type { CodeActSettings } from './vscode/settings';
import { announcePythonChange, PythonEnvironments } from './vscode/pythonEnv';

/** What the extension returns from activate(): its start-up time, and read-only views for the in-VS-Code tests. */
export interface CodeActApi {
  activationMs: number;
  /** The configuration the engine uses now (resolved by the one policy both hosts share). */
  settings(): CodeActSettings;
  /** The chat panel (the view or the editor tab) is visible. */
  chatVisible(): boolean;
}

export function activate(context: vscode.ExtensionContext): CodeActApi {
  const t0 = performance.now();
  const log = vscode.window.createOutputChannel('CodeAct', { log: true });
  const secrets = new Secrets(context.secrets);
  const built = createController(context, log, secrets);
  const { controller, notebooks } = built;
  const mcpSignIn = registerMcpSignIn(vscodeMcpSignInApis(context.secrets), log);
  active = controller;
  const panels = new ChatPanels(context, controller, notebooks);
  const inline = new InlineResults(controller);
  const share = new PanelShare(controller, context.workspaceState, log);
  context.subscriptions.push(
    log,
    built,
    panels,
    inline,
    notebooks,
    new ApprovalStatusBar(controller),
    registerLanguageModelTool(controller),
    registerChatParticipant(controller, context),
    registerMcpDefinitions({
      cli: vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath,
      storage: context.globalStorageUri.fsPath,
      packageJSON: context.extension.packageJSON as Parameters<typeof registerMcpDefinitions>[0]['packageJSON'],
      log,
      share,
    }),
    share,
  );
  const pythonEnvs = new PythonEnvironments(log, () => controller.folders.current().folder);
  context.subscriptions.push(
    pythonEnvs,
    pythonEnvs.onDidChange(announcePythonChange),
    pythonEnvs.onDidChangeState(() => controller.fireState()),
  );
  // The status bar follows the folder the chat's turns run in (the panel's folder bar).
  let barFolder = controller.folders.current().folder;
  context.subscriptions.push(
    controller.onState(() => {
      const f = controller.folders.current().folder;
      if (f === barFolder) return;
      barFolder = f;
      pythonEnvs.refresh();
    }),
  );

  registerCommands(context, { log, controller, secrets, panels, inline, notebooks, mcpSignIn, pythonEnvs, share });

  void vscode.commands.executeCommand('setContext', 'codeact.running', false);
  const activationMs = Math.round((performance.now() - t0) * 100) / 100;
  log.info(`CodeAct activated in ${activationMs} ms (workspace ${vscode.workspace.isTrusted ? 'trusted' : 'NOT trusted: execution disabled'})`);
  return { activationMs, settings: () => controller.settings, chatVisible: () => controller.panelVisible() };
}

let active: CodeActController | undefined;

/** Awaited by VS Code: a conversation's Jupyter kernel is left running for the next window; other sessions and MCP servers are shut down. */
export function deactivate(): Promise<void> | undefined {
  return active?.shutdown();
}
