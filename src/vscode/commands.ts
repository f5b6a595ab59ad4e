/**
 * The extension's commands (package.json `contributes.commands`): each one a line that hands over to the
 * part that does it. A command's failure is logged and shown; the controller's trust refusal is rendered
 * as the Workspace Trust warning.
 */
import * as vscode from 'vscode';
import { PROVIDER_CATALOG, providerInfo } from '../core/providers/shared/catalog';
import { MODELS_AS_OF } from '../common/providers';
import type { ChatPanels } from './chatPanel';
import { clearHistory, exportNotebook, NO_SESSION_TO_RESTART } from './dialogs';
import { vscodePanelHostApis } from './panelHost.apis';
import { continueCliConversation } from './continueConversation';
import { reviewStagedChanges } from './stagedReview';
import type { CodeActController } from './controller';
import type { McpSignIn } from './mcpAuth';
import type { PanelShare } from './mcpShare';
import type { CodeActNotebookKernel } from './notebook/kernel';
import type { PythonEnvironments } from './pythonEnv';
import type { InlineResults } from './runWithTools';
import type { Secrets } from './secrets';
import { showUntrusted } from './trust';
import { UntrustedWorkspaceError } from './untrusted';
import { forDisplay } from '../common/untrusted';

/** What the commands reach: the controller and the parts the composition root built around it. */
interface CommandTargets {
  log: vscode.LogOutputChannel;
  controller: CodeActController;
  secrets: Secrets;
  panels: ChatPanels;
  inline: InlineResults;
  notebooks: CodeActNotebookKernel;
  mcpSignIn: McpSignIn;
  pythonEnvs: PythonEnvironments;
  share: PanelShare;
}

