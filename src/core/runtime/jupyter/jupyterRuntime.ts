/**
 * The Jupyter runtime: runs code in a kernel behind Jupyter Server, Kernel Gateway or Enterprise
 * Gateway, through `@jupyterlab/services` (REST + WebSocket, `ws` in Node).
 *
 * - One kernel per conversation (`sessionPolicy: "conversation"`, keyed by `ExecuteRequest.sessionId`)
 *   so later code builds on earlier state, or one kernel per execution (`"execution"`). Kernels are
 *   shut down by closeSession(), dispose(), after `idleShutdownMs` without a run, and (per-execution
 *   kernels) as soon as their run is over.
 * - The code runs through a bridge module installed once per kernel (kernelBridge.ts): top-level
 *   `return` and `await`, the user's own line numbers, a JSON value, and `call_tool` routed to the
 *   host's handler over the stdin channel (toolChannel.ts explains the choice and the concurrency).
 * - Stop and timeout interrupt the kernel (variables survive); if the interrupt has not taken within
 *   `interruptGraceMs`, the kernel is restarted. Tool calls in flight see their AbortSignal fire.
 * - A wrong URL or token, a dead kernel, a kernel dying mid-run and a lost WebSocket end the run with
 *   a clear error and keep whatever output had arrived.
 */
import { randomBytes } from 'node:crypto';
import { KernelConnection, type Kernel, type KernelMessage } from '@jupyterlab/services';
import type { CodeActEvent, CodeInterpreterCallItem, CodeOutput, ExecutionError, StreamName } from '../../../common/events';
import { DEFAULT_LIMITS, TRUNCATION_MARKER, formatBytes, type ExecuteOptions, type ExecuteRequest, type Runtime, type RuntimeLimits } from '../types';
import {
  JupyterError,
  KernelRestClient,
  makeServerSettings,
  normaliseBaseUrl,
  quietLibraryLogging,
  withQuietConsole,
  type ConnectionConfig,
} from './connection';
import { RESULT_MIME, bootstrapCell, runCell, toolPromptPrefix } from './kernelBridge';
import { DEFAULT_MAX_FRAME_BYTES, ToolChannel } from './toolChannel';

export type JupyterSessionPolicy = 'conversation' | 'execution';

export interface JupyterRuntimeOptions {
  /** Base URL of the server, e.g. `http://127.0.0.1:8888/` (any base path included). */
  url: string;
  /**
   * The server's token. The caller reads it from SecretStorage or `CODEACT_JUPYTER_TOKEN`; it is
   * never taken from settings. It travels as an `Authorization: token …` header only.
   */
  token?: string;
  /** Kernel spec name; default `python3`. */
  kernelName?: string;
  /** `conversation` (default): one kernel per `ExecuteRequest.sessionId`; `execution`: a fresh kernel per run. */
  sessionPolicy?: JupyterSessionPolicy;
  limits?: Partial<RuntimeLimits>;
  /** Shut a conversation's kernel down after this long without a run; default 30 min; 0 = never. */
  idleShutdownMs?: number;
  /** How long an interrupt may take before the kernel is restarted; default 3 s. */
  interruptGraceMs?: number;
  /** Kernel start-up, including a gateway launching a pod; default 120 s. */
  startTimeoutMs?: number;
  /** One REST request (interrupt, restart, shutdown, lookups); default 30 s. */
  requestTimeoutMs?: number;
  /** How long a dropped WebSocket may take to reconnect mid-run; default 10 s. */
  reconnectGraceMs?: number;
  /** Largest `call_tool` argument payload; default 16 MiB. */
  maxFrameBytes?: number;
  /** Diagnostics: the library's own log lines and background failures (never the token). */
  log?: (line: string) => void;
}

interface Settings {
  kernelName: string;
  sessionPolicy: JupyterSessionPolicy;
  limits: RuntimeLimits;
  idleShutdownMs: number;
  interruptGraceMs: number;
  startTimeoutMs: number;
  reconnectGraceMs: number;
  maxFrameBytes: number;
  log: (line: string) => void;
}

