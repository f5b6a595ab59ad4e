/**
 * The lifecycle of one execution that the local guest and the Jupyter kernel share: the item's id and events,
 * its output (stdout and stderr under the byte cap, displays under the display caps, the caps' closing note),
 * the timeout (a clock that stops counting while an approval is open), Stop and the timeout as one sequence
 * (the stop's error once, the tool calls cancelled, interrupt, then kill after the grace), the end of the run,
 * and the finished item. What differs is the protocol (the guest's frames and markers, the kernel's IOPub
 * messages): each runtime feeds the skeleton what arrives and gives it a {@link RunProtocol} to stop the code.
 */
import type { CodeActEvent, CodeInterpreterCallItem, CodeOutput, DisplayOutput, ExecutionError, StreamName } from '../../common/events';
import { DisplayBudget } from './displays';
import { announceDone, cancelledError, executionItem, OutputCapture, safeEmit, timeoutError, type Completion } from './execution';
import type { ExecuteOptions, RuntimeLimits } from './types';
import { REAL_CLOCK, RunClock, type ClockSource } from '../util/timeout';

/** What one runtime does to stop its code; the skeleton decides when. */
export interface RunProtocol {
  /** Tool calls of the run still in flight (the timeout's message counts them). */
  inFlight(): number;
  /** The run already has its outcome (a failure of its own): a stop changes nothing. */
  settled?(): boolean;
  /** The stop's error was just decided (before the tool calls are cancelled). */
  onStop?(error: ExecutionError): void;
  /** Cancels the run's tool calls. */
  cancelTools(): void;
  /**
   * Asks the code to stop and keep its state. true: asked, the grace starts now; false: there is nothing to
   * interrupt (the protocol ended or killed the run itself); a promise: the grace starts when it gives true.
   */
  interrupt(): boolean | Promise<boolean>;
  /** The code did not stop within the grace (`graceMs`): end it; its state is lost. */
  kill(graceMs: number): void;
}

/** Stdout, stderr and displays of one run, as they are kept (under the caps) and announced. */
class RunOutputs {
  readonly capture: OutputCapture;
  private readonly budget: DisplayBudget;
  /** Output was dropped before it reached the host (a server's rate limit). */
  private dropped = false;
  private closed = false;

  constructor(
    private readonly itemId: string,
    limits: RuntimeLimits,
    private readonly emit: (event: CodeActEvent) => void,
    /** Announce an update that replaced nothing (shown as a new display) as an update all the same. */
    private readonly announceUnmatchedUpdates = false,
  ) {
    this.capture = new OutputCapture(limits.maxOutputBytes);
    this.budget = new DisplayBudget(limits);
  }

  /** Decoded text (a kernel's stream, a note of the host's own): kept up to the cap, and streamed. */
  text(stream: StreamName, text: string): void {
    this.show(stream, this.capture.pushText(stream, text));
  }

  /** Raw bytes from a pipe (UTF-8 split anywhere). */
  bytes(stream: StreamName, chunk: Buffer): void {
    this.show(stream, this.capture.pushBytes(stream, chunk));
  }

  /** A byte stream is over: flushes a partial UTF-8 sequence. */
  end(stream: StreamName): void {
    this.show(stream, this.capture.end(stream));
  }

  /** A note of the host's own (a cap, a refused display), on stderr where the run's output stands. */
  note(text: string): void {
    this.text('stderr', text);
  }

  /** A display as it arrived, checked against the display caps: what to show, or null (refused, with a note). */
  take(raw: Parameters<DisplayBudget['take']>[0], update: boolean): DisplayOutput | null {
    const taken = this.budget.take(raw, update);
    if (taken.ok) return taken.display;
    if (taken.note) this.note(taken.note);
    return null;
  }

  /** Shows a display after the text so far; an update replaces its display where it stands, or is shown as new. */
  place(display: DisplayOutput, update: boolean): void {
    const replaced = this.capture.pushDisplay(display, update);
    if (!replaced) this.capture.pushDisplay(display);
    const announced = update && (replaced || this.announceUnmatchedUpdates);
    this.emit({ type: 'codeact.output.display', item_id: this.itemId, output: display, ...(announced ? { update: true } : {}) });
  }

  /** Output was dropped on the way (the item says it is truncated). */
  markDropped(): void {
    this.dropped = true;
  }

