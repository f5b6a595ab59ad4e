/**
 * The CodeAct notebook kernel's execution path, without `vscode`: each open notebook has a Python session
 * of its own (`nb:<uri>`), its cells run one after another in the order they were asked for (Run All, Run
 * Above/Below, a cell the agent inserted), each gets the next execution number, and writes its outputs
 * through ./cellOutputs. Interrupt stops the running cell (a session interrupts the code and keeps its
 * variables; a one-shot run's process tree is killed) and the cells waiting behind it; Restart gives a fresh
 * session and numbers from 1 again. ./kernel binds it to a `NotebookController`; the tests drive it with
 * real python3 through the session's seams.
 */
import type { CodeActEvent, CodeInterpreterCallItem } from '../../common/events';
import { newId } from '../../core/util/ids';
import { CellOutputWriter, type CellSink } from './cellOutputs';

/** One cell's execution as the kernel drives it (a `NotebookCellExecution`). */
export interface CellExecution extends CellSink {
  /** The cell runs now, with this execution number. */
  start(order: number): void;
  /** The cell finished: true (ok), false (failed), undefined (did not run, or was stopped before it could). */
  end(success: boolean | undefined): void;
}

export interface CellRunOptions {
  sessionId: string;
  /** The notebook's name (the variables view and Restart Session show it). */
  label: string;
  itemId: string;
  signal: AbortSignal;
  onEvent(e: CodeActEvent): void;
}

/** Runs a cell's code in the notebook's session (the extension's: trust, runtime, gateway and approvals). */
type RunCell = (code: string, o: CellRunOptions) => Promise<CodeInterpreterCallItem>;

interface NotebookKernelDeps {
  run: RunCell;
  /** Drops the session's state (its process tree or kernel); resolves with whether it was alive. */
  restart(sessionId: string): Promise<boolean>;
  /** Ends the session (the notebook closed). */
  close(sessionId: string): Promise<void>;
  log(line: string): void;
  /** codeact.outputs.maxImageMegapixels, in pixels (absent: the default). */
  maxImagePixels?(): number;
}

function notebookSessionId(uri: string): string {
  return `nb:${uri}`;
}

/** The cells VS Code asked to run together (Run All, Run Above/Below): one failing stops the rest. */
export interface CellBatch {
  failed?: boolean;
}

interface Waiting {
  controller: AbortController;
}

/** One notebook's kernel session: its queue, its execution numbers, interrupt and restart. */
export class NotebookKernelSession {
  private order = 0;
  private queue: Promise<void> = Promise.resolve();
  private readonly waiting = new Set<Waiting>();
  private running?: Waiting;
  private epoch = 0;

  constructor(
    readonly sessionId: string,
    readonly label: string,
    private readonly deps: NotebookKernelDeps,
  ) {}

  /** True while a cell runs or waits. */
  get busy(): boolean {
    return !!this.running || this.waiting.size > 0;
  }

  /**
   * Runs `code` in `cell` after the cells asked for before it. `run` overrides how it runs (the agent runs
   * its code with its own gateway and events); `signal` stops this cell alone. Resolves with the finished
   * item, or undefined when the cell never ran (interrupted or restarted while it waited).
   */
  execute(
    code: string,
    cell: CellExecution,
    how?: { run?: RunCell; signal?: AbortSignal; itemId?: string; batch?: CellBatch },
  ): Promise<CodeInterpreterCallItem | undefined> {
    const me: Waiting = { controller: new AbortController() };
    const outer = how?.signal;
    const onOuter = () => me.controller.abort();
    if (outer?.aborted) onOuter();
    else outer?.addEventListener('abort', onOuter, { once: true });
    this.waiting.add(me);
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((r) => (release = r));
    const epoch = this.epoch;
    return (async () => {
      try {
        await previous;
        this.waiting.delete(me);
        // A cell of a Run All after one that failed does not run, as in Jupyter.
        if (me.controller.signal.aborted || epoch !== this.epoch || how?.batch?.failed) {
          cell.start(0);
          cell.end(undefined);
          return undefined;
        }
        this.running = me;
        const item = await this.runCell(code, cell, me.controller.signal, how);
        if (item.status !== 'completed' && how?.batch) how.batch.failed = true;
        return item;
      } finally {
        if (this.running === me) this.running = undefined;
        this.waiting.delete(me);
        outer?.removeEventListener('abort', onOuter);
        release();
      }
    })();
  }

  private async runCell(code: string, cell: CellExecution, signal: AbortSignal, how?: { run?: RunCell; itemId?: string }): Promise<CodeInterpreterCallItem> {
    const order = ++this.order;
    cell.start(order);
    const writer = new CellOutputWriter(cell, () => order, this.deps.maxImagePixels?.());
    writer.clear();
    const itemId = how?.itemId ?? newId('exec');
    let item: CodeInterpreterCallItem;
    try {
      item = await (how?.run ?? this.deps.run)(code, { sessionId: this.sessionId, label: this.label, itemId, signal, onEvent: (e) => writer.onEvent(e) });
    } catch (err) {
      // The run could not start (an untrusted workspace, a runtime that cannot be built): said in the cell.
      const message = err instanceof Error ? err.message : String(err);
      item = {
        type: 'code_interpreter_call',
        id: itemId,
        status: 'failed',
        code,
        runtime: 'local',
        outputs: [],
        error: { type: (err as Error)?.name || 'Error', message },
      };
      this.deps.log(`notebook ${this.label}: cell ${order} did not run: ${message}`);
    }
    try {
      await writer.finish(item);
    } catch (err) {
      this.deps.log(`notebook ${this.label}: writing the outputs of cell ${order} failed: ${(err as Error).message}`);
    }
    cell.end(item.status === 'completed');
    return item;
  }

  /** Stops the running cell and every cell waiting behind it. */
  interrupt(): void {
    for (const w of this.waiting) w.controller.abort();
    this.running?.controller.abort();
  }

  /** A fresh session: what runs or waits is stopped, the variables are gone, numbers start at 1 again. */
  async restart(): Promise<boolean> {
    this.epoch++;
    this.interrupt();
    // The stopped cell ends first (its interrupt is answered), so the restart cannot race its last output.
    await this.queue;
    this.order = 0;
    return this.deps.restart(this.sessionId);
  }

  async close(): Promise<void> {
    this.epoch++;
    this.interrupt();
    await this.deps.close(this.sessionId);
  }
}

/** The kernel sessions of the open notebooks, by notebook URI. */
export class NotebookKernels {
  private readonly sessions = new Map<string, NotebookKernelSession>();

  constructor(private readonly deps: NotebookKernelDeps) {}

  for(uri: string, label: string): NotebookKernelSession {
    let s = this.sessions.get(uri);
    if (!s) this.sessions.set(uri, (s = new NotebookKernelSession(notebookSessionId(uri), label, this.deps)));
    return s;
  }

  get(uri: string): NotebookKernelSession | undefined {
    return this.sessions.get(uri);
  }

  /** The notebook closed: its session ends. */
  async closed(uri: string): Promise<void> {
    const s = this.sessions.get(uri);
    this.sessions.delete(uri);
    await s?.close();
  }

  async dispose(): Promise<void> {
    await Promise.allSettled([...this.sessions.keys()].map((uri) => this.closed(uri)));
  }
}