export function newItemId(prefix = 'exec'): string {
  return `${prefix}_${randomBytes(8).toString('hex')}`;
}

export class JupyterRuntime implements Runtime {
  readonly kind = 'jupyter' as const;
  /** Resolved settings (exposed for the runs of this module). */
  readonly settings: Settings;
  readonly rest?: KernelRestClient;
  private readonly serverSettings?: ReturnType<typeof makeServerSettings>;
  private readonly configError?: JupyterError;
  private readonly sessions = new Map<string, Promise<KernelHandle>>();
  private readonly expiredNotice = new Map<string, string>();
  private readonly handles = new Set<KernelHandle>();
  private readonly shutdowns = new Set<Promise<void>>();
  private readonly runs = new Set<JupyterRun>();
  private disposed = false;

  constructor(options: JupyterRuntimeOptions) {
    this.settings = {
      kernelName: options.kernelName || 'python3',
      sessionPolicy: options.sessionPolicy ?? 'conversation',
      limits: { ...DEFAULT_LIMITS, ...(options.limits ?? {}) },
      idleShutdownMs: options.idleShutdownMs ?? 30 * 60_000,
      interruptGraceMs: options.interruptGraceMs ?? 3_000,
      startTimeoutMs: options.startTimeoutMs ?? 120_000,
      reconnectGraceMs: options.reconnectGraceMs ?? 10_000,
      maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      log: options.log ?? (() => {}),
    };
    try {
      const config: ConnectionConfig = {
        baseUrl: normaliseBaseUrl(options.url ?? ''),
        token: options.token || undefined,
        requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      };
      this.serverSettings = makeServerSettings(config);
      this.rest = new KernelRestClient(this.serverSettings, config);
    } catch (err) {
      // Reported by execute() as a failed item, where the user sees it.
      this.configError = err instanceof JupyterError ? err : new JupyterError('JupyterConfigError', String(err));
    }
  }

  async execute(request: ExecuteRequest, options: ExecuteOptions = {}): Promise<CodeInterpreterCallItem> {
    if (!request || typeof request.code !== 'string') throw new TypeError('JupyterRuntime.execute: request.code must be a string');
    if (this.disposed) throw new Error('JupyterRuntime.execute: the runtime has been disposed');
    const run = new JupyterRun(this, request, options);
    this.runs.add(run);
    try {
      return await run.start();
    } finally {
      this.runs.delete(run);
    }
  }

  /** Shuts down the kernel of one conversation (its variables are gone). */
  async closeSession(sessionId: string): Promise<void> {
    this.expiredNotice.delete(sessionId);
    const pending = this.sessions.get(sessionId);
    if (!pending) return;
    this.sessions.delete(sessionId);
    const handle = await pending.catch(() => undefined);
    if (!handle) return;
    handle.current?.stop('cancel');
    await this.shutdownHandle(handle, 'the conversation was closed');
  }

  /**
   * Restarts the kernel of one conversation on demand (its variables are gone); a run in progress
   * is stopped first. Does nothing when the conversation has no kernel.
   */
  async restartSession(sessionId: string): Promise<void> {
    const handle = await this.sessions.get(sessionId)?.catch(() => undefined);
    if (!handle) return;
    handle.current?.stop('cancel');
    await handle.withLock(async () => {
      await handle.restart();
    });
  }

  /** Kernel ids this runtime holds right now (for diagnostics and tests). */
  get kernelIds(): string[] {
    return [...this.handles].filter((h) => !h.closed).map((h) => h.id);
  }

  async dispose(): Promise<void> {
    if (this.disposed) {
      await Promise.allSettled([...this.shutdowns]);
      return;
    }
    this.disposed = true;
    for (const run of this.runs) run.stop('cancel');
    const sessionIds = [...this.sessions.keys()];
    await Promise.allSettled(sessionIds.map((id) => this.closeSession(id)));
    await Promise.allSettled([...this.handles].map((h) => this.shutdownHandle(h, 'the runtime was disposed')));
    await Promise.allSettled([...this.shutdowns]);
  }