  /** The closing note of the caps, once. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const note = this.budget.summary();
    if (note) this.note(note);
  }

  outputs(): CodeOutput[] {
    return this.capture.outputs();
  }

  get truncated(): boolean {
    return this.capture.truncated || this.dropped;
  }

  private show(stream: StreamName, text: string): void {
    if (text) this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream, delta: text });
  }
}

/** What the finished item says beyond what the skeleton holds. */
interface Ending {
  runtime: CodeInterpreterCallItem['runtime'];
  error?: ExecutionError;
  completion?: Completion;
  containerId?: string | null;
  sandbox?: CodeInterpreterCallItem['sandbox'];
}

export class RunSkeleton {
  readonly emit: (event: CodeActEvent) => void;
  readonly started = performance.now();
  readonly out: RunOutputs;
  /** The run's timeout; it stops counting while the person decides an approval. */
  readonly clock: RunClock;
  /** Why the run was stopped (Stop or the timeout), once it was. */
  stopping?: ExecutionError;
  finished = false;
  private resolveDone!: () => void;
  /** Settles when the run is over (its result is in, it failed, or it was stopped). */
  readonly done = new Promise<void>((r) => (this.resolveDone = r));
  private protocol?: RunProtocol;
  private graceTimer?: unknown;

  /** Where the run's events go: the caller's onEvent, or (a run sent to the background) wherever {@link redirect} says. */
  private sink: (event: CodeActEvent) => void;

  constructor(
    readonly itemId: string,
    options: Pick<ExecuteOptions, 'onEvent'>,
    limits: RuntimeLimits,
    /** How long an interrupt may take before the code is killed. */
    private readonly interruptGraceMs: () => number,
    extra: { announceUnmatchedUpdates?: boolean; time?: ClockSource } = {},
  ) {
    this.sink = safeEmit(options.onEvent);
    this.emit = (event) => this.sink(event);
    this.out = new RunOutputs(itemId, limits, this.emit, extra.announceUnmatchedUpdates);
    this.time = extra.time ?? REAL_CLOCK;
    this.clock = new RunClock(this.time);
  }

  private readonly time: ClockSource;

  /** From now on the run's events go to `sink` (a run sent to the background: its output becomes a job's). */
  redirect(sink: (event: CodeActEvent) => void): void {
    this.sink = safeEmit(sink);
  }

  /** How this run's code is stopped (before Stop or the timeout can act on it). */
  attach(protocol: RunProtocol): void {
    this.protocol = protocol;
  }

  /** Arms the timeout; when it passes (paused time left out), the run is stopped. */
  startClock(timeoutMs: number): void {
    this.clock.start(timeoutMs, () => this.stop('timeout', timeoutMs));
  }

  /** The caller's Stop stops the run; returns what unhooks it. */
  watch(signal?: AbortSignal): () => void {
    if (!signal) return () => {};
    const onAbort = () => this.stop('cancel');
    signal.addEventListener('abort', onAbort, { once: true });
    return () => signal.removeEventListener('abort', onAbort);
  }

  /** Stop (the caller's signal) or the timeout: the error once, the tool calls cancelled, interrupt, then kill after the grace. */
  stop(kind: 'cancel' | 'timeout', timeoutMs = 0): void {
    const p = this.protocol;
    if (this.finished || this.stopping || p?.settled?.()) return;
    this.stopping = kind === 'timeout' ? timeoutError(timeoutMs, p?.inFlight() ?? 0) : cancelledError();
    if (!p) return this.finish();
    p.onStop?.(this.stopping);
    p.cancelTools();
    const asked = p.interrupt();
    if (asked === true) this.armGrace(p);
    else if (asked !== false) void asked.then((ok) => ok && this.armGrace(p));
  }

  private armGrace(p: RunProtocol): void {
    if (this.finished) return;
    const grace = this.interruptGraceMs();
    this.graceTimer = this.time.setTimeout(() => {
      this.graceTimer = undefined;
      if (!this.finished) p.kill(grace);
    }, grace);
  }

  /** The run is over: the clock and the grace stop, and `done` settles. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.clock.stop();
    if (this.graceTimer !== undefined) this.time.clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    this.resolveDone();
  }

  /** The finished item (the caps' closing note first); announce it with {@link announce}. */
  item(code: string, e: Ending): CodeInterpreterCallItem {
    this.out.close();
    return executionItem({
      itemId: this.itemId,
      code,
      runtime: e.runtime,
      containerId: e.containerId,
      outputs: this.out.outputs(),
      error: e.error,
      completion: e.completion,
      startedAt: this.started,
      truncated: this.out.truncated,
      sandbox: e.sandbox,
    });
  }

  /** `completed`, then the item. */
  announce(item: CodeInterpreterCallItem): CodeInterpreterCallItem {
    return announceDone(this.emit, item);
  }
}
