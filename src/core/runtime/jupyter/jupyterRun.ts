/**
 * One execution on a Jupyter kernel: the events of the vocabulary, output caps, the tool channel,
 * Stop and timeout (interrupt, then restart), and the failures of the connection and the kernel.
 */
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { CodeActEvent, CodeInterpreterCallItem, ExecutionError } from '../../../common/events';
import {
  announceDone,
  cancelledError,
  executionItem,
  normaliseError,
  openExecution,
  safeEmit,
  timeoutError,
  valueCompletion,
  type Completion,
} from '../execution';
import type { ExecuteOptions, ExecuteRequest, RuntimeLimits } from '../types';
import { JupyterError } from './connection';
import { RESULT_MIME, runCell } from './kernelBridge';
import type { KernelHandle } from './kernelHandle';
import type { KernelPool } from './kernelPool';
import { RunOutput } from './runOutput';
import { collectKernelFiles, reportedFiles, type ReportedFiles } from './kernelFiles';

/** How long a finished run waits for the kernel's "idle" after its result and reply. */
const IDLE_GRACE_MS = 2000;
import { connectionLost, finalError, kernelDied, lostError, stripAnsi, toExecutionError } from './runErrors';
import { formatDuration } from '../../../common/format';
import { raceAbort } from '../../util/abort';
import { ToolChannel } from './toolChannel';
import { newId, randomToken } from '../../util/ids';
import { RunClock } from '../../util/timeout';

export class JupyterRun {
  readonly itemId: string;
  private readonly started = performance.now();
  private readonly limits: RuntimeLimits;
  private readonly runId = randomToken(8);
  private readonly emit: (event: CodeActEvent) => void;
  private readonly output: RunOutput;
  private handle?: KernelHandle;
  private future?: Kernel.IShellFuture<KernelMessage.IExecuteRequestMsg, KernelMessage.IExecuteReplyMsg>;
  private tools?: ToolChannel;
  private completion?: Completion;
  private kernelError?: ExecutionError;
  private failure?: ExecutionError;
  private stopping?: ExecutionError;
  private stopNote = '';
  private needsRestart = false;
  private retriedBootstrap = false;
  private finished = false;
  private finish!: () => void;
  private readonly done = new Promise<void>((r) => (this.finish = r));
  /** The run's timeout; it stops counting while the person decides an approval. */
  private readonly clock = new RunClock();
  private graceTimer?: NodeJS.Timeout;
  private reconnectTimer?: NodeJS.Timeout;
  private resultTimer?: NodeJS.Timeout;
  private replied = false;
  /** The kernel said "idle" for this request: every IOPub message of the run has arrived. */
  private idle = false;
  private idleTimer?: NodeJS.Timeout;
  private reported?: ReportedFiles;
  private probing = false;

  constructor(
    private readonly runtime: KernelPool<KernelHandle>,
    private readonly request: ExecuteRequest,
    private readonly options: ExecuteOptions,
  ) {
    this.itemId = request.itemId ?? newId('exec');
    this.limits = runtime.settings.limits;
    this.emit = safeEmit(options.onEvent);
    this.output = new RunOutput(this.itemId, this.limits, this.emit);
  }