  // ---- kernels ----------------------------------------------------------------------------------

  /** The kernel for a run, started when needed, plus a notice when earlier state was lost. */
  async acquire(sessionId: string | undefined): Promise<{ handle: KernelHandle; notice?: string }> {
    if (this.configError) throw this.configError;
    if (this.settings.sessionPolicy === 'execution' || !sessionId) {
      return { handle: await this.startKernel(undefined) };
    }
    let notice: string | undefined;
    for (;;) {
      const pending = this.sessions.get(sessionId);
      if (!pending) break;
      const handle = await pending.catch(() => undefined);
      if (this.sessions.get(sessionId) !== pending) continue; // replaced meanwhile
      if (handle && (await handle.ready())) return { handle };
      if (this.sessions.get(sessionId) !== pending) continue;
      this.sessions.delete(sessionId);
      if (handle) {
        notice =
          `[codeact] The Jupyter kernel of this conversation was lost (${handle.lostReason ?? 'it stopped answering'}); ` +
          'a new kernel was started, so variables from earlier runs are gone.\n';
        void this.shutdownHandle(handle, 'it was lost');
      }
      break;
    }
    notice ??= this.expiredNotice.get(sessionId);
    this.expiredNotice.delete(sessionId);
    const starting = this.startKernel(sessionId);
    this.sessions.set(sessionId, starting);
    try {
      return { handle: await starting, notice };
    } catch (err) {
      if (this.sessions.get(sessionId) === starting) this.sessions.delete(sessionId);
      throw err;
    }
  }

  private async startKernel(sessionId: string | undefined): Promise<KernelHandle> {
    const rest = this.rest!;
    const s = this.settings;
    const model = await rest.startNew({ name: s.kernelName });
    const conn = withQuietConsole(s.log, () =>
      new KernelConnection({
        model,
        serverSettings: this.serverSettings,
        kernelAPIClient: rest,
        handleComms: false,
        username: 'codeact',
      }),
    );
    quietLibraryLogging(conn, s.log);
    const handle = new KernelHandle(this, model.id, conn, sessionId);
    this.handles.add(handle);
    try {
      if (this.disposed) throw new JupyterError('JupyterClosed', 'The Jupyter runtime was disposed while a kernel was starting.');
      await waitForKernel(conn, s.startTimeoutMs, rest.displayUrl);
      await handle.bootstrap();
    } catch (err) {
      await this.shutdownHandle(handle, 'it failed to start');
      throw err;
    }
    return handle;
  }

  /** After a run: per-execution kernels go away, conversation kernels start their idle clock. */
  async afterRun(handle: KernelHandle): Promise<void> {
    if (!handle.sessionId || this.settings.sessionPolicy === 'execution') {
      await this.shutdownHandle(handle, 'its run is over');
      return;
    }
    if (handle.lostReason && handle.conn.status === 'dead') {
      // Dead for good: let the next run start afresh (acquire() will say so).
      return;
    }
    handle.armIdleTimer(this.settings.idleShutdownMs, () => {
      const sid = handle.sessionId!;
      const pending = this.sessions.get(sid);
      void pending?.then((h) => {
        if (h !== handle || handle.busy) return;
        this.sessions.delete(sid);
        this.expiredNotice.set(
          sid,
          `[codeact] The Jupyter kernel of this conversation was shut down after ${formatDuration(this.settings.idleShutdownMs)} ` +
            'without a run; a new kernel was started, so variables from earlier runs are gone.\n',
        );
        void this.shutdownHandle(handle, 'it was idle');
      }, () => {});
    });
  }

  shutdownHandle(handle: KernelHandle, why: string): Promise<void> {
    const p = handle.shutdown(why).finally(() => {
      this.handles.delete(handle);
      this.shutdowns.delete(p);
    });
    this.shutdowns.add(p);
    return p;
  }
}

