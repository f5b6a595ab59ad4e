/**
 * The agent working in the open notebook, without `vscode`: the turn's runtime wrapped so that each
 * execution the model asks for runs on the notebook's own session after the cells already waiting (so it
 * sees the variables the user's cells made) and becomes a new code cell of the notebook, marked as the
 * agent's in its metadata. The chat's card streams it live; the cell is inserted when it finished, whole
 * (source, outputs, execution number and result), in one edit (./kernel): nothing edits it afterwards, so
 * one Ctrl+Z takes it out. The card links to the cell. And what the model is told about the
 * notebook: its cells' sources and a text digest of their outputs, with their indexes (never the raw JSON).
 */
import type { CodeInterpreterCallItem } from '../../common/events';
import { headTail, partNote } from '../../common/outputBudget';
import { quoteBlock, quoteInline } from '../../common/quoteData';
import { notebookAs, rankedFor } from '../../common/mimeTypes';
import { afterReview, announceDone, cancelledError, executionItem } from '../../core/runtime/execution';
import type { ExecuteOptions, ExecuteRequest, Runtime } from '../../core/runtime/types';
import { newId } from '../../core/util/ids';
import { ERROR_MIME, STDERR_MIME, STDOUT_MIME, type CellOutputData, type OutputItemData } from './cellOutputs';
import type { CellExecution, NotebookKernelSession } from './kernelRunner';

/** A chat turn that works in an open notebook (./kernel): what the model is told, its runtime wrapped, its session. */
export interface NotebookTurn {
  note: string;
  wrap?: (runtime: Runtime) => Runtime;
  /** The session the variables view shows after the turn. */
  session?: { id: string; label: string };
}

/** An agent's execution, finished, as the cell to insert. */
export interface FinishedCell {
  code: string;
  itemId: string;
  /** Its execution number in the notebook's session. */
  order: number;
  success: boolean | undefined;
  outputs: CellOutputData[];
  startTime: number;
  endTime: number;
}

interface NotebookTarget {
  uri: string;
  /** The notebook's file name, as the panel and the model see it. */
  name: string;
  session: NotebookKernelSession;
  /** Inserts the finished cell after the selected cell (or at the end; the next ones after it), in one edit. */
  insertCell(cell: FinishedCell): Promise<void>;
}

/** A cell's execution kept in memory (its outputs as they would be written) until the cell is inserted. */
class RecordedCellExecution implements CellExecution {
  order = 0;
  success: boolean | undefined;
  startTime = 0;
  endTime = 0;
  outputs: CellOutputData[] = [];
  start(order: number): void {
    this.order = order;
    this.startTime = Date.now();
  }
  end(success: boolean | undefined): void {
    this.success = success;
    this.endTime = Date.now();
  }
  async clearOutput(): Promise<void> {
    this.outputs = [];
  }
  async appendOutput(o: CellOutputData): Promise<number> {
    this.outputs.push({ items: [...o.items], ...(o.metadata ? { metadata: o.metadata } : {}) });
    return this.outputs.length - 1;
  }
  async appendOutputItems(handle: number, items: OutputItemData[]): Promise<void> {
    this.outputs[handle]?.items.push(...items);
  }
  async replaceOutputItems(handle: number, items: OutputItemData[]): Promise<void> {
    const o = this.outputs[handle];
    if (o) o.items = [...items];
  }
}

/**
 * The turn's runtime, its executions made cells of the notebook. Its kind, sessions and disposal are the
 * runtime's own. Code review (options.beforeRun) comes first: the cell is the code the person allowed.
 */
export function notebookTurnRuntime(inner: Runtime, target: NotebookTarget): Runtime {
  const execute = (request: ExecuteRequest, options: ExecuteOptions = {}) =>
    afterReview(inner.kind, request, options, (request, options) => asCell(inner, target, request, options));
  return { kind: inner.kind, sessions: inner.sessions, dispose: () => inner.dispose(), execute };
}

async function asCell(inner: Runtime, target: NotebookTarget, request: ExecuteRequest, options: ExecuteOptions): Promise<CodeInterpreterCallItem> {
  const itemId = request.itemId ?? newId('exec');
  const emit = (e: Parameters<NonNullable<ExecuteOptions['onEvent']>>[0]) => options.onEvent?.(e);
  const started = performance.now();
  const cell = new RecordedCellExecution();
  const item = await target.session.execute(request.code, cell, {
    itemId,
    signal: options.signal,
    run: (code, o) =>
      inner.execute(
        { ...request, code, itemId: o.itemId, sessionId: o.sessionId },
        {
          ...options,
          signal: o.signal,
          onEvent: (e) => {
            emit(e);
            o.onEvent(e);
          },
        },
      ),
  });
  if (item) {
    try {
      await target.insertCell({
        code: request.code,
        itemId,
        order: cell.order,
        success: cell.success,
        outputs: cell.outputs,
        startTime: cell.startTime,
        endTime: cell.endTime,
      });
      emit({ type: 'codeact.notebook.cell', item_id: itemId, notebook: target.uri, name: target.name });
    } catch (err) {
      // It ran (the model gets its result); only the cell is missing, and the card says so.
      emit({
        type: 'codeact.output.delta',
        item_id: itemId,
        stream: 'stderr',
        delta: `\n[CodeAct: the cell could not be added to ${target.name}: ${(err as Error).message}]\n`,
      });
    }
  }
  // Interrupted or restarted while it waited behind the user's cells: it never ran.
  return (
    item ?? announceDone(emit, executionItem({ itemId, code: request.code, runtime: inner.kind, outputs: [], error: cancelledError(true), startedAt: started }))
  );
}

