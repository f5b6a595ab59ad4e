/**
 * The chat panel's host side: the activity-bar webview view `codeact.chat`, and the same page in an
 * editor tab (`codeact.chatPanel`, restored after reload by a serializer). One controller per webview:
 * a ready handshake, append-only event batches (at most one post per frame), and every incoming message
 * checked by `parseWebviewMessage` before anything acts on it.
 */
import * as vscode from 'vscode';
import { saveToUri } from './saveToUri';
import { logsOf } from '../common/events';
import { createEventBatcher, timerScheduler, type EventBatcher } from '../common/eventBatcher';
import { parseWebviewMessage } from '../common/protocolCheck';
import { PROTOCOL_VERSION, type HostCommand, type HostState, type HostToWebview, type TranscriptScroll, type WebviewToHost } from '../common/protocol';
import { conversationToNotebook } from '../common/notebook';
import { forDisplay } from '../common/untrusted';
import { randomToken } from '../core/util/ids';
import type { ProviderId } from '../core/providers/shared/types';
import { FileGoneError, PanelOutputs } from './panelOutputs';
import { vscodePanelOutputsApis } from './panelOutputs.apis';
import type { CodeActController } from './controller';
import type { CodeActNotebookKernel } from './notebook/kernel';
import { showUntrusted, untrustedMessage, MANAGE_TRUST } from './trust';
import { buildWebviewHtml, createNonce } from './webviewHtml';
import { folderUri } from './settings';
import { StatePosts } from './hostStateCache';

export const VIEW_ID = 'codeact.chat';
export const PANEL_TYPE = 'codeact.chatPanel';

const COMMANDS: Record<HostCommand, (setting?: string) => Thenable<unknown>> = {
  setApiKey: () => vscode.commands.executeCommand('codeact.setApiKey'),
  selectModel: () => vscode.commands.executeCommand('codeact.selectModel'),
  declareTools: () => vscode.commands.executeCommand('workbench.action.openWorkspaceSettingsFile'),
  // At the setting a failure names (codeact.baseURL, codeact.model…), or all of CodeAct's.
  openSettings: (setting) => vscode.commands.executeCommand('workbench.action.openSettings', setting ?? '@ext:codeact.codeact'),
  showLog: () => vscode.commands.executeCommand('codeact.showLog'),
  manageTrust: () => vscode.commands.executeCommand('workbench.trust.manage'),
  openWalkthrough: () => vscode.commands.executeCommand('workbench.action.openWalkthrough', 'codeact.codeact#codeact.gettingStarted', false),
};

class PanelController implements vscode.Disposable {
  private readonly batcher: EventBatcher;
  private readonly disposables: vscode.Disposable[] = [];
  private ready = false;
  private pendingInput?: { text: string; send: boolean };
  /** The host state is posted when it changed, not each time something might have changed it. */
  private readonly states = new StatePosts<HostState>();

  constructor(
    private readonly webview: vscode.Webview,
    private readonly extensionUri: vscode.Uri,
    private readonly codeact: CodeActController,
    readonly isVisible: () => boolean,
    private readonly outputs: PanelOutputs,
    private readonly notebooks: CodeActNotebookKernel,
  ) {
    webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')] };
    this.batcher = createEventBatcher((m) => this.post(m), timerScheduler(16), { conversationId: codeact.currentConversation?.id, epoch: randomToken(8) });
    this.disposables.push(
      webview.onDidReceiveMessage((raw) => this.onMessage(raw)),
      codeact.onEvent((e) => {
        if (this.batcher.conversationId !== codeact.currentConversation?.id) this.resetTranscript();
        else this.batcher.push(e);
      }),
      codeact.onState(() => this.pushState().catch((e) => codeact.log.error(`panel: state update failed: ${(e as Error).message}`))),
      codeact.onVariables((v) => {
        if (this.ready)
          this.post({
            type: 'variables',
            ...(v.sessionId ? { sessionId: v.sessionId } : {}),
            ...(v.label ? { label: v.label } : {}),
            variables: v.summary?.variables ?? [],
            total: v.summary?.total ?? 0,
            ...(v.note ? { note: v.note } : {}),
          });
      }),
    );
    this.render().catch((e) => codeact.log.error(`panel: could not render: ${(e as Error).message}`));
  }