// ---- one kernel -------------------------------------------------------------------------------

class KernelHandle {
  readonly nonce = randomBytes(16).toString('hex');
  bootstrapped = false;
  closed = false;
  lostReason?: string;
  current?: JupyterRun;
  busy = 0;
  private lock: Promise<void> = Promise.resolve();
  private idleTimer?: NodeJS.Timeout;
  private shutdownPromise?: Promise<void>;

  constructor(
    readonly runtime: JupyterRuntime,
    readonly id: string,
    readonly conn: Kernel.IKernelConnection,
    readonly sessionId: string | undefined,
  ) {
    conn.statusChanged.connect((_sender, status) => {
      if (status === 'autorestarting' || status === 'restarting' || status === 'starting') this.bootstrapped = false;
      if (status === 'dead') this.lostReason ??= 'the kernel died';
    });
  }

  get prefix(): string {
    return toolPromptPrefix(this.nonce);
  }

  /** Runs fn with this kernel to itself (runs of one conversation queue up). */
  async withLock<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    this.busy++;
    clearTimeout(this.idleTimer);
    const previous = this.lock;
    let release!: () => void;
    this.lock = new Promise<void>((r) => (release = r));
    try {
      await raceAbort(previous, signal);
      return await fn();
    } finally {
      // A run abandoned while queued releases only once its turn has come.
      void previous.then(release);
      this.busy--;
    }
  }

  armIdleTimer(ms: number, onIdle: () => void): void {
    clearTimeout(this.idleTimer);
    if (ms <= 0 || this.closed) return;
    this.idleTimer = setTimeout(() => {
      if (!this.busy) onIdle();
    }, ms);
    this.idleTimer.unref?.();
  }

  /** True when the kernel can take a run now (waits briefly for a WebSocket that is reconnecting). */
  async ready(): Promise<boolean> {
    if (this.closed || this.conn.isDisposed) return false;
    if (this.conn.status === 'dead') {
      this.lostReason ??= 'the kernel died';
      return false;
    }
    if (this.conn.connectionStatus === 'connected') return true;
    const ok = await waitConnected(this.conn, this.runtime.settings.reconnectGraceMs);
    if (!ok) this.lostReason ??= 'the WebSocket connection to the server was lost';
    return ok;
  }

  async bootstrap(): Promise<void> {
    const s = this.runtime.settings;
    const future = this.conn.requestExecute({ code: bootstrapCell(this.nonce), silent: true, store_history: false, allow_stdin: false, stop_on_error: false });
    let reply: KernelMessage.IExecuteReplyMsg;
    try {
      reply = await withTimeout(future.done, s.startTimeoutMs, () =>
        new JupyterError('JupyterTimeout', `The "${s.kernelName}" kernel did not finish CodeAct's set-up within ${formatDuration(s.startTimeoutMs)}.`),
      );
    } catch (err) {
      if (!future.isDisposed) future.dispose();
      if (err instanceof JupyterError) throw err;
      throw new JupyterError('KernelDied', `The "${s.kernelName}" kernel went away during CodeAct's set-up (${(err as Error).message}).`);
    }
    const content = reply.content as { status: string; ename?: string; evalue?: string };
    if (content.status !== 'ok') {
      throw new JupyterError(
        'JupyterBootstrapError',
        `Could not install call_tool in the "${s.kernelName}" kernel (${content.ename ?? content.status}: ${content.evalue ?? ''}). ` +
          'The Jupyter runtime needs a Python kernel running ipykernel 6 or later; set codeact.jupyter.kernelName to one.',
      );
    }
    this.bootstrapped = true;
  }

  /** Restarts the kernel (state lost) and installs the bridge again. */
  async restart(): Promise<void> {
    const s = this.runtime.settings;
    this.bootstrapped = false;
    await withTimeout(this.conn.restart(), s.startTimeoutMs, () =>
      new JupyterError('JupyterTimeout', `The kernel did not restart within ${formatDuration(s.startTimeoutMs)}.`),
    );
    await waitForKernel(this.conn, s.startTimeoutMs, this.runtime.rest!.displayUrl);
    await this.bootstrap();
  }

  shutdown(why: string): Promise<void> {
    this.shutdownPromise ??= (async () => {
      this.closed = true;
      this.lostReason ??= `it was shut down (${why})`;
      clearTimeout(this.idleTimer);
      try {
        await this.runtime.rest!.shutdown(this.id, 15_000);
      } catch (err) {
        this.runtime.settings.log(`[codeact] could not shut down Jupyter kernel ${this.id}: ${(err as Error).message}`);
      }
      try {
        if (!this.conn.isDisposed) withQuietConsole(this.runtime.settings.log, () => this.conn.dispose());
      } catch {
        // Already gone.
      }
    })();
    return this.shutdownPromise;
  }
}

