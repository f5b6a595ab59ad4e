/**
 * The extension's engine service, composed: the session (./session: conversations, turns, stop) with its
 * parts bound to VS Code through the `*.apis.ts` seams, the secrets, and the listeners that keep the
 * panel's state current. The chat panel, Run with Tools, the LM tool and the chat participant all go
 * through it, so they stream the same events.
 */
import * as vscode from 'vscode';
import { disposeDefaultMcpPool } from '../core/tools/sources/mcp/pool';
import { vscodeApprovalsApis } from './approvals.apis';
import { vscodeLmToolApis } from './lmToolSource.apis';
import { vscodeRuntimeCacheApis } from './runtimeCache.apis';
import type { Secrets } from './secrets';
import type { HostState } from '../common/protocol';
import type { CodeActNotebookKernel } from './notebook/kernel';
import { CodeActController } from './controller';
import { pythonStateOf } from './hostState';
import { knownPythonEnv } from './pythonEnv';
import { vscodeControllerApis } from './controller.apis';

export class CodeActService extends CodeActController implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  /** The notebook kernel, once registered: the panel's turns can work in the open notebook. */
  notebooks?: CodeActNotebookKernel;
  /** The walkthrough step "Declare managed tools" (`<extension id>#<walkthrough>#<step>`), marked done once per window. */
  private readonly toolsStepId: string;
  private toolsStepMarked = false;

  constructor(context: vscode.ExtensionContext, log: vscode.LogOutputChannel, secrets: Secrets) {
    super({
      storeDir: vscode.Uri.joinPath(context.globalStorageUri, 'conversations').fsPath,
      version: String(context.extension.packageJSON.version ?? ''),
      log,
      secrets,
      apis: vscodeControllerApis,
      approvalsApis: vscodeApprovalsApis,
      runtimeApis: vscodeRuntimeCacheApis,
      lmTools: vscodeLmToolApis,
      workspaceState: context.workspaceState,
    });
    this.toolsStepId = `${context.extension.id}#codeact.gettingStarted#declareTools`;
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('codeact')) {
          // The runtime is rebuilt lazily when its own settings changed (the runtime cache compares a key), and never
          // under a running turn: saving "Always allow" or picking a model must not kill the code that asked.
          if (e.affectsConfiguration('codeact.tools') && !this.busy) void disposeDefaultMcpPool();
          this.fireState();
        }
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.fireState()),
      // Multi-root: a removed folder's runtime goes; the folder bar follows the folders and the active editor.
      vscode.workspace.onDidChangeWorkspaceFolders((e) => {
        for (const f of e.removed) void this.runtimes.disposeFolder(f.uri.fsPath);
        this.fireState();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.editorFolderChanged()),
      vscode.window.onDidChangeActiveNotebookEditor(() => this.editorFolderChanged()),
      secrets.onDidChange(() => this.fireState()),
      secrets,
    );
    this.fireState();
  }

  /**
   * Also the walkthrough: its "Declare managed tools" step completes once tools exist. The step's
   * `onContext:codeact.hasTools` completion event only counts a change of the key seen after the walkthrough
   * was registered (a key that is already true then is never counted), so the step is also marked done directly.
   */
  override fireState(): void {
    super.fireState();
    const hasTools = this.toolSet().tools.length > 0;
    void vscode.commands.executeCommand('setContext', 'codeact.hasTools', hasTools);
    // (Undefined only while the base class's constructor runs.)
    if (hasTools && !this.toolsStepMarked && this.toolsStepId !== undefined) {
      this.toolsStepMarked = true;
      void Promise.resolve(vscode.commands.executeCommand('welcome.markStepComplete', this.toolsStepId)).catch(() => undefined);
    }
  }

  private lastBar = '';
  /** The active editor changed: the folder bar is told when the folder a new turn would take changed. */
  private editorFolderChanged(): void {
    const bar = JSON.stringify(this.folders.state() ?? null);
    if (bar === this.lastBar) return;
    this.lastBar = bar;
    this.fireState();
  }

  /** Also the notebook the chat's turns work in, and the interpreter the folder's code runs with. */
  override async hostState(): Promise<HostState> {
    return { ...(await super.hostState()), notebook: this.notebooks?.state() ?? null, python: pythonStateOf(knownPythonEnv(this.folders.current().folder)) };
  }

  dispose(): void {
    void this.shutdown();
    for (const d of this.disposables) d.dispose();
  }
}
