/**
 * One execution on a Jupyter kernel, built on the run skeleton (../runSkeleton: the output and display caps,
 * the clock, Stop and the timeout, the item): what is the kernel's is here: the IOPub messages, the reply and
 * "idle", the tool channel, interrupting through the server then restarting, and the failures of the
 * connection and the kernel.
 */
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { CodeInterpreterCallItem, ExecutionError } from '../../../common/events';
import { normaliseError, openExecution, valueCompletion, type Completion } from '../execution';
import { RunSkeleton } from '../runSkeleton';
import type { ExecuteOptions, ExecuteRequest, RuntimeLimits } from '../types';
import { JupyterError } from './connection';
import { RESULT_MIME, runCell } from './kernelBridge';
import type { KernelHandle } from './kernelHandle';
import type { KernelPool } from './kernelPool';
import { collectKernelFiles, reportedFiles, type ReportedFiles } from './kernelFiles';

/** How long a finished run waits for the kernel's "idle" after its result and reply. */
const IDLE_GRACE_MS = 2000;
import { connectionLost, finalError, kernelDied, lostError, stripAnsi, toExecutionError } from './runErrors';
import { formatDuration } from '../../../common/format';
import { raceAbort } from '../../util/abort';
import { ToolChannel } from './toolChannel';
import { newId, randomToken } from '../../util/ids';

export class JupyterRun {
  readonly itemId: string;
  private readonly limits: RuntimeLimits;
  private readonly runId = randomToken(8);
  /** The item, its output, the clock, the shape of Stop and the timeout, the end. */
  private readonly run: RunSkeleton;
  private handle?: KernelHandle;
  private future?: Kernel.IShellFuture<KernelMessage.IExecuteRequestMsg, KernelMessage.IExecuteReplyMsg>;
  private tools?: ToolChannel;
  private completion?: Completion;
  private kernelError?: ExecutionError;
  private failure?: ExecutionError;
  private number = 0; // its kernel's number for it (KernelHandle.number); 0 when its output was not kept (the item names none)
  private stopNote = '';
  private needsRestart = false;
  private retriedBootstrap = false;
  private reconnectTimer?: NodeJS.Timeout;
  private resultTimer?: NodeJS.Timeout;
  private replied = false;
  /** The kernel said "idle" for this request: every IOPub message of the run has arrived. */
  private idle = false;
  private idleTimer?: NodeJS.Timeout;
  private reported?: ReportedFiles;
  /** The earlier runs' output this run's cell carries into the kernel (KernelHandle.keepOutput). */
  private carried: ReadonlyMap<number, string> = new Map();
  private probing = false;

  constructor(
    private readonly runtime: KernelPool<KernelHandle>,
    private readonly request: ExecuteRequest,
    private readonly options: ExecuteOptions,
  ) {
    this.itemId = request.itemId ?? newId('exec');
    this.limits = runtime.settings.limits;
    this.run = new RunSkeleton(this.itemId, options, this.limits, () => runtime.settings.interruptGraceMs);
    this.run.attach({
      inFlight: () => this.tools?.inFlight ?? 0,
      cancelTools: () => this.tools?.cancel(),
      interrupt: () => this.interrupt(),
      kill: (graceMs) => this.restartAfterFailedInterrupt(graceMs),
    });
  }

  private get finished(): boolean {
    return this.run.finished;
  }

  private get stopping(): ExecutionError | undefined {
    return this.run.stopping;
  }