// ---- one run ------------------------------------------------------------------------------------

interface StreamState {
  bytes: number;
  text: string[];
  truncated: boolean;
}

type Completion = { ok: true; value: unknown } | { ok: false; error: ExecutionError };

class JupyterRun {
  readonly itemId: string;
  private readonly started = performance.now();
  private readonly limits: RuntimeLimits;
  private readonly runId = randomBytes(8).toString('hex');
  private readonly streams: Record<StreamName, StreamState> = {
    stdout: { bytes: 0, text: [], truncated: false },
    stderr: { bytes: 0, text: [], truncated: false },
  };
  private readonly images: CodeOutput[] = [];
  private imageBytes = 0;
  private imagesDropped = false;
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
  private timer?: NodeJS.Timeout;
  private graceTimer?: NodeJS.Timeout;
  private reconnectTimer?: NodeJS.Timeout;
  private probing = false;

  constructor(
    private readonly runtime: JupyterRuntime,
    private readonly request: ExecuteRequest,
    private readonly options: ExecuteOptions,
  ) {
    this.itemId = request.itemId ?? newItemId();
    this.limits = runtime.settings.limits;
  }

  private emit(event: CodeActEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // A consumer's bug must not break the run.
    }
  }

  async start(): Promise<CodeInterpreterCallItem> {
    const { code } = this.request;
    this.emit({ type: 'response.code_interpreter_call.in_progress', item_id: this.itemId, runtime: 'jupyter' });
    this.emit({ type: 'response.code_interpreter_call_code.delta', item_id: this.itemId, delta: code });
    this.emit({ type: 'response.code_interpreter_call_code.done', item_id: this.itemId, code });

    const size = Buffer.byteLength(code, 'utf8');
    if (size > this.limits.maxSourceBytes) {
      return this.result({
        type: 'SourceTooLarge',
        message:
          `The code is ${size.toLocaleString('en-US')} bytes; the limit is ${formatBytes(this.limits.maxSourceBytes)}. ` +
          'Split the work into smaller steps or raise codeact.limits.maxSourceBytes.',
      });
    }
    const signal = this.options.signal;
    if (signal?.aborted) return this.result({ type: 'Cancelled', message: 'The run was stopped before it started.' });
    this.emit({ type: 'response.code_interpreter_call.interpreting', item_id: this.itemId });

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
          void acquiring.then((g) => (g.handle.sessionId ? undefined : this.runtime.shutdownHandle(g.handle, 'its run was stopped')), () => {});
        }
        throw err;
      }
      handle = got.handle;
      if (got.notice) this.onText('stderr', got.notice);
      await handle.withLock(async () => {
        this.handle = handle;
        handle!.current = this;
        try {
          if (this.stopping) return;
          if (!handle!.bootstrapped) await raceAbort(handle!.bootstrap(), stopped.signal);
          if (this.stopping) return;
          this.onStopBeforeStart = undefined;
          await this.runOn(handle!);
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
    const item = this.result(this.finalError());
    if (handle) await this.runtime.afterRun(handle).catch(() => {});
    return item;
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
      maxFrameBytes: s.maxFrameBytes * 4,
      emit: (e) => this.emit(e),
      reply: (value, header) => {
        const send = () => {
          try {
            if (!conn.isDisposed) conn.sendInputReply({ status: 'ok', value }, header as KernelMessage.IInputReplyMsg['parent_header']);
          } catch (err) {
            s.log(`[codeact] could not answer a tool frame: ${(err as Error).message}`);
          }
        };
        if (conn.connectionStatus === 'connected') return send();
        // While the WebSocket reconnects, the library would queue the reply behind its
        // kernel_info_request, which a kernel blocked on this very reply cannot answer (it then
        // waits for a 3 s fail-safe). Send it as soon as the socket is back instead.
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
      this.timer = setTimeout(() => this.stop('timeout', timeoutMs), timeoutMs);
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
          maxValueChars: this.limits.maxOutputBytes,
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
    future.done.then(
      (reply) => this.onReply(conn, reply),
      (err: Error) => {
        if (this.finished) return;
        if (this.needsRestart || this.stopping) return this.finishNow();
        this.fail(this.handle?.lostReason
          ? lostError(this.handle.lostReason)
          : { type: 'KernelDied', message: `The kernel stopped answering this run (${err?.message ?? err}).` });
      },
    );
  }

  private onReply(conn: Kernel.IKernelConnection, reply: KernelMessage.IExecuteReplyMsg): void {
    if (this.finished) return;
    const content = reply.content as { status: string; ename?: string; evalue?: string; traceback?: string[] };
    if (content.status === 'ok') {
      if (!this.completion) {
        this.failure ??= { type: 'ProtocolError', message: 'The kernel finished the run without reporting its result (was the CodeAct bridge replaced?).' };
      }
      return this.finishNow();
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
    const content = msg.content as Record<string, any>;
    switch (type) {
      case 'stream':
        this.onText(content.name === 'stderr' ? 'stderr' : 'stdout', String(content.text ?? ''));
        break;
      case 'display_data':
      case 'execute_result':
      case 'update_display_data': {
        const data = (content.data ?? {}) as Record<string, unknown>;
        if (RESULT_MIME in data) return this.onResult(data[RESULT_MIME]);
        this.onDisplay(data);
        break;
      }
      case 'status':
        // The result frame and then "idle" mean the run is over, even if the execute_reply (shell
        // channel) was lost to a WebSocket reconnect that did not get its buffered channels back.
        if (content.execution_state === 'idle' && this.completion) this.finishNow();
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
      this.completion = { ok: true, value };
    } else {
      this.completion = { ok: false, error: normaliseError(r.error) };
    }
  }

  private onDisplay(data: Record<string, unknown>): void {
    const image = pickImage(data);
    if (image) {
      if (this.imageBytes + image.length > this.limits.maxOutputBytes) {
        if (!this.imagesDropped) {
          this.imagesDropped = true;
          this.onText('stderr', `\n[codeact: image output dropped after ${formatBytes(this.limits.maxOutputBytes)} of images]\n`);
        }
        return;
      }
      this.imageBytes += image.length;
      this.images.push({ type: 'image', url: image });
      return;
    }
    if ('application/json' in data) {
      let text: string;
      try {
        text = JSON.stringify(data['application/json'], null, 2);
      } catch {
        text = String(data['application/json']);
      }
      this.onText('stdout', text + '\n');
      return;
    }
    const plain = data['text/plain'];
    if (typeof plain === 'string') this.onText('stdout', plain.endsWith('\n') ? plain : plain + '\n');
    else if (Array.isArray(plain)) this.onText('stdout', plain.join('') + '\n');
  }

  private onText(stream: StreamName, text: string): void {
    const s = this.streams[stream];
    if (s.truncated || !text) return;
    const bytes = Buffer.byteLength(text, 'utf8');
    const room = this.limits.maxOutputBytes - s.bytes;
    let part = text;
    if (bytes > room) {
      part = Buffer.from(text, 'utf8').subarray(0, room).toString('utf8').replace(/\uFFFD$/, '');
      s.truncated = true;
      part += TRUNCATION_MARKER(stream, this.limits.maxOutputBytes);
      s.bytes = this.limits.maxOutputBytes;
    } else {
      s.bytes += bytes;
    }
    s.text.push(part);
    this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream, delta: part });
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
      this.fail({
        type: 'KernelDied',
        message:
          'The Jupyter kernel died while running the code (its process exited or was killed, for example after running out of memory). ' +
          'A new kernel will be started for the next run; variables from earlier runs are gone.',
      });
    } else if (status === 'autorestarting' || (status === 'restarting' && !this.stopping)) {
      this.fail({
        type: 'KernelDied',
        message:
          'The Jupyter kernel died while running the code (its process exited or was killed, for example after running out of memory). ' +
          'The server restarted it, so variables from earlier runs are gone.',
      });
    }
  }

  private onConnection(status: Kernel.ConnectionStatus): void {
    if (this.finished) return;
    if (status === 'connected') {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
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
    this.stopping =
      kind === 'timeout'
        ? {
            type: 'Timeout',
            message:
              `The code ran longer than the ${formatDuration(timeoutMs ?? 0)} timeout and was stopped` +
              (inFlight ? `, with ${inFlight} tool call(s) still in flight` : '') +
              '. Make it faster, or raise the timeout (CLI: --timeout SECONDS; settings: codeact.timeoutSeconds).',
          }
        : { type: 'Cancelled', message: 'The run was stopped.' };
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
      ` The kernel did not respond to the interrupt within ${formatDuration(grace)}, so it was restarted: ` +
      'variables from earlier runs are gone.';
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
    clearTimeout(this.timer);
    clearTimeout(this.graceTimer);
    clearTimeout(this.reconnectTimer);
    this.tools?.close();
    this.finish();
  }

  private finalError(): ExecutionError | undefined {
    if (this.stopping) {
      const seen = this.completion && !this.completion.ok ? this.completion.error : undefined;
      return {
        ...this.stopping,
        message: this.stopping.message + this.stopNote,
        // Where the code was when it was stopped, if the kernel told us.
        ...(seen?.traceback ? { traceback: seen.traceback } : {}),
        ...(seen?.line ? { line: seen.line } : {}),
      };
    }
    if (this.failure) return this.failure;
    if (this.completion && !this.completion.ok) return this.completion.error;
    if (!this.completion) return { type: 'ProtocolError', message: 'The run ended without a result.' };
    return undefined;
  }

  private result(error?: ExecutionError): CodeInterpreterCallItem {
    const outputs: CodeOutput[] = [];
    const stdout = this.streams.stdout.text.join('');
    const stderr = this.streams.stderr.text.join('');
    if (stdout) outputs.push({ type: 'logs', logs: stdout });
    if (stderr) outputs.push({ type: 'logs', logs: stderr, stream: 'stderr' });
    outputs.push(...this.images);
    const ok = !error;
    const item: CodeInterpreterCallItem = {
      type: 'code_interpreter_call',
      id: this.itemId,
      status: ok ? 'completed' : 'failed',
      code: this.request.code,
      runtime: 'jupyter',
      container_id: this.handle?.id ?? null,
      outputs,
      exit_code: ok ? 0 : 1,
      error: error ?? null,
      value: ok && this.completion?.ok ? this.completion.value : null,
      duration_ms: Math.round((performance.now() - this.started) * 100) / 100,
      ...(this.streams.stdout.truncated || this.streams.stderr.truncated ? { truncated: true } : {}),
    };
    this.emit({ type: 'response.code_interpreter_call.completed', item_id: this.itemId });
    this.emit({ type: 'response.output_item.done', item });
    return item;
  }
}

// ---- helpers -------------------------------------------------------------------------------------

function toExecutionError(err: unknown): ExecutionError {
  if (err instanceof JupyterError) return { type: err.type, message: err.message };
  const e = err as Error;
  if (e?.name === 'AbortError') return { type: 'Cancelled', message: 'The run was stopped.' };
  return { type: 'JupyterError', message: e?.message ?? String(err) };
}

function lostError(reason: string): ExecutionError {
  return {
    type: 'KernelDied',
    message: `The Jupyter kernel was lost while running the code (${reason}). The output that arrived is kept; the next run starts a new kernel.`,
  };
}

function connectionLost(url: string, detail: string): ExecutionError {
  return {
    type: 'JupyterConnectionLost',
    message:
      `Lost the connection to the Jupyter server at ${url} while the code was running (${detail}). ` +
      'The output that arrived is kept. Check that the server is still running; the next run reconnects or starts a new kernel.',
  };
}

function normaliseError(raw: unknown): ExecutionError {
  const r = raw as { type?: unknown; message?: unknown; traceback?: unknown; line?: unknown } | null;
  if (!r || typeof r !== 'object') return { type: 'Error', message: 'The code failed.' };
  return {
    type: typeof r.type === 'string' ? r.type : 'Error',
    message: typeof r.message === 'string' ? r.message : String(r.message ?? ''),
    ...(typeof r.traceback === 'string' && r.traceback ? { traceback: stripAnsi(r.traceback) } : {}),
    ...(Number.isSafeInteger(r.line) ? { line: r.line as number } : {}),
  };
}

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

function pickImage(data: Record<string, unknown>): string | undefined {
  for (const mime of IMAGE_TYPES) {
    const v = data[mime];
    if (typeof v === 'string' && v) return `data:${mime};base64,${v.replace(/\s+/g, '')}`;
  }
  const svg = data['image/svg+xml'];
  const text = typeof svg === 'string' ? svg : Array.isArray(svg) ? svg.join('') : undefined;
  if (text) return `data:image/svg+xml;base64,${Buffer.from(text, 'utf8').toString('base64')}`;
  return undefined;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*\u0007/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

function formatDuration(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

function raceAbort<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortError());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError());
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

function abortError(): Error {
  const e = new Error('The run was stopped.');
  e.name = 'AbortError';
  return e;
}

function withTimeout<T>(promise: Promise<T>, ms: number, error: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(error()), ms);
    promise.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

function waitConnected(conn: Kernel.IKernelConnection, ms: number): Promise<boolean> {
  if (conn.connectionStatus === 'connected') return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(t);
      conn.connectionStatusChanged.disconnect(slot);
      resolve(ok);
    };
    const slot = (_: unknown, status: Kernel.ConnectionStatus) => {
      if (status === 'connected') done(true);
      else if (status === 'disconnected') done(false);
    };
    const t = setTimeout(() => done(false), ms);
    conn.connectionStatusChanged.connect(slot);
  });
}

