/**
 * The extension's controller (./controller: conversations, turns, stop, trust), built from the VS Code
 * seams (the `*.apis.ts` files), with what only VS Code has: the notebook kernel, the listeners that keep
 * the panel's state current, and the walkthrough step. The chat panel, Run with Tools, the LM tool and the
 * chat participant all go through the one controller, so they stream the same events.
 */
import * as vscode from 'vscode';
import { disposeDefaultMcpPool } from '../core/tools/sources/mcp/pool';
import { vscodeApprovalsApis } from './approvals.apis';
import { vscodeLmToolApis } from './lmToolSource.apis';
import { vscodeRuntimeCacheApis } from './runtimeCache.apis';
import type { Secrets } from './secrets';
import { CodeActNotebookKernel } from './notebook/kernel';
import { CodeActController } from './controller';
import { pythonStateOf } from './hostState';
import { knownPythonEnv } from './pythonEnv';
import { vscodeControllerApis } from './controller.apis';

interface ExtensionController extends vscode.Disposable {
  controller: CodeActController;
  /** The notebook kernel: the panel's turns can work in the open notebook. */
  notebooks: CodeActNotebookKernel;
}

export function createController(context: vscode.ExtensionContext, log: vscode.LogOutputChannel, secrets: Secrets): ExtensionController {
  // The kernel needs the controller, and the panel's state the kernel (made next, before any state is read).
  const controller: CodeActController = new CodeActController({
    storeDir: vscode.Uri.joinPath(context.globalStorageUri, 'conversations').fsPath,
    version: String(context.extension.packageJSON.version ?? ''),
    log,
    secrets,
    apis: vscodeControllerApis,
    approvalsApis: vscodeApprovalsApis,
    runtimeApis: vscodeRuntimeCacheApis,
    lmTools: vscodeLmToolApis,
    workspaceState: context.workspaceState,
    hostExtras: () => ({ notebook: notebooks.state() ?? null, python: pythonStateOf(knownPythonEnv(controller.folders.current().folder)) }),
  });
  const notebooks = new CodeActNotebookKernel(controller, context.extension.id);

  // The active editor changed: the folder bar is told when the folder a new turn would take changed.
  let lastBar = '';
  const editorFolderChanged = () => {
    const bar = JSON.stringify(controller.folders.state() ?? null);
    if (bar === lastBar) return;
    lastBar = bar;
    controller.fireState();
  };
  const disposables: vscode.Disposable[] = [
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('codeact')) {
        // The runtime is rebuilt lazily when its own settings changed (the runtime cache compares a key), and never
        // under a running turn: saving "Always allow" or picking a model must not kill the code that asked.
        if (e.affectsConfiguration('codeact.tools') && !controller.busy) void disposeDefaultMcpPool();
        controller.fireState();
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => controller.fireState()),
    // Multi-root: a removed folder's runtime goes; the folder bar follows the folders and the active editor.
    vscode.workspace.onDidChangeWorkspaceFolders((e) => {
      for (const f of e.removed) controller.folderRemoved(f.uri.fsPath);
      controller.fireState();
    }),
    vscode.window.onDidChangeActiveTextEditor(editorFolderChanged),
    vscode.window.onDidChangeActiveNotebookEditor(editorFolderChanged),
    secrets.onDidChange(() => controller.fireState()),
    secrets,
    walkthroughToolsStep(context, controller),
  ];
  controller.fireState();
  return {
    controller,
    notebooks,
    dispose: () => {
      void controller.shutdown();
      for (const d of disposables) d.dispose();
    },
  };
}

/**
 * The walkthrough's "Declare managed tools" step completes once tools exist. The step's
 * `onContext:codeact.hasTools` completion event only counts a change of the key seen after the walkthrough
 * was registered (a key that is already true then is never counted), so the step is also marked done directly.
 */
function walkthroughToolsStep(context: vscode.ExtensionContext, controller: CodeActController): vscode.Disposable {
  // `<extension id>#<walkthrough>#<step>`, marked done once per window.
  const stepId = `${context.extension.id}#codeact.gettingStarted#declareTools`;
  let marked = false;
  return controller.onState(() => {
    const hasTools = controller.toolSet().tools.length > 0;
    void vscode.commands.executeCommand('setContext', 'codeact.hasTools', hasTools);
    if (hasTools && !marked) {
      marked = true;
      void Promise.resolve(vscode.commands.executeCommand('welcome.markStepComplete', stepId)).catch(() => undefined);
    }
  });
}