  async start(): Promise<CodeInterpreterCallItem> {
    const signal = this.options.signal;
    const refused = openExecution(this.run.emit, this.request, this.itemId, 'jupyter', this.limits, signal);
    if (refused) return this.result(refused);
    const unwatch = this.run.watch(signal);
    const stopped = new AbortController(); // fires when this run is stopped before its code started
    let handle: KernelHandle | undefined;
    try {
      const acquiring = this.runtime.acquire(this.request.sessionId);
      this.onStopBeforeStart = () => stopped.abort();
      let got: Awaited<typeof acquiring>;
      try {
        got = await raceAbort(acquiring, stopped.signal);
      } catch (err) {
        if (stopped.signal.aborted) {
          // Do not leak a per-execution kernel that finishes starting after the Stop.
          void acquiring.then(
            (g) => (g.handle.sessionId ? undefined : this.runtime.shutdownHandle(g.handle, 'its run was stopped')),
            () => {},
          );
        }
        throw err;
      }
      handle = got.handle;
      if (got.notice) this.run.out.text('stderr', got.notice);
      await handle.withLock(async () => {
        this.handle = handle;
        handle!.current = this;
        try {
          if (this.stopping) return;
          if (!handle!.bootstrapped) await raceAbort(handle!.bootstrap(), stopped.signal);
          if (this.stopping) return;
          this.onStopBeforeStart = undefined;
          this.number = handle!.number(this.request.execution);
          await this.runOn(handle!);
          await this.collectFiles(handle!);
          if (!(this.completion && !this.needsRestart && handle!.keepOutput(this.number, this.run.out.outputs()))) this.number = 0;
        } finally {
          handle!.current = undefined;
          if (this.needsRestart) {
            try {
              await handle!.restart();
            } catch (err) {
              handle!.lostReason ??= `it could not be restarted (${(err as Error).message})`;
              this.runtime.settings.log(`[codeact] restarting kernel ${handle!.id} failed: ${(err as Error).message}`);
            }
          }
        }
      }, stopped.signal);
    } catch (err) {
      if (!this.stopping || !stopped.signal.aborted) this.failure ??= toExecutionError(err);
    } finally {
      unwatch();
      this.cleanup();
    }
    const item = this.result(finalError({ stopping: this.stopping, stopNote: this.stopNote, failure: this.failure, completion: this.completion }));
    if (handle) await this.runtime.afterRun(handle).catch(() => {});
    return item;
  }

  /** The files the run wrote, copied through the contents API (while the kernel is still this run's). */
  private async collectFiles(handle: KernelHandle): Promise<void> {
    this.run.out.close();
    const report = this.reported;
    const rest = this.runtime.rest;
    if (!report || !rest || this.stopping) return;
    try {
      for (const f of await collectKernelFiles(rest, handle.id, report, this.limits, this.runtime.artifacts, this.itemId)) this.run.out.capture.pushFile(f);
    } catch (err) {
      this.runtime.settings.log(`[codeact] copying the files of ${this.itemId} failed: ${(err as Error).message}`);
    }
  }

  /** Set while the run has not sent its code yet: a Stop then just abandons the wait. */
  private onStopBeforeStart?: () => void;

  private async runOn(handle: KernelHandle): Promise<void> {
    const conn = handle.conn;
    const s = this.runtime.settings;
    const tools = new ToolChannel({
      itemId: this.itemId,
      prefix: handle.prefix,
      runId: this.runId,
      handler: this.options.onToolCall,
      toolsEnabled: this.request.tools !== false,
      maxConcurrent: Math.max(1, this.limits.maxConcurrentToolCalls),
      maxTotal: this.limits.maxToolCallsPerRun,
      note: (text) => this.run.out.note(text),
      maxFrameBytes: s.maxFrameBytes * 4,
      pauseClock: () => this.run.clock.pause(),
      emit: this.run.emit,
      reply: (value, header) => {
        const send = () => {
          try {
            if (!conn.isDisposed) conn.sendInputReply({ status: 'ok', value }, header as KernelMessage.IInputReplyMsg['parent_header']);
          } catch (err) {
            s.log(`[codeact] could not answer a tool frame: ${(err as Error).message}`);
          }
        };
        if (conn.connectionStatus === 'connected') return send();
        // While the WebSocket reconnects, the library would queue the reply behind its kernel_info_request, which a
        // kernel blocked on this very reply cannot answer (it then waits for a 3 s fail-safe): send it once it is back.
        const slot = (_: unknown, status: Kernel.ConnectionStatus) => {
          if (status === 'connecting') return;
          conn.connectionStatusChanged.disconnect(slot);
          if (status === 'connected' && !this.finished) send();
        };
        conn.connectionStatusChanged.connect(slot);
      },
      onViolation: (message) => this.fail({ type: 'ProtocolError', message }),
    });
    this.tools = tools;
    const onStatus = (_: unknown, status: Kernel.Status) => this.onKernelStatus(status);
    const onConnection = (_: unknown, status: Kernel.ConnectionStatus) => this.onConnection(status);
    conn.statusChanged.connect(onStatus);
    conn.connectionStatusChanged.connect(onConnection);
    try {
      this.send(conn);
      this.run.startClock(this.request.timeoutMs ?? this.limits.timeoutMs);
      if (conn.connectionStatus !== 'connected') this.onConnection(conn.connectionStatus);
      await this.run.done;
    } finally {
      conn.statusChanged.disconnect(onStatus);
      conn.connectionStatusChanged.disconnect(onConnection);
      const future = this.future;
      if (future && !future.isDisposed) {
        try {
          future.dispose();
        } catch {
          // Already disposed with its kernel.
        }
      }
    }
  }

