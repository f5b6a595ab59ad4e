/**
 * The CodeAct notebook kernel: a `NotebookController` labelled "CodeAct" for Jupyter notebooks, offered
 * in the kernel picker. A notebook that selects it runs its cells in a CodeAct session of its own (the
 * local guest, or a Jupyter kernel with codeact.runtime "jupyter"), with the same sandbox, trust, tools
 * and approvals as every other run (./kernelRunner, through the extension's controller). Interrupt is VS
 * Code's toolbar button; "CodeAct: Restart Notebook Session" is on the notebook toolbar.
 *
 * It is also how the agent works in the open notebook (./agentTarget): the panel asks `turn()` for the
 * active notebook, whose executions become cells inserted after the selected cell, in one undoable edit.
 */
import * as vscode from 'vscode';
import type { NotebookTargetState } from '../../common/protocol';
import type { CodeActController } from '../controller';
import { notebookNote, notebookTurnRuntime, otherKernelNote, type DigestCell, type FinishedCell, type NotebookTurn } from './agentTarget';
import { ERROR_MIME, STDERR_MIME, STDOUT_MIME, type CellOutputData, type OutputItemData } from './cellOutputs';
import { NotebookKernels, type CellBatch, type CellExecution } from './kernelRunner';
import { forDisplay } from '../../common/untrusted';
import { isJson, isText } from '../../common/mimeTypes';

const CONTROLLER_ID = 'codeact-kernel';
const NOTEBOOK_TYPE = 'jupyter-notebook';
/** The kernelspec an exported conversation names: a notebook that has it prefers this kernel. */
const KERNELSPEC_NAME = 'codeact';

const decoder = new TextDecoder();

/** A `NotebookCellExecution` as ./kernelRunner drives it. */
function cellExecution(exec: vscode.NotebookCellExecution): CellExecution {
  const outputs: vscode.NotebookCellOutput[] = [];
  const items = (list: OutputItemData[]) => list.map((i) => new vscode.NotebookCellOutputItem(i.data, i.mime));
  return {
    // A cell that never ran (stopped while it waited) gets no number and no duration.
    start(order) {
      if (order > 0) exec.executionOrder = order;
      exec.start(order > 0 ? Date.now() : undefined);
    },
    end: (success) => exec.end(success, exec.executionOrder ? Date.now() : undefined),
    // Only a cell that has outputs: clearing an empty one still makes the ipynb support edit its metadata (an
    // undo step of its own in front of an inserted cell's).
    clearOutput: async () => {
      if (exec.cell.outputs.length) await exec.clearOutput();
    },
    async appendOutput(o: CellOutputData) {
      const out = new vscode.NotebookCellOutput(items(o.items), o.metadata);
      await exec.appendOutput(out);
      outputs.push(out);
      return outputs.length - 1;
    },
    appendOutputItems: (h, list) => exec.appendOutputItems(items(list), outputs[h]),
    replaceOutputItems: (h, list) => exec.replaceOutputItems(items(list), outputs[h]),
  };
}

function nameOf(nb: vscode.NotebookDocument): string {
  return nb.uri.path.split('/').pop() || nb.uri.toString();
}

/** The cell's CodeAct metadata (in the ipynb cell's `metadata.codeact`). */
function codeactMeta(cell: vscode.NotebookCell): Record<string, unknown> | undefined {
  const m = (cell.metadata as { metadata?: { codeact?: unknown } } | undefined)?.metadata?.codeact;
  return m && typeof m === 'object' ? (m as Record<string, unknown>) : undefined;
}

/** VS Code's own stream and error items: text, as the text and JSON types of the MIME catalogue are. */
const NOTEBOOK_TEXT: readonly string[] = [STDOUT_MIME, STDERR_MIME, ERROR_MIME];

/** A cell as the model reads it (./agentTarget's digest). */
function digestCell(cell: vscode.NotebookCell): DigestCell {
  const outputs = cell.outputs.map((o) => ({
    items: o.items.map((i) => ({
      mime: i.mime,
      bytes: i.data.byteLength,
      text: isText(i.mime) || isJson(i.mime) || NOTEBOOK_TEXT.includes(i.mime) ? decoder.decode(i.data.subarray(0, 64 * 1024)) : undefined,
    })),
  }));
  return {
    kind: cell.kind === vscode.NotebookCellKind.Code ? 'code' : 'markdown',
    source: cell.document.getText(),
    outputs,
    executionOrder: cell.executionSummary?.executionOrder,
    agent: codeactMeta(cell)?.author === 'agent',
  };
}