  async start(): Promise<CodeInterpreterCallItem> {
    const signal = this.options.signal;
    const refused = openExecution(this.emit, this.request, this.itemId, 'jupyter', this.limits, signal);
    if (refused) return this.result(refused);

    const onAbort = () => this.stop('cancel');
    signal?.addEventListener('abort', onAbort, { once: true });
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
      if (got.notice) this.output.onText('stderr', got.notice);
      await handle.withLock(async () => {
        this.handle = handle;
        handle!.current = this;
        try {
          if (this.stopping) return;
          if (!handle!.bootstrapped) await raceAbort(handle!.bootstrap(), stopped.signal);
          if (this.stopping) return;
          this.onStopBeforeStart = undefined;
          await this.runOn(handle!);
          await this.collectFiles(handle!);
          if (this.completion && !this.needsRestart) await handle!.keepOutput(this.request.execution, this.output.outputs());
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
      signal?.removeEventListener('abort', onAbort);
      this.cleanup();
    }
    const item = this.result(finalError({ stopping: this.stopping, stopNote: this.stopNote, failure: this.failure, completion: this.completion }));
    if (handle) await this.runtime.afterRun(handle).catch(() => {});
    return item;
  }

  /** The files the run wrote, copied through the contents API (while the kernel is still this run's). */
  private async collectFiles(handle: KernelHandle): Promise<void> {
    this.output.close();
    const report = this.reported;
    const rest = this.runtime.rest;
    if (!report || !rest || this.stopping) return;
    try {
      for (const f of await collectKernelFiles(rest, handle.id, report, this.limits, this.runtime.artifacts, this.itemId)) this.output.addFile(f);
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
      note: (text) => this.output.onText('stderr', text),
      maxFrameBytes: s.maxFrameBytes * 4,
      pauseClock: () => this.clock.pause(),
      emit: this.emit,
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
      const timeoutMs = this.request.timeoutMs ?? this.limits.timeoutMs;
      this.clock.start(timeoutMs, () => this.stop('timeout', timeoutMs));
      if (conn.connectionStatus !== 'connected') this.onConnection(conn.connectionStatus);
      await this.done;
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
    const future = conn.requestExecute(
      {
        code: runCell(this.request.code, {
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
      case 'stream':
        this.output.onStream(content.name, String(content.text ?? ''));
        break;
      case 'display_data':
      case 'execute_result':
      case 'update_display_data': {
        const data = (content.data ?? {}) as Record<string, unknown>;
        if (data && typeof data === 'object' && RESULT_MIME in data) return this.onResult(data[RESULT_MIME]);
        this.output.onDisplay(type, content);
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

  /** Stop (AbortSignal, closeSession) or timeout: interrupt, then restart if the interrupt does not take. */
  stop(kind: 'cancel' | 'timeout', timeoutMs?: number): void {
    if (this.finished || this.stopping) return;
    const inFlight = this.tools?.inFlight ?? 0;
    this.stopping = kind === 'timeout' ? timeoutError(timeoutMs ?? 0, inFlight) : cancelledError();
    this.tools?.cancel();
    if (!this.future || this.onStopBeforeStart) {
      this.onStopBeforeStart?.();
      return this.finishNow();
    }
    const handle = this.handle!;
    const rest = this.runtime.rest!;
    const grace = this.runtime.settings.interruptGraceMs;
    rest.interrupt(handle.id).then(
      () => {
        if (this.finished) return;
        this.stopNote = ' The kernel was interrupted; its variables are kept.';
        this.graceTimer = setTimeout(() => this.restartAfterFailedInterrupt(grace), grace);
      },
      (err: Error) => {
        if (this.finished) return;
        handle.lostReason ??= 'the server stopped answering';
        this.stopNote = ` Interrupting the kernel failed: ${err.message}`;
        this.finishNow();
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
    this.finished = true;
    this.tools?.close();
    this.finish();
  }

  private cleanup(): void {
    this.finished = true;
    this.clock.stop();
    for (const timer of [this.graceTimer, this.reconnectTimer, this.resultTimer, this.idleTimer]) clearTimeout(timer);
    this.tools?.close();
    this.finish();
  }

  private result(error?: ExecutionError): CodeInterpreterCallItem {
    this.output.close();
    const item = executionItem({
      itemId: this.itemId,
      code: this.request.code,
      runtime: 'jupyter',
      containerId: this.handle?.id ?? null,
      outputs: this.output.outputs(),
      error,
      completion: this.completion,
      startedAt: this.started,
      truncated: this.output.truncated,
    });
    return announceDone(this.emit, item);
  }
}
