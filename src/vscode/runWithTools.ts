/**
 * "CodeAct: Run with Tools": runs the active Python file, the selection, or the `# %%` cell at the
 * cursor in the configured runtime with the managed tools, and shows the result inline: an after-line
 * decoration (value or ✓/✗, "1 image", "2 files", and the duration), a hover with stdout, the images (sized
 * down), the files, value and traceback (./inlineResult), a diagnostic
 * on the failing line, and CodeLens "▶ Run with Tools" above each cell. The run also appears in the panel.
 * While the run waits for an approval, the inline status says so and the cell's CodeLens offers to open it.
 */
import * as vscode from 'vscode';
import { cellAt, codeOf, findCells } from '../common/cells';
import type { CodeInterpreterCallItem } from '../common/events';
import { hoverParts, inlineSummary } from './inlineResult';
import type { CodeActController } from './controller';
import { folderOf } from './settings';
import { showUntrusted } from './trust';
import { forDisplay } from '../common/untrusted';

const PYTHON_DOCS: vscode.DocumentSelector = [
  { language: 'python', scheme: 'file' },
  { language: 'python', scheme: 'untitled' },
  { language: 'python', scheme: 'vscode-remote' },
];

interface InlineResult {
  line: number;
  item: CodeInterpreterCallItem;
  startLine: number;
}

function lines(doc: vscode.TextDocument): string[] {
  return doc.getText().split(/\r?\n/);
}

/** What to run: the selection, the cell at the cursor, or the whole file. */
function targetOf(editor: vscode.TextEditor, atLine?: number): { code: string; startLine: number; endLine: number; label: string } {
  const doc = editor.document;
  const name = vscode.workspace.asRelativePath(doc.uri);
  const sel = editor.selection;
  if (atLine === undefined && !sel.isEmpty) {
    const startLine = sel.start.line;
    const endLine = sel.end.character === 0 && sel.end.line > sel.start.line ? sel.end.line - 1 : sel.end.line;
    const all = lines(doc);
    const { code, lastLine } = codeOf(all, startLine, endLine);
    return { code, startLine, endLine: lastLine, label: `${name}, lines ${startLine + 1}-${lastLine + 1}` };
  }
  const all = lines(doc);
  const cell = cellAt(all, atLine ?? sel.active.line);
  if (cell) {
    const { code, lastLine } = codeOf(all, cell.codeStart, cell.end);
    return { code, startLine: cell.codeStart, endLine: lastLine, label: `${name}, cell at line ${cell.start + 1}${cell.title ? ` (${cell.title})` : ''}` };
  }
  const { code, lastLine } = codeOf(all, 0, all.length - 1);
  return { code, startLine: 0, endLine: lastLine, label: name };
}

/** The hover of a finished run: its parts (./inlineResult) in a MarkdownString that runs no command but "Open in CodeAct panel". */
function hoverOf(item: CodeInterpreterCallItem, maxImagePixels: number): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.supportHtml = false;
  for (const part of hoverParts(item, maxImagePixels)) {
    if (part.kind === 'markdown') md.appendMarkdown(part.text);
    else md.appendCodeblock(part.text, part.language);
  }
  md.appendMarkdown('\n[Open in CodeAct panel](command:codeact.openChat)');
  md.isTrusted = { enabledCommands: ['codeact.openChat'] };
  return md;
}