export class CodeActNotebookKernel implements vscode.Disposable {
  readonly controller: vscode.NotebookController;
  readonly kernels: NotebookKernels;
  /** The notebooks (by URI) that selected this kernel. */
  private readonly selected = new Set<string>();
  /** The notebook the chat's turns work in: the active one, or the last one active while it stays visible. */
  private active?: vscode.NotebookDocument;
  /** The person switched the target off for this notebook (by URI). */
  private readonly targetOff = new Set<string>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly codeact: CodeActController,
    private readonly extensionId: string,
  ) {
    this.kernels = new NotebookKernels({
      run: (code, o) => codeact.runNotebookCode(code, o),
      restart: (id) => codeact.endNotebookSession(id, 'restart'),
      close: async (id) => void (await codeact.endNotebookSession(id, 'close')),
      log: (line) => codeact.log.info(line),
      maxImagePixels: () => codeact.settings.maxImagePixels,
    });
    const c = (this.controller = vscode.notebooks.createNotebookController(CONTROLLER_ID, NOTEBOOK_TYPE, 'CodeAct'));
    c.description = 'Python with your managed tools';
    c.detail = 'Runs the cells in a CodeAct session: the sandboxed local Python, or Jupyter when codeact.runtime is "jupyter". Cells can await call_tool(...).';
    c.supportedLanguages = ['python'];
    c.supportsExecutionOrder = true;
    c.executeHandler = (cells, nb) => this.execute(cells, nb);
    c.interruptHandler = (nb) => this.kernels.get(nb.uri.toString())?.interrupt();
    this.disposables.push(
      c,
      c.onDidChangeSelectedNotebooks(({ notebook, selected }) => {
        if (selected) this.selected.add(notebook.uri.toString());
        else this.selected.delete(notebook.uri.toString());
        void vscode.commands.executeCommand('setContext', 'codeact.notebookKernel', this.selected.size > 0);
        codeact.fireState();
      }),
      vscode.workspace.onDidOpenNotebookDocument((nb) => this.prefer(nb)),
      vscode.workspace.onDidCloseNotebookDocument((nb) => {
        this.selected.delete(nb.uri.toString());
        if (this.active === nb) this.active = undefined;
        void this.kernels.closed(nb.uri.toString());
        codeact.fireState();
      }),
      vscode.window.onDidChangeActiveNotebookEditor(() => this.trackActive()),
      vscode.window.onDidChangeVisibleNotebookEditors(() => this.trackActive()),
      { dispose: () => void this.kernels.dispose() },
    );
    for (const nb of vscode.workspace.notebookDocuments) this.prefer(nb);
    this.trackActive();
  }

  /** A notebook whose kernelspec is CodeAct's (an exported conversation) prefers this kernel. */
  private prefer(nb: vscode.NotebookDocument): void {
    if (nb.notebookType !== NOTEBOOK_TYPE) return;
    const spec = (nb.metadata as { metadata?: { kernelspec?: { name?: unknown } } } | undefined)?.metadata?.kernelspec;
    if (spec?.name === KERNELSPEC_NAME) this.controller.updateNotebookAffinity(nb, vscode.NotebookControllerAffinity.Preferred);
  }

  private trackActive(): void {
    const now = vscode.window.activeNotebookEditor?.notebook;
    const before = this.active;
    if (now && now.notebookType === NOTEBOOK_TYPE) this.active = now;
    else if (this.active && !vscode.window.visibleNotebookEditors.some((e) => e.notebook === this.active)) this.active = undefined;
    if (before !== this.active) this.codeact.fireState();
  }

  private execute(cells: vscode.NotebookCell[], nb: vscode.NotebookDocument): void {
    const session = this.kernels.for(nb.uri.toString(), nameOf(nb));
    const batch: CellBatch = {};
    for (const cell of cells) {
      const exec = this.controller.createNotebookCellExecution(cell);
      const stop = new AbortController();
      const sub = exec.token.onCancellationRequested(() => stop.abort());
      void session.execute(cell.document.getText(), cellExecution(exec), { signal: stop.signal, batch }).finally(() => sub.dispose());
    }
  }

  /** "CodeAct: Restart Notebook Session": the active notebook's variables go, numbers start at 1 again. */
  async restart(uri?: vscode.Uri): Promise<void> {
    const nb = uri ? vscode.workspace.notebookDocuments.find((d) => d.uri.toString() === uri.toString()) : vscode.window.activeNotebookEditor?.notebook;
    if (!nb) return void vscode.window.showInformationMessage('CodeAct: open a notebook that runs on the CodeAct kernel first.');
    const session = this.kernels.for(nb.uri.toString(), nameOf(nb));
    await session.restart();
    void vscode.window.showInformationMessage(
      `CodeAct: the Python session of ${forDisplay(nameOf(nb), { line: true })} was restarted; its variables are gone.`,
    );
  }

  // ---- the agent in the open notebook ---------------------------------------------------------

  /** What the panel shows: the notebook a turn would work in, whether it runs on this kernel, and whether the target is on. */
  state(): NotebookTargetState | undefined {
    const nb = this.active;
    if (!nb || nb.isClosed) return undefined;
    const key = nb.uri.toString();
    return { uri: key, name: nameOf(nb), codeact: this.selected.has(key), on: !this.targetOff.has(key) };
  }

  setTarget(uri: string, on: boolean): void {
    if (on) this.targetOff.delete(uri);
    else this.targetOff.add(uri);
    this.codeact.fireState();
  }

  /** Selects this kernel for the notebook (the panel's "Use CodeAct kernel"). */
  async useKernel(uri: string): Promise<void> {
    const editor = vscode.window.visibleNotebookEditors.find((e) => e.notebook.uri.toString() === uri);
    if (editor) await vscode.window.showNotebookDocument(editor.notebook, { viewColumn: editor.viewColumn, preserveFocus: false });
    // VS Code 1.100 takes the controller's own id here (the `<extension>/<id>` form selects nothing).
    await vscode.commands.executeCommand('notebook.selectKernel', { id: CONTROLLER_ID, extension: this.extensionId });
  }

  /** Shows the cell an execution ran in (the card's link), wherever edits moved it. */
  async revealCell(uri: string, itemId: string): Promise<void> {
    let nb = vscode.workspace.notebookDocuments.find((d) => d.uri.toString() === uri);
    if (!nb) {
      // A closed notebook opens again, if the link names a notebook file (the page's message is not trusted).
      const parsed = vscode.Uri.parse(uri, true);
      if (!['file', 'vscode-remote'].includes(parsed.scheme) || !parsed.path.endsWith('.ipynb')) return;
      nb = await vscode.workspace.openNotebookDocument(parsed);
    }
    const index = nb.getCells().findIndex((c) => codeactMeta(c)?.item_id === itemId);
    const editor = await vscode.window.showNotebookDocument(nb, { preserveFocus: false });
    if (index < 0) return void vscode.window.showInformationMessage(`CodeAct: that cell is no longer in ${forDisplay(nameOf(nb), { line: true })}.`);
    const range = new vscode.NotebookRange(index, index + 1);
    editor.selections = [range];
    editor.revealRange(range, vscode.NotebookEditorRevealType.InCenterIfOutsideViewport);
  }

  /** The chat turn's notebook part, when the active notebook is the target; undefined: the turn is the chat's own. */
  turn(): NotebookTurn | undefined {
    const st = this.state();
    const nb = this.active;
    if (!st || !nb || !st.on) return undefined;
    if (!st.codeact) return { note: otherKernelNote(st.name, undefined) };
    const editor = vscode.window.visibleNotebookEditors.find((e) => e.notebook === nb);
    const selected = editor?.selections[0] && !editor.selections[0].isEmpty ? editor.selections[0].end - 1 : undefined;
    const cells = nb.getCells().map(digestCell);
    const session = this.kernels.for(st.uri, st.name);
    // Each cell of the turn goes after the one before it; the first after the selected cell (or at the end).
    let after: string | undefined;
    const insertCell = async (c: FinishedCell): Promise<void> => {
      if (nb.isClosed) throw new Error('the notebook was closed');
      const all = nb.getCells();
      const prev = after ? all.findIndex((x) => codeactMeta(x)?.item_id === after) : -1;
      const at = prev >= 0 ? prev + 1 : selected !== undefined && selected < all.length ? selected + 1 : all.length;
      const data = new vscode.NotebookCellData(vscode.NotebookCellKind.Code, c.code, 'python');
      // Whole: its id and execution number too, so the ipynb support has nothing to add (an edit of its own
      // would be a step of its own for Ctrl+Z).
      data.metadata = {
        id: c.itemId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 64),
        execution_count: c.order || null,
        metadata: { codeact: { author: 'agent', item_id: c.itemId } },
      };
      data.outputs = c.outputs.map(
        (o) =>
          new vscode.NotebookCellOutput(
            o.items.map((i) => new vscode.NotebookCellOutputItem(i.data, i.mime)),
            o.metadata,
          ),
      );
      data.executionSummary = { executionOrder: c.order || undefined, success: c.success, timing: { startTime: c.startTime, endTime: c.endTime } };
      const edit = new vscode.WorkspaceEdit();
      edit.set(nb.uri, [vscode.NotebookEdit.insertCells(at, [data])]);
      if (!(await vscode.workspace.applyEdit(edit))) throw new Error('VS Code did not apply the edit');
      const cell = nb.getCells().find((x) => codeactMeta(x)?.item_id === c.itemId);
      if (!cell) throw new Error('the inserted cell is gone');
      after = c.itemId;
      const shown = vscode.window.visibleNotebookEditors.find((e) => e.notebook === nb);
      shown?.revealRange(new vscode.NotebookRange(cell.index, cell.index + 1), vscode.NotebookEditorRevealType.InCenterIfOutsideViewport);
    };
    return {
      note: notebookNote(st.name, cells, selected),
      wrap: (runtime) => notebookTurnRuntime(runtime, { uri: st.uri, name: st.name, session, insertCell }),
      session: { id: session.sessionId, label: st.name },
    };
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
