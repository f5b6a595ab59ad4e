/**
 * The chat panel's host side: the activity-bar webview view `codeact.chat`, and the same page in an
 * editor tab (`codeact.chatPanel`, restored after reload by a serializer). One controller per webview: it
 * renders the page and hands its messages to a ./panelHost (the handshake, the event batches, the handler
 * of each message), which reaches VS Code through ./panelHost.apis.
 */
import * as vscode from 'vscode';
import { PanelOutputs } from './panelOutputs';
import { registerBeforeDocuments, vscodePanelOutputsApis } from './panelOutputs.apis';
import type { CodeActController } from './controller';
import type { CodeActNotebookKernel } from './notebook/kernel';
import { PanelHost } from './panelHost';
import { vscodePanelHostApis } from './panelHost.apis';
import type { StagedSettled } from './stagedReview';
import { buildWebviewHtml, createNonce } from './webviewHtml';

export const VIEW_ID = 'codeact.chat';
export const PANEL_TYPE = 'codeact.chatPanel';

class PanelController implements vscode.Disposable {
  private readonly host: PanelHost;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly webview: vscode.Webview,
    private readonly extensionUri: vscode.Uri,
    private readonly codeact: CodeActController,
    readonly isVisible: () => boolean,
    outputs: PanelOutputs,
    notebooks: CodeActNotebookKernel,
  ) {
    webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')] };
    this.host = new PanelHost({ codeact, notebooks, outputs, apis: vscodePanelHostApis, post: (m) => void webview.postMessage(m) });
    this.disposables.push(webview.onDidReceiveMessage((raw) => this.host.onMessage(raw)));
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

  setInput(text: string, send = false): void {
    this.host.setInput(text, send);
  }

  stagedSettled(e: StagedSettled): void {
    this.host.stagedSettled(e);
  }

  dispose(): void {
    this.host.dispose();
    for (const d of this.disposables) d.dispose();
  }
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
      runtimeOf: (sessionId) => codeact.runtimes.of(sessionId),
    });
    this.disposables.push(registerBeforeDocuments((itemId, path) => this.outputs.beforeText(itemId, path)));
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

  /** Files kept or reverted by Review Staged Changes: each page marks the rows of its cards that list them. */
  stagedSettled(e: StagedSettled): void {
    this.view?.controller.stagedSettled(e);
    this.panel?.controller.stagedSettled(e);
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