  private send(conn: Kernel.IKernelConnection): void {
    this.carried = this.handle!.kept;
    const future = conn.requestExecute(
      {
        code: runCell(this.request.code, {
          keep: [...this.carried.values()],
          runId: this.runId,
          tools: this.request.tools !== false,
          maxFrameBytes: this.runtime.settings.maxFrameBytes,
          maxValueBytes: this.limits.maxValueBytes,
          limits: this.limits,
        }),
        silent: false,
        store_history: false,
        allow_stdin: false,
        stop_on_error: false,
      },
      true,
    );
    this.future = future;
    future.onIOPub = (msg) => this.onIOPub(msg);
    future.onStdin = (msg) => {
      if (msg.header.msg_type === 'input_request') {
        this.tools?.onInputRequest((msg.content as KernelMessage.IInputRequestMsg['content']).prompt, msg.header);
      }
    };
    future.onReply = (reply) => this.onReply(conn, reply);
    future.done.then(
      () => {},
      (err: Error) => {
        if (this.finished) return;
        if (this.needsRestart || this.stopping) return this.finishNow();
        this.fail(
          this.handle?.lostReason
            ? lostError(this.handle.lostReason)
            : { type: 'KernelDied', message: `The kernel stopped answering this run (${err?.message ?? err}).` },
        );
      },
    );
  }

  private onReply(conn: Kernel.IKernelConnection, reply: KernelMessage.IExecuteReplyMsg): void {
    if (this.finished) return;
    const content = reply.content as { status: string; ename?: string; evalue?: string; traceback?: string[] };
    if (content.status === 'ok') {
      this.replied = true;
      if (this.completion) return this.finishWhenIdle();
      // The result travels on IOPub, which may arrive after the reply on the shell channel.
      this.resultTimer = setTimeout(() => {
        this.failure ??= {
          type: 'ProtocolError',
          message:
            'The kernel finished the run but its result did not arrive (messages can be lost while the connection to the ' +
            'server is re-established). The output shown may be incomplete; run the code again if needed.',
        };
        this.finishNow();
      }, 3000);
      return;
    }
    if (content.status === 'error' && /__codeact__/.test(`${content.evalue ?? ''}`) && !this.retriedBootstrap && !this.stopping) {
      // The bridge module was removed from the kernel (for instance `del sys.modules[...]`): reinstall once.
      this.retriedBootstrap = true;
      this.kernelError = undefined;
      const handle = this.handle!;
      handle.bootstrap().then(
        () => !this.finished && this.send(conn),
        (err) => this.fail(toExecutionError(err)),
      );
      return;
    }
    this.failure ??= this.kernelError ?? {
      type: content.ename || 'KernelError',
      message: content.evalue || `The kernel answered "${content.status}".`,
      ...(content.traceback?.length ? { traceback: stripAnsi(content.traceback.join('\n')) } : {}),
    };
    this.finishNow();
  }