export function registerCommands(context: vscode.ExtensionContext, t: CommandTargets): void {
  const { log, controller, secrets, panels, inline, notebooks, mcpSignIn, pythonEnvs, share } = t;
  // VS Code passes a command whatever its caller gave: each handler names what it expects.
  const command = <A extends unknown[]>(id: string, fn: (...args: A) => unknown) =>
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await fn(...(args as A));
        } catch (err) {
          if (err instanceof UntrustedWorkspaceError) return showUntrusted(err.what);
          log.error(`${id} failed: ${(err as Error).stack ?? err}`);
          void vscode.window.showErrorMessage(`CodeAct: ${forDisplay((err as Error).message)}`, 'Show Log').then((a) => a && log.show());
        }
      }),
    );

  command('codeact.openChat', () => panels.reveal());
  command('codeact.openChatInEditor', () => panels.openInEditor());
  command('codeact.runWithTools', (uri?: vscode.Uri, line?: number) =>
    inline.run(typeof line === 'number' ? line : undefined, uri instanceof vscode.Uri ? uri : undefined),
  );
  command('codeact.askWithTools', async () => {
    const editor = vscode.window.activeTextEditor;
    const selection = editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection) : '';
    const prompt = await vscode.window.showInputBox({
      title: 'CodeAct: Ask Agent with Tools',
      prompt: selection
        ? 'Ask about the selection; the agent can run Python with your managed tools.'
        : 'The agent answers by running Python with your managed tools.',
      placeHolder: 'e.g. Which orders are late, and what do they add up to?',
      ignoreFocusOut: true,
    });
    if (!prompt?.trim()) return;
    const text = selection ? `${prompt}\n\n\`\`\`${editor!.document.languageId}\n${selection}\n\`\`\`` : prompt;
    await panels.ask(text, true);
  });
  command('codeact.stop', () => controller.stop());
  // The notebook toolbar passes its editor's context ({ notebookEditor: { notebookUri } }); the palette, nothing.
  command('codeact.notebook.restart', (arg?: { notebookEditor?: { notebookUri?: unknown } } | vscode.Uri) => {
    const uri = arg instanceof vscode.Uri ? arg : arg?.notebookEditor?.notebookUri;
    return notebooks.restart(uri instanceof vscode.Uri ? uri : undefined);
  });
  command('codeact.showApproval', () => controller.showPendingApproval());
  command('codeact.restartSession', async (sessionId?: unknown) => {
    let id = typeof sessionId === 'string' ? sessionId : undefined;
    if (!id) {
      const live = controller.liveSessions();
      if (live.length > 1) {
        const pick = await vscode.window.showQuickPick(
          live.map((l) => ({ label: l.label, id: l.id })),
          { title: 'CodeAct: Restart Session', placeHolder: 'Which Python session? Its variables are lost.' },
        );
        if (!pick) return;
        id = pick.id;
      } else id = live[0]?.id;
    }
    const had = await controller.restartSession(id);
    void vscode.window.showInformationMessage(had ? 'CodeAct: the Python session was restarted; its variables are gone.' : `CodeAct: ${NO_SESSION_TO_RESTART}`);
  });
  command('codeact.setApiKey', async () => {
    const provider = await secrets.promptForKey();
    if (provider) void vscode.window.showInformationMessage(`CodeAct: the ${providerInfo(provider).label} key is saved in VS Code's secret storage.`);
  });
  command('codeact.clearApiKey', () => secrets.clearKey());
  command('codeact.setJupyterToken', () => secrets.promptForJupyterToken());
  command('codeact.mcpSignOut', () => mcpSignIn.signOut());
  command('codeact.selectModel', async () => {
    const current = controller.settings;
    const providers = PROVIDER_CATALOG.map((p) => ({ label: p.label, description: p.id === current.provider ? 'current' : undefined, id: p.id }));
    const p = await vscode.window.showQuickPick(providers, { title: 'CodeAct: Select Provider (1/2)', placeHolder: 'Which provider?' });
    if (!p) return;
    const items: (vscode.QuickPickItem & { custom?: boolean })[] = providerInfo(p.id).defaultModels.map((m) => ({
      label: m,
      description: m === current.model ? 'current' : undefined,
    }));
    items.push({ label: 'Other model…', custom: true, alwaysShow: true });
    const { label, firstParty } = providerInfo(p.id);
    // A first-party list is dated: newer models come as "Other model…" until the list learns them.
    const placeHolder = firstParty ? `A ${label} model (the list as of ${MODELS_AS_OF}; Other model… takes any id)` : `A ${label} model`;
    const m = await vscode.window.showQuickPick(items, { title: 'CodeAct: Select Model (2/2)', placeHolder });
    if (!m) return;
    const model = m.custom
      ? await vscode.window.showInputBox({
          title: 'Model id',
          prompt: `The exact model id ${providerInfo(p.id).modelIdFrom}`,
        })
      : m.label;
    if (!model) return;
    await vscodePanelHostApis.saveModel(p.id, model);
    const c = vscode.workspace.getConfiguration('codeact');
    // codeact.baseUrl is the setting's older name, still read (core/config/keys.ts).
    if (providerInfo(p.id).localServer && !c.get<string>('baseURL') && !c.get<string>('baseUrl')) {
      const url = await vscode.window.showInputBox({
        title: 'Server URL',
        value: 'http://localhost:11434/v1',
        prompt: 'Base URL of the OpenAI-compatible server (Ollama: http://localhost:11434/v1, vLLM: http://localhost:8000/v1)',
      });
      if (url) await c.update('baseURL', url, vscode.ConfigurationTarget.Global);
    } else if (!(await secrets.hasKey(p.id))) {
      const set = await vscode.window.showInformationMessage(`CodeAct: ${providerInfo(p.id).label} needs an API key.`, 'Set API Key…');
      if (set) await secrets.promptForKey(p.id);
    }
  });
  command('codeact.selectPythonEnvironment', () => pythonEnvs.select());
  command('codeact.showLog', () => log.show());
  command('codeact.newConversation', () => controller.newConversation());
  command('codeact.continueCliConversation', () => continueCliConversation(controller, () => panels.reveal()));
  command('codeact.reviewStaged', () =>
    reviewStagedChanges(
      controller.runtimes.all(),
      (l) => log.info(l),
      (e) => panels.stagedSettled(e),
    ),
  );
  command('codeact.mcp.chooseAgentSession', (choice?: unknown) => share.choose(choice));
  command('codeact.exportNotebook', () => exportNotebook(controller, vscodePanelHostApis));
  command('codeact.clearHistory', () => clearHistory(controller, vscodePanelHostApis));
  command('codeact.showTools', async () => {
    const { tools, errors } = controller.toolSet();
    const refused = controller.trustGate('Using workspace tools');
    if (refused) return showUntrusted(refused.what);
    const items: vscode.QuickPickItem[] = tools.map((t) => ({
      label: t.name,
      description: `${t.source}${t.approval !== 'auto' ? ` · ${t.approval}` : ''}`,
      detail: t.description,
    }));
    for (const e of errors) items.push({ label: `$(warning) codeact.tools[${e.index}]${e.name ? ` ${e.name}` : ''}`, detail: e.message });
    if (!items.length) items.push({ label: 'No managed tools declared', detail: 'Add codeact.tools to .vscode/settings.json' });
    const pick = await vscode.window.showQuickPick(items, { title: 'CodeAct: Managed Tools' });
    if (pick && !tools.some((t) => t.name === pick.label)) await vscode.commands.executeCommand('workbench.action.openWorkspaceSettingsFile');
  });
}