export class InlineResults implements vscode.Disposable, vscode.HoverProvider, vscode.CodeLensProvider {
  private readonly ok = vscode.window.createTextEditorDecorationType({
    after: { margin: '0 0 0 2em', color: new vscode.ThemeColor('editorCodeLens.foreground'), fontStyle: 'italic' },
    isWholeLine: false,
  });
  private readonly failed = vscode.window.createTextEditorDecorationType({
    after: { margin: '0 0 0 2em', color: new vscode.ThemeColor('errorForeground'), fontStyle: 'italic' },
  });
  /** The status at the end of the running code: running, or waiting for an approval (the text is per range). */
  private readonly running = vscode.window.createTextEditorDecorationType({
    after: { margin: '0 0 0 2em', color: new vscode.ThemeColor('editorCodeLens.foreground') },
  });
  /** The code that runs now, where its status shows. */
  private current?: { key: string; range: vscode.Range; cellLine?: number; progress?: vscode.Progress<{ message?: string }> };
  private readonly diagnostics = vscode.languages.createDiagnosticCollection('codeact');
  private readonly results = new Map<string, InlineResult[]>();
  private readonly lensChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensChanged.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly controller: CodeActController) {
    this.disposables.push(
      vscode.languages.registerHoverProvider(PYTHON_DOCS, this),
      vscode.languages.registerCodeLensProvider(PYTHON_DOCS, this),
      vscode.window.onDidChangeVisibleTextEditors(() => this.refresh()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        // An edit makes the results stale: drop those at or after the first changed line.
        const key = e.document.uri.toString();
        const list = this.results.get(key);
        if (!list || !e.contentChanges.length) return;
        const first = Math.min(...e.contentChanges.map((c) => c.range.start.line));
        const kept = list.filter((r) => r.line < first);
        if (kept.length !== list.length) {
          this.results.set(key, kept);
          this.diagnostics.delete(e.document.uri);
          this.refresh();
        }
      }),
      vscode.workspace.onDidCloseTextDocument((d) => {
        this.results.delete(d.uri.toString());
        this.diagnostics.delete(d.uri);
      }),
      controller.onState(() => {
        this.showRunning();
        this.lensChanged.fire();
        // VS Code drops a scheduled CodeLens refresh when the editor loses focus (its scheduler is cancelled on
        // blur), which can leave "Stop" above the cells after a run: ask once more when the state has settled.
        clearTimeout(this.settle);
        this.settle = setTimeout(() => this.lensChanged.fire(), 1500);
      }),
      { dispose: () => clearTimeout(this.settle) },
    );
  }
  private settle?: ReturnType<typeof setTimeout>;

  async run(atLine?: number, uri?: vscode.Uri): Promise<CodeInterpreterCallItem | undefined> {
    let editor = vscode.window.activeTextEditor;
    if (uri && editor?.document.uri.toString() !== uri.toString()) editor = await vscode.window.showTextDocument(uri);
    if (!editor) {
      void vscode.window.showInformationMessage('CodeAct: open a Python file to run it with tools.');
      return undefined;
    }
    const refused = this.controller.trustGate('Running code with tools');
    if (refused) {
      showUntrusted(refused.what);
      return undefined;
    }
    const target = targetOf(editor, atLine);
    if (!target.code.trim()) {
      void vscode.window.showInformationMessage('CodeAct: there is no code to run here.');
      return undefined;
    }
    const doc = editor.document;
    const key = doc.uri.toString();
    const endRange = new vscode.Range(target.endLine, Number.MAX_SAFE_INTEGER, target.endLine, Number.MAX_SAFE_INTEGER);
    const cell = cellAt(lines(doc), target.startLine);
    this.current = { key, range: endRange, cellLine: cell?.start };
    // The result of an earlier run of the same code is stale now: the status of this run takes its place.
    const earlier = this.results.get(key);
    if (earlier?.some((r) => r.line === target.endLine)) {
      this.results.set(
        key,
        earlier.filter((r) => r.line !== target.endLine),
      );
      this.refresh();
    }
    this.showRunning();
    this.diagnostics.delete(doc.uri);
    let item: CodeInterpreterCallItem;
    try {
      item = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: `CodeAct: running ${forDisplay(target.label, { line: true })}`, cancellable: false },
        (progress) => {
          if (this.current?.key === key) this.current.progress = progress;
          // The file's own workspace folder: its settings, tools and runtime (a file in no folder: the chat's).
          const folder = folderOf(doc.uri);
          return this.controller.runCode(target.code, target.label, 'run_with_tools', {
            document: { uri: key, name: vscode.workspace.asRelativePath(doc.uri), ...(folder !== undefined ? { folder } : {}) },
          });
        },
      );
    } catch (err) {
      void vscode.window.showErrorMessage(`CodeAct: ${forDisplay((err as Error).message)}`);
      return undefined;
    } finally {
      this.current = undefined;
      for (const e of vscode.window.visibleTextEditors) if (e.document.uri.toString() === key) e.setDecorations(this.running, []);
    }
    const list = (this.results.get(key) ?? []).filter((r) => r.line !== target.endLine);
    list.push({ line: target.endLine, item, startLine: target.startLine });
    this.results.set(key, list);
    if (item.error?.line && item.status === 'failed') {
      const line = Math.min(doc.lineCount - 1, target.startLine + item.error.line - 1);
      const text = doc.lineAt(line);
      const d = new vscode.Diagnostic(
        new vscode.Range(line, text.firstNonWhitespaceCharacterIndex, line, text.text.length),
        `${item.error.type}: ${item.error.message}`,
        vscode.DiagnosticSeverity.Error,
      );
      d.source = 'CodeAct';
      this.diagnostics.set(doc.uri, [d]);
    }
    this.refresh();
    return item;
  }

  /** The running code's status: "running", or waiting for the person's approval (and of what). */
  private showRunning(): void {
    const cur = this.current;
    if (!cur) return;
    const waiting = this.controller.pendingApprovals()[0];
    const text = waiting
      ? `⚑ waiting for your approval${waiting.name ? ` of "${waiting.name}"` : ' of the code'} — CodeAct: Show Pending Approval`
      : '⟳ running with tools…';
    cur.progress?.report({ message: waiting ? 'waiting for your approval' : undefined });
    for (const e of vscode.window.visibleTextEditors) {
      if (e.document.uri.toString() === cur.key) e.setDecorations(this.running, [{ range: cur.range, renderOptions: { after: { contentText: text } } }]);
    }
  }

  private refresh(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const list = this.results.get(editor.document.uri.toString()) ?? [];
      const deco = (ok: boolean) =>
        list
          .filter((r) => (r.item.status === 'completed') === ok && r.line < editor.document.lineCount)
          .map((r) => ({
            range: new vscode.Range(r.line, Number.MAX_SAFE_INTEGER, r.line, Number.MAX_SAFE_INTEGER),
            renderOptions: { after: { contentText: inlineSummary(r.item) } },
          }));
      editor.setDecorations(this.ok, this.controller.settings.inlineResults ? deco(true) : []);
      editor.setDecorations(this.failed, this.controller.settings.inlineResults ? deco(false) : []);
    }
  }

  provideHover(doc: vscode.TextDocument, pos: vscode.Position): vscode.Hover | undefined {
    const r = (this.results.get(doc.uri.toString()) ?? []).find(
      (x) => x.line === pos.line || (x.item.error?.line && x.startLine + x.item.error.line - 1 === pos.line),
    );
    return r ? new vscode.Hover(hoverOf(r.item, this.controller.settings.maxImagePixels)) : undefined;
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const waiting = this.controller.busy ? this.controller.pendingApprovals()[0] : undefined;
    const here = this.current?.key === doc.uri.toString() ? this.current.cellLine : undefined;
    return findCells(lines(doc)).flatMap((c) => {
      const range = new vscode.Range(c.start, 0, c.start, 0);
      const lens = new vscode.CodeLens(
        range,
        this.controller.busy
          ? { title: '$(debug-stop) Stop', command: 'codeact.stop', tooltip: 'Stop the running code' }
          : { title: '▶ Run with Tools', command: 'codeact.runWithTools', arguments: [doc.uri, c.codeStart], tooltip: 'Run this cell with the managed tools' },
      );
      if (!waiting || here !== c.start) return [lens];
      const what = waiting.name ? `"${waiting.name}"` : 'the code';
      return [
        new vscode.CodeLens(range, {
          title: `$(shield) Approve ${what}…`,
          command: 'codeact.showApproval',
          tooltip: `This run waits for you to allow or deny ${what}`,
        }),
        lens,
      ];
    });
  }

  /** The after-line texts currently shown for a document (for tests and the chat participant). */
  summaries(uri: vscode.Uri): string[] {
    return (this.results.get(uri.toString()) ?? []).map((r) => inlineSummary(r.item));
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.lensChanged.dispose();
    this.ok.dispose();
    this.failed.dispose();
    this.running.dispose();
    this.diagnostics.dispose();
  }
}