  private onIOPub(msg: KernelMessage.IIOPubMessage): void {
    if (this.finished) return;
    const type = msg.header.msg_type;
    const content = msg.content as Record<string, unknown>;
    switch (type) {
      case 'stream': {
        const text = String(content.text ?? '');
        // Jupyter Server drops output over its IOPub rate limits and says so in a stream message.
        if (/^IOPub (data|message) rate exceeded\./.test(text)) this.run.out.markDropped();
        this.run.out.text(content.name === 'stderr' ? 'stderr' : 'stdout', text);
        break;
      }
      case 'display_data':
      case 'execute_result':
      case 'update_display_data': {
        const data = (content.data ?? {}) as Record<string, unknown>;
        if (data && typeof data === 'object' && RESULT_MIME in data) return this.onResult(data[RESULT_MIME]);
        this.onDisplay(type, content);
        break;
      }
      case 'status':
        // The result frame and then "idle" mean the run is over, even if the execute_reply (shell
        // channel) was lost to a WebSocket reconnect that did not get its buffered channels back.
        if (content.execution_state === 'idle') {
          this.idle = true;
          if (this.completion) this.finishNow();
        }
        break;
      case 'error':
        this.kernelError = {
          type: String(content.ename ?? 'Error'),
          message: String(content.evalue ?? ''),
          traceback: stripAnsi(Array.isArray(content.traceback) ? content.traceback.join('\n') : ''),
        };
        break;
      default:
        break;
    }
  }

  private onResult(raw: unknown): void {
    const r = raw as { ok?: unknown; value?: unknown; error?: unknown; run?: unknown; nonce?: unknown };
    if (!r || typeof r !== 'object' || r.run !== this.runId || r.nonce !== this.handle?.nonce || this.completion) return;
    if (r.ok === true) {
      let value: unknown = null;
      try {
        value = typeof r.value === 'string' ? JSON.parse(r.value) : null;
      } catch {
        value = null;
      }
      this.completion = valueCompletion(value);
    } else {
      this.completion = { ok: false, error: normaliseError(r.error, stripAnsi) };
    }
    this.handle!.delivered(this.carried);
    this.reported = reportedFiles(r as { cwd?: unknown; files?: unknown }, this.limits.maxFiles);
    if (this.idle) this.finishNow();
    else if (this.replied) this.finishWhenIdle();
  }

  /**
   * The result and the reply are in; the run is over when the kernel says "idle" for this request (displays
   * can still follow the result on IOPub). A lost "idle" (a WebSocket reconnect) ends it after a grace.
   */
  private finishWhenIdle(): void {
    if (this.idle) return this.finishNow();
    if (this.idleTimer) return;
    this.idleTimer = setTimeout(() => this.finishNow(), IDLE_GRACE_MS);
  }

  private onKernelStatus(status: Kernel.Status): void {
    if (this.finished || this.needsRestart) return;
    if (status === 'dead') {
      if (this.handle!.conn.connectionStatus !== 'connected' && !this.handle!.closed) {
        // With the WebSocket down, "dead" may mean the server is gone rather than the kernel: ask.
        void this.probe();
        return;
      }
      this.handle!.lostReason ??= 'the kernel died';
      this.fail(kernelDied(false));
    } else if (status === 'autorestarting' || (status === 'restarting' && !this.stopping)) {
      this.fail(kernelDied(true));
    }
  }

  private onConnection(status: Kernel.ConnectionStatus): void {
    if (this.finished) return;
    if (status === 'connected') {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
      this.tools?.onReconnected();
      return;
    }
    if (status === 'disconnected') {
      this.handle!.lostReason ??= 'the WebSocket connection to the server was lost';
      return this.fail(connectionLost(this.runtime.rest!.displayUrl, 'the WebSocket closed and could not reconnect'));
    }
    void this.probe();
  }