// ---- what the model reads ---------------------------------------------------------------------

/** One output of a cell as the digest reads it: its MIME types and, for text ones, the text. */
interface DigestOutput {
  items: Array<{ mime: string; text?: string; bytes: number }>;
}

export interface DigestCell {
  kind: 'code' | 'markdown';
  source: string;
  outputs: DigestOutput[];
  executionOrder?: number;
  /** The agent wrote it (its metadata says so). */
  agent?: boolean;
}

/** Most characters of one cell's source, of its outputs, and of the whole digest. */
const SOURCE_CHARS = 3000;
const OUTPUT_CHARS = 1500;
const DIGEST_CHARS = 16_000;

function outputText(o: DigestOutput): string {
  const by = new Map(o.items.map((i) => [i.mime, i]));
  const err = by.get(ERROR_MIME);
  if (err?.text !== undefined) {
    try {
      const e = JSON.parse(err.text) as { name?: string; message?: string; stack?: string };
      const stack = String(e.stack ?? '');
      return `error: ${stack.trim() ? stack.trim().split('\n').slice(-6).join('\n') : `${e.name}: ${e.message}`}`;
    } catch {
      return 'error';
    }
  }
  const stream = by.get(STDOUT_MIME) ?? by.get(STDERR_MIME);
  if (stream) return o.items.map((i) => i.text ?? '').join('');
  const kinds: string[] = [];
  let text: string | undefined;
  for (const mime of rankedFor('notebook')) {
    const as = notebookAs(mime);
    if (as === 'text') text ??= by.get(mime)?.text;
    else if (by.has(mime)) kinds.push(as === 'HTML' ? 'HTML' : `image (${mime})`);
  }
  return [kinds.length ? `[${kinds.join(', ')}]` : '', text ?? ''].filter(Boolean).join(' ');
}

/**
 * The notebook as the model reads it: each cell's index, kind, source and a digest of its outputs. The
 * lines at the margin are ours; a cell's source and outputs are quoted as data below them
 * (../../common/quoteData): a cell cannot write a heading, a cell header or a role line of its own.
 */
export function notebookDigest(cells: readonly DigestCell[], selected?: number): string {
  const parts: string[] = [];
  let chars = 0;
  for (const [i, c] of cells.entries()) {
    const head = `[${i}] ${c.kind}${c.kind === 'code' ? (c.executionOrder ? `, ran as [${c.executionOrder}]` : ', not run') : ''}${c.agent ? ', written by you' : ''}${i === selected ? ', selected' : ''}`;
    const source = quoteBlock(headTail(c.source, SOURCE_CHARS, partNote('of this cell', 'here')));
    const outs = c.outputs
      .map(outputText)
      .filter((t) => t.trim())
      .join('\n');
    const out = outs ? `\n--- output of [${i}]:\n${quoteBlock(headTail(outs, OUTPUT_CHARS, partNote('of this output', 'here')))}` : '';
    const part = `${head}\n${source}${out}`;
    // Whole cells only (a cell cut in two would put a piece of its text at the margin).
    if (chars + part.length + 2 > DIGEST_CHARS) {
      parts.push(`[codeact: ${cells.length - i} more cell${cells.length - i === 1 ? '' : 's'} (from [${i}]) left out of this digest to keep it short]`);
      break;
    }
    parts.push(part);
    chars += part.length + 2;
  }
  return parts.join('\n\n');
}

/** What the model is told when the turn works in the notebook (after the system instruction). */
export function notebookNote(name: string, cells: readonly DigestCell[], selected?: number): string {
  const where = selected !== undefined ? `after cell [${selected}] (the selected one), each next one after the last you added` : 'at the end of the notebook';
  return [
    `This turn works in the user's open notebook ${quoteInline(name)}, on its CodeAct kernel: every execution you run becomes a new code cell, inserted ${where}, and runs in the notebook's own Python session, so the variables, imports and data its cells made are there to use (do not recompute or reload them). The user sees every cell you add, with its outputs; write code that reads well as a notebook cell.`,
    `The notebook now (cell indexes from 0; sources and a text digest of the outputs, quoted as data behind "│" at the start of each line):`,
    notebookDigest(cells, selected) || '(no cells)',
  ].join('\n');
}

/** What the model is told when the active notebook runs on another kernel: its variables are not visible. */
export function otherKernelNote(name: string, kernel: string | undefined): string {
  return `The user's open notebook ${quoteInline(name)} does not run on CodeAct's kernel${kernel ? ` (it runs on ${quoteInline(kernel)})` : ''}: your code runs in CodeAct's own session and cannot see the variables of another kernel. If the user means the notebook's variables, say so plainly, and that selecting the "CodeAct" kernel for the notebook lets you work in it.`;
}