  private async render(): Promise<void> {
    const nonce = createNonce();
    const asUri = (...p: string[]) => this.webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, ...p)).toString();
    this.webview.html = buildWebviewHtml({
      cspSource: this.webview.cspSource,
      nonce,
      scriptUri: asUri('dist', 'webview.js'),
      styleUri: asUri('dist', 'webview.css'),
      title: 'CodeAct',
      initialState: await this.codeact.hostState(),
    });
  }

  private post(message: HostToWebview): void {
    void this.webview.postMessage(message);
  }

  private async pushState(): Promise<void> {
    if (!this.ready) return;
    if (this.batcher.conversationId !== this.codeact.currentConversation?.id) this.resetTranscript();
    const state = await this.states.changed(() => this.codeact.hostState());
    if (state) this.post({ type: 'state', state });
  }

  private resetTranscript(): void {
    const convo = this.codeact.currentConversation;
    this.batcher.reset(convo?.id, 0);
    this.post({
      type: 'reset',
      conversationId: convo?.id,
      title: convo?.meta.title,
      seq: 0,
      events: convo ? [...convo.events] : [],
      epoch: this.batcher.epoch,
      ...this.scrollOf(convo?.id),
    });
  }

  /** The batches the page missed, or the whole transcript (`reset`) when they are gone or the page asks for it all. */
  private catchUp(seq: number, conversationId: string | undefined, epoch: string | undefined, full = false): void {
    // A page whose seq is of another epoch (it was last in sync with an extension host that has since
    // restarted) gets the whole transcript: the new host's seq 0 is not the old host's.
    const replay = full ? undefined : this.batcher.replaySince(seq, conversationId, epoch);
    if (replay && conversationId === this.codeact.currentConversation?.id) for (const m of replay) this.post(m);
    else {
      const convo = this.codeact.currentConversation;
      this.batcher.flush();
      this.post({
        type: 'reset',
        conversationId: convo?.id,
        title: convo?.meta.title,
        seq: this.batcher.seq,
        events: convo ? [...convo.events] : [],
        epoch: this.batcher.epoch,
        ...this.scrollOf(convo?.id),
      });
    }
  }

  private scrollOf(id: string | undefined): { scroll?: TranscriptScroll } {
    const scroll = this.codeact.memory.scrollOf(id);
    return scroll ? { scroll } : {};
  }

  private async onMessage(raw: unknown): Promise<void> {
    const m = parseWebviewMessage(raw);
    if (!m) {
      this.codeact.log.warn(`panel: ignored a malformed message ${JSON.stringify(raw)?.slice(0, 200)}`);
      return;
    }
    try {
      await this.handle(m);
    } catch (err) {
      const message = (err as Error).message;
      this.codeact.log.error(`panel: ${m.type} failed: ${message}`);
      this.post({ type: 'notice', level: 'error', message });
    }
  }

  private async handle(m: WebviewToHost): Promise<void> {
    const s = this.codeact;
    switch (m.type) {
      case 'ready': {
        this.ready = true;
        this.post({ type: 'init', protocol: PROTOCOL_VERSION, state: await this.states.initial(() => s.hostState()) });
        this.catchUp(m.seq, m.conversationId, m.epoch, m.full === true);
        void s.refreshVariables();
        // A reload brought the conversation back, but not its Python session: said once.
        const restored = s.memory.takeNotice();
        if (restored) this.post({ type: 'notice', level: 'info', message: restored });
        // (An untrusted workspace is shown by the page's own empty state, from HostState.trusted.)
        if (this.pendingInput) {
          this.post({ type: 'setInput', ...this.pendingInput });
          this.pendingInput = undefined;
        }
        return;
      }
      case 'resync':
        this.catchUp(m.seq, m.conversationId, m.epoch);
        return;
      case 'scrolled':
        s.memory.rememberScroll(m.conversationId, m.scroll);
        return;
      case 'send': {
        // Asked before the notebook's part of the turn is made; the refusal is the controller's (its send asks again).
        const refused = s.trustGate('Running code', 'prompt');
        if (refused) {
          this.post({ type: 'notice', level: 'warning', message: untrustedMessage(refused.what), actions: [{ label: MANAGE_TRUST, command: 'manageTrust' }] });
          return;
        }
        await s.send(m.text, 'chat', s.settings.mode === 'hosted' ? undefined : { notebook: this.notebooks.turn() });
        return;
      }
      case 'notebook.target':
        this.notebooks.setTarget(m.uri, m.on);
        return;
      case 'notebook.useKernel':
        await this.notebooks.useKernel(m.uri);
        return;
      case 'notebook.reveal':
        await this.notebooks.revealCell(m.uri, m.itemId);
        return;
      case 'workspace.folder':
        s.pickFolder(m.path);
        return;
      case 'python.select':
        await vscode.commands.executeCommand('codeact.selectPythonEnvironment');
        return;
      case 'stop':
        s.stop();
        return;
      case 'selectModel': {
        const c = vscode.workspace.getConfiguration('codeact');
        await c.update('provider', m.provider as ProviderId, vscode.ConfigurationTarget.Global);
        await c.update('model', m.model, vscode.ConfigurationTarget.Global);
        return;
      }
      case 'command':
        await COMMANDS[m.command](m.setting);
        return;
      case 'approval':
        s.approvals.resolve(m.approvalId, m.decision, m.code);
        return;
      case 'elicitation':
        s.approvals.elicitations.answer(m.elicitationId, m.action, m.content);
        return;
      case 'copy':
        await vscode.env.clipboard.writeText(m.text);
        return;
      case 'insertCode': {
        const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
        if (!editor) {
          const doc = await vscode.workspace.openTextDocument({ language: 'python', content: m.code });
          await vscode.window.showTextDocument(doc);
          return;
        }
        await editor.edit((b) => b.replace(editor.selection, m.code));
        return;
      }
      case 'runCode': {
        const refused = s.trustGate('Running code with tools');
        if (refused) return showUntrusted(refused.what);
        await s.runCode(m.code, 'Run again with tools', 'chat');
        return;
      }
      case 'openFullOutput': {
        const item = s.fullOutput(m.itemId);
        if (!item) throw new Error('That output is no longer available.');
        const text = logsOf(item, m.stream ?? 'both');
        const doc = await vscode.workspace.openTextDocument({ content: text, language: 'log' });
        await vscode.window.showTextDocument(doc, { preview: true });
        return;
      }
      case 'openFile': {
        const { bytes, filename } = await vscode.window.withProgress(
          {
            location: vscode.ProgressLocation.Notification,
            title: `CodeAct: downloading ${forDisplay(m.file.filename ?? m.file.file_id ?? 'the file', { line: true })}…`,
          },
          () => s.downloadHostedFile(m.file),
        );
        const folder = folderUri(s.folders.current().folder);
        const target = await vscode.window.showSaveDialog({
          defaultUri: folder ? vscode.Uri.joinPath(folder, filename) : undefined,
          title: 'Save the file from the sandbox',
        });
        if (!target) return;
        await saveToUri(vscode.workspace.fs, target, bytes);
        await vscode.commands.executeCommand('vscode.open', target);
        return;
      }
      case 'image.open':
        await this.outputs.openImage(m);
        return;
      case 'image.save':
        await this.outputs.saveImage(m);
        return;
      case 'file.open':
      case 'file.save':
      case 'file.copyPath':
        try {
          if (m.type === 'file.open') await this.outputs.openFile(m);
          else if (m.type === 'file.save') await this.outputs.saveFile(m);
          else await this.outputs.copyPath(m);
        } catch (err) {
          if (!(err instanceof FileGoneError)) throw err;
          this.post({ type: 'file.missing', itemId: m.itemId, path: m.path, message: err.message });
          this.post({ type: 'notice', level: 'warning', message: err.message });
        }
        return;
      case 'openLink':
        await vscode.env.openExternal(vscode.Uri.parse(m.href));
        return;
      case 'newConversation':
        s.newConversation();
        return;
      case 'history.list':
        this.post({ type: 'history', conversations: s.listConversations() });
        return;
      case 'history.open': {
        const { notice } = s.openConversation(m.conversationId);
        if (notice) this.post({ type: 'notice', level: 'info', message: notice });
        return;
      }
      case 'restartSession': {
        const had = await s.restartSession(m.sessionId);
        if (!had) this.post({ type: 'notice', level: 'info', message: 'There was no live session to restart: the next run starts a new one.' });
        return;
      }
      case 'variables.refresh':
        await s.refreshVariables();
        return;
      case 'history.delete':
        s.deleteConversation(m.conversationId);
        this.post({ type: 'history', conversations: s.listConversations() });
        return;
      case 'history.clear': {
        const ok = await vscode.window.showWarningMessage('Delete every CodeAct conversation?', { modal: true }, 'Delete All');
        if (ok) s.clearHistory();
        this.post({ type: 'history', conversations: s.listConversations() });
        return;
      }
      case 'exportNotebook':
        await exportNotebook(s, m.conversationId);
        return;
      case 'webviewError':
        s.log.error(`panel: ${m.message}`);
        return;
    }
  }

  setInput(text: string, send = false): void {
    if (this.ready) this.post({ type: 'setInput', text, send });
    else this.pendingInput = { text, send };
  }

  dispose(): void {
    this.batcher.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

export async function exportNotebook(controller: CodeActController, conversationId?: string): Promise<void> {
  const convo =
    conversationId && conversationId !== controller.currentConversation?.id ? controller.store.open(conversationId) : controller.currentConversation;
  if (!convo) {
    void vscode.window.showInformationMessage('CodeAct: there is no conversation to export yet.');
    return;
  }
  const folder = folderUri(convo.meta.workspace) ?? vscode.workspace.workspaceFolders?.[0]?.uri;
  const safe =
    convo.meta.title
      .replace(/[^\w -]+/g, '')
      .trim()
      .slice(0, 40) || 'conversation';
  const target = await vscode.window.showSaveDialog({
    defaultUri: folder ? vscode.Uri.joinPath(folder, `${safe}.ipynb`) : undefined,
    filters: { 'Jupyter Notebook': ['ipynb'] },
    title: 'Export Conversation as Notebook',
  });
  if (!target) return;
  const nb = conversationToNotebook(convo.events, {
    title: convo.meta.title,
    provider: convo.meta.provider,
    model: convo.meta.model,
    maxImagePixels: controller.settings.maxImagePixels,
  });
  await saveToUri(vscode.workspace.fs, target, new TextEncoder().encode(JSON.stringify(nb, null, 1) + '\n'));
  const open = await vscode.window.showInformationMessage(`CodeAct: exported to ${vscode.workspace.asRelativePath(target)}.`, 'Open');
  if (open) await vscode.commands.executeCommand('vscode.openWith', target, 'jupyter-notebook').then(undefined, () => vscode.window.showTextDocument(target));
}

/** Registers the view, the editor-tab panel and its serializer; keeps track of which page is visible. */
export class ChatPanels implements vscode.Disposable, vscode.WebviewViewProvider, vscode.WebviewPanelSerializer {
  private view?: { view: vscode.WebviewView; controller: PanelController };
  private pendingAsk?: { text: string; send: boolean };
  private panel?: { panel: vscode.WebviewPanel; controller: PanelController };
  private readonly disposables: vscode.Disposable[] = [];
  /** Images opened from either page, written to one temporary folder (removed when the extension stops). */
  private readonly outputs: PanelOutputs;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly codeact: CodeActController,
    private readonly notebooks: CodeActNotebookKernel,
  ) {
    this.disposables.push(
      vscode.window.registerWebviewViewProvider(VIEW_ID, this, { webviewOptions: { retainContextWhenHidden: false } }),
      vscode.window.registerWebviewPanelSerializer(PANEL_TYPE, this),
    );
    codeact.panelVisible = () => !!(this.view?.view.visible || this.panel?.panel.visible);
    this.outputs = new PanelOutputs({
      apis: { ...vscodePanelOutputsApis, workspaceFolder: () => codeact.folders.current().folder },
      execution: (id) => codeact.fullOutput(id),
      maxImagePixels: () => codeact.settings.maxImagePixels,
    });
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view?.controller.dispose();
    const controller = new PanelController(view.webview, this.context.extensionUri, this.codeact, () => view.visible, this.outputs, this.notebooks);
    this.view = { view, controller };
    if (this.pendingAsk) {
      controller.setInput(this.pendingAsk.text, this.pendingAsk.send);
      this.pendingAsk = undefined;
    }
    view.onDidDispose(() => {
      controller.dispose();
      if (this.view?.view === view) this.view = undefined;
    });
  }

  async deserializeWebviewPanel(panel: vscode.WebviewPanel): Promise<void> {
    this.adoptPanel(panel);
  }

  private adoptPanel(panel: vscode.WebviewPanel): void {
    this.panel?.controller.dispose();
    panel.iconPath = vscode.Uri.joinPath(this.context.extensionUri, 'media', 'codeact.svg');
    const controller = new PanelController(panel.webview, this.context.extensionUri, this.codeact, () => panel.visible, this.outputs, this.notebooks);
    this.panel = { panel, controller };
    panel.onDidDispose(() => {
      controller.dispose();
      if (this.panel?.panel === panel) this.panel = undefined;
    });
  }

  async reveal(): Promise<void> {
    if (this.panel) {
      this.panel.panel.reveal();
      return;
    }
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }

  openInEditor(): void {
    if (this.panel) return this.panel.panel.reveal();
    const panel = vscode.window.createWebviewPanel(PANEL_TYPE, 'CodeAct', vscode.ViewColumn.Beside, {
      enableScripts: true,
      retainContextWhenHidden: false,
      localResourceRoots: [vscode.Uri.joinPath(this.context.extensionUri, 'dist'), vscode.Uri.joinPath(this.context.extensionUri, 'media')],
    });
    this.adoptPanel(panel);
  }

  /** Puts text in the input box of the visible page (Ask Agent with Tools…). */
  async ask(text: string, send: boolean): Promise<void> {
    await this.reveal();
    const target = this.panel?.controller ?? this.view?.controller;
    if (target) target.setInput(text, send);
    else this.pendingAsk = { text, send };
  }

  dispose(): void {
    this.view?.controller.dispose();
    this.panel?.controller.dispose();
    for (const d of this.disposables) d.dispose();
    void this.outputs.dispose();
  }
}