/** Waits for the first kernel_info_reply on a new or restarted connection, failing fast on death. */
async function waitForKernel(conn: Kernel.IKernelConnection, ms: number, url: string): Promise<void> {
  let slot: ((_: unknown, s: Kernel.Status) => void) | undefined;
  let cslot: ((_: unknown, s: Kernel.ConnectionStatus) => void) | undefined;
  try {
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        slot = (_, s) => {
          if (s === 'dead') reject(new JupyterError('KernelDied', `The kernel died while starting on the Jupyter server at ${url}.`));
        };
        cslot = (_, s) => {
          if (s === 'disconnected') {
            reject(new JupyterError('JupyterConnectionLost', `Could not open a WebSocket to the kernel on the Jupyter server at ${url}. A proxy in between must allow WebSockets.`));
          }
        };
        conn.statusChanged.connect(slot);
        conn.connectionStatusChanged.connect(cslot);
        conn.info.then(() => resolve(), reject);
      }),
      ms,
      () => new JupyterError('JupyterTimeout', `The kernel on the Jupyter server at ${url} did not become ready within ${formatDuration(ms)}.`),
    );
  } finally {
    if (slot) conn.statusChanged.disconnect(slot);
    if (cslot) conn.connectionStatusChanged.disconnect(cslot);
  }
}