  /** The WebSocket dropped mid-run: is the server still there, and the kernel? */
  private async probe(): Promise<void> {
    if (this.probing || this.finished) return;
    this.probing = true;
    const handle = this.handle!;
    const rest = this.runtime.rest!;
    try {
      const model = await rest.getModel(handle.id, 5_000);
      if (this.finished) return;
      if (!model || model.execution_state === 'dead') {
        handle.lostReason ??= 'the kernel no longer exists on the server';
        return this.fail(lostError(handle.lostReason));
      }
      // The server and the kernel are there: give the WebSocket time to come back (Jupyter Server
      // replays the messages it buffered for this client meanwhile).
      if (handle.conn.connectionStatus !== 'connected') {
        clearTimeout(this.reconnectTimer);
        this.reconnectTimer = setTimeout(() => {
          if (this.finished || handle.conn.connectionStatus === 'connected') return;
          handle.lostReason ??= 'the WebSocket connection to the server was lost';
          this.fail(connectionLost(rest.displayUrl, `the WebSocket did not reconnect within ${formatDuration(this.runtime.settings.reconnectGraceMs)}`));
        }, this.runtime.settings.reconnectGraceMs);
      }
    } catch (err) {
      if (this.finished) return;
      handle.lostReason ??= 'the server stopped answering';
      const detail =
        err instanceof JupyterError && err.type === 'JupyterUnreachable'
          ? `the server no longer answers: ${err.detail}`
          : err instanceof JupyterError && err.type === 'JupyterTimeout'
            ? 'the server stopped answering'
            : (err as Error).message;
      this.fail(connectionLost(rest.displayUrl, detail));
    } finally {
      this.probing = false;
    }
  }

  /** A display_data, execute_result or update_display_data message's content, under the display caps. */
  private onDisplay(kind: 'display_data' | 'execute_result' | 'update_display_data', content: Record<string, unknown>): void {
    const update = kind === 'update_display_data';
    const transient = content.transient as { display_id?: unknown } | undefined;
    const display = this.run.out.take(
      { data: content.data, metadata: content.metadata, display_id: transient?.display_id, ...(kind === 'execute_result' ? { result: true } : {}) },
      update,
    );
    // An update of a display this run did not show (an earlier cell's) is shown where the run stands.
    if (display) this.run.out.place(display, update);
  }

  /** Stop (AbortSignal, closeSession) or timeout: interrupt, then restart if the interrupt does not take (the skeleton's sequence). */
  stop(kind: 'cancel' | 'timeout'): void {
    this.run.stop(kind);
  }

  /** The kernel's side of a stop: a run that has not sent its code just ends; otherwise the server interrupts the kernel. */
  private interrupt(): boolean | Promise<boolean> {
    if (!this.future || this.onStopBeforeStart) {
      this.onStopBeforeStart?.();
      this.finishNow();
      return false;
    }
    const handle = this.handle!;
    return this.runtime.rest!.interrupt(handle.id).then(
      () => {
        if (this.finished) return false;
        this.stopNote = ' The kernel was interrupted; its variables are kept.';
        return true;
      },
      (err: Error) => {
        if (this.finished) return false;
        handle.lostReason ??= 'the server stopped answering';
        this.stopNote = ` Interrupting the kernel failed: ${err.message}`;
        this.finishNow();
        return false;
      },
    );
  }

  private restartAfterFailedInterrupt(grace: number): void {
    if (this.finished) return;
    this.needsRestart = true;
    this.stopNote =
      ` The kernel did not respond to the interrupt within ${formatDuration(grace)}, so it was restarted: ` + 'variables from earlier runs are gone.';
    this.finishNow();
  }

  private fail(error: ExecutionError): void {
    if (this.finished) return;
    this.failure ??= error;
    this.finishNow();
  }

  private finishNow(): void {
    if (this.finished) return;
    this.run.finish();
    this.tools?.close();
  }

  private cleanup(): void {
    this.run.finish();
    for (const timer of [this.reconnectTimer, this.resultTimer, this.idleTimer]) clearTimeout(timer);
    this.tools?.close();
  }

  private result(error?: ExecutionError): CodeInterpreterCallItem {
    const item = this.run.item(this.request.code, { runtime: 'jupyter', containerId: this.handle?.id ?? null, error, completion: this.completion });
    if (this.number && this.handle?.sessionId) item.session = { id: this.handle.sessionId, execution: this.number };
    return this.run.announce(item);
  }
}
