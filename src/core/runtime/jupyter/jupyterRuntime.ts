/**
 * The Jupyter runtime: runs code in a kernel behind Jupyter Server, Kernel Gateway or Enterprise
 * Gateway, through `@jupyterlab/services` (REST + WebSocket, `ws` in Node).
 *
 * - One kernel per conversation (`sessionPolicy: "conversation"`, keyed by `ExecuteRequest.sessionId`)
 *   so later code builds on earlier state, or one kernel per execution (`"execution"`). Kernels are
 *   shut down by closeSession(), dispose(), after `idleShutdownMs` without a run, and (per-execution
 *   kernels) as soon as their run is over. release() leaves running the conversations' kernels whose id
 *   was taken (sessions.handover), and a later runtime takes one back by that id (kernelHandover.ts).
 * - The code runs through a bridge module installed once per kernel (kernelBridge.ts): top-level
 *   `return` and `await`, the user's own line numbers, a JSON value, and `call_tool` routed to the
 *   host's handler over the stdin channel (toolChannel.ts explains the choice and the concurrency).
 * - Stop and timeout interrupt the kernel (variables survive); if the interrupt has not taken within
 *   `interruptGraceMs`, the kernel is restarted. Tool calls in flight see their AbortSignal fire.
 * - A wrong URL or token, a dead kernel, a kernel dying mid-run and a lost WebSocket end the run with
 *   a clear error and keep whatever output had arrived.
 */
import { ArtifactStore } from '../artifacts';
import { KernelConnection } from '@jupyterlab/services';
import type { CodeInterpreterCallItem } from '../../../common/events';
import {
  DEFAULT_JUPYTER_SETTINGS,
  DEFAULT_LIMITS,
  DEFAULT_MAX_FRAME_BYTES,
  type ExecuteOptions,
  type ExecuteRequest,
  noSessions,
  type Runtime,
  type RuntimeLimits,
  type RuntimeSessions,
} from '../types';
import { afterReview } from '../execution';
import {
  JupyterError,
  KernelRestClient,
  makeServerSettings,
  normaliseBaseUrl,
  quietLibraryLogging,
  withQuietConsole,
  type ConnectionConfig,
} from './connection';
import { JupyterRun } from './jupyterRun';
import { KernelHandle, waitForKernel } from './kernelHandle';
import type { JupyterSessionPolicy, JupyterSettings, KernelPool } from './kernelPool';
import { endLeftKernel, leftKernel, type LeftKernel } from './kernelHandover';
import type { KernelAPI } from '@jupyterlab/services';

/** Conversations whose left-running kernel waits to be taken back, at most. */
const MAX_LEFT = 256;
import { formatDuration } from '../../../common/format';

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
  /**
   * Sent as `env` when a kernel is started. Enterprise Gateway reads `KERNEL_*` variables from it
   * (for example `KERNEL_USERNAME`, `KERNEL_NAMESPACE`); Jupyter Server ignores it.
   */
  kernelEnv?: Record<string, string>;
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

export class JupyterRuntime implements Runtime, KernelPool<KernelHandle> {
  readonly kind = 'jupyter' as const;

  /**
   * A conversation's kernel (with the `conversation` policy), which keeps each run's whole output for its
   * later runs (KernelHandle.keepOutput) and can outlive this process (`handover`). Its variables are not read
   * between runs, and it is never reported live; a restart counts as one that had state.
   */
  readonly sessions: RuntimeSessions = kernelSessions(this);
  /** Resolved settings (exposed for the runs of this module). */
  readonly settings: JupyterSettings;
  readonly rest?: KernelRestClient;
  private readonly serverSettings?: ReturnType<typeof makeServerSettings>;
  private readonly configError?: JupyterError;
  /** Session id -> its kernel (started or starting). */
  private readonly kernels = new Map<string, Promise<KernelHandle>>();
  private readonly expiredNotice = new Map<string, string>();
  /** Session id -> the kernel an earlier process left running for it, taken back at its next run (SessionHandover). */
  private readonly leftRunning = new Map<string, string>();
  private readonly handles = new Set<KernelHandle>();
  private readonly shutdowns = new Set<Promise<void>>();
  private readonly runs = new Set<JupyterRun>();
  private readonly starting = new Set<Promise<KernelHandle>>();
  private disposed = false;
  readonly artifacts = new ArtifactStore();

  constructor(options: JupyterRuntimeOptions) {
    this.settings = {
      kernelName: options.kernelName || DEFAULT_JUPYTER_SETTINGS.kernelName,
      kernelEnv: options.kernelEnv,
      sessionPolicy: options.sessionPolicy ?? DEFAULT_JUPYTER_SETTINGS.sessionPolicy,
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
    return afterReview(this.kind, request, options, async (request, options) => {
      const run = new JupyterRun(this, request, options);
      this.runs.add(run);
      try {
        return await run.start();
      } finally {
        this.runs.delete(run);
      }
    });
  }

  /** Shuts down the kernel of one conversation (its variables are gone). */
  async closeSession(sessionId: string): Promise<void> {
    this.expiredNotice.delete(sessionId);
    const left = this.leftRunning.get(sessionId);
    this.leftRunning.delete(sessionId);
    // A kernel an earlier process left running for it goes too (leftKernel checks the id before any request).
    if (left && (await leftKernel(this.rest!, { kernelName: this.settings.kernelName, idleShutdownMs: 0 }, left).catch(() => undefined))?.model)
      await this.rest!.shutdown(left).catch((err: Error) => this.settings.log(`[codeact] could not shut down Jupyter kernel ${left}: ${err.message}`));
    const pending = this.kernels.get(sessionId);
    if (!pending) return;
    this.kernels.delete(sessionId);
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
    const handle = await this.kernels.get(sessionId)?.catch(() => undefined);
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
    this.artifacts.dispose();
    for (const run of this.runs) run.stop('cancel');
    const sessionIds = [...this.kernels.keys()];
    await Promise.allSettled(sessionIds.map((id) => this.closeSession(id)));
    // Kernels still starting shut themselves down when they see the runtime disposed.
    await Promise.allSettled([...this.starting]);
    await Promise.allSettled([...this.handles].map((h) => this.shutdownHandle(h, 'the runtime was disposed')));
    await Promise.allSettled([...this.shutdowns]);
  }

  /** Lets go of every conversation's kernel, left running for a later process (SessionHandover.release), then disposes. */
  async release(): Promise<void> {
    if (!this.disposed) {
      for (const run of this.runs) run.stop('cancel');
      const pending = [...this.kernels.values()];
      this.kernels.clear();
      for (const handle of await Promise.all(pending.map((p) => p.catch(() => undefined)))) {
        // Only a kernel whose id someone remembers can be taken back; the others (a notebook's, say) end.
        if (!handle || handle.closed || !this.remembered.has(handle.sessionId!)) continue;
        await handle.detach();
        this.handles.delete(handle);
      }
    }
    await this.dispose();
  }

  /** The kernel id a conversation remembers: its kernel's, or the one it is to take back. */
  kernelIdOf(sessionId: string): string | undefined {
    let id = this.leftRunning.get(sessionId);
    for (const h of this.handles) if (h.sessionId === sessionId && !h.closed) id = h.id;
    if (id) this.remember(sessionId);
    return id;
  }

  /** Sessions whose kernel id was handed out (release() leaves their kernels running), bounded. */
  private readonly remembered = new Set<string>();

  private remember(sessionId: string): void {
    this.remembered.delete(sessionId);
    this.remembered.add(sessionId);
    if (this.remembered.size > MAX_LEFT) this.remembered.delete(this.remembered.values().next().value!);
  }

  /** The conversation's next run takes back this kernel (left running by an earlier process), if the server still has it. */
  adopt(sessionId: string, kernelId: string): void {
    if (this.kernels.has(sessionId) || this.settings.sessionPolicy !== 'conversation') return;
    this.leftRunning.delete(sessionId);
    this.leftRunning.set(sessionId, kernelId);
    this.remember(sessionId);
    if (this.leftRunning.size > MAX_LEFT) this.leftRunning.delete(this.leftRunning.keys().next().value!);
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
      const pending = this.kernels.get(sessionId);
      if (!pending) break;
      const handle = await pending.catch(() => undefined);
      if (this.kernels.get(sessionId) !== pending) continue; // replaced meanwhile
      if (handle && (await handle.ready())) return { handle };
      if (this.kernels.get(sessionId) !== pending) continue;
      this.kernels.delete(sessionId);
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
    const left = this.leftRunning.get(sessionId);
    this.leftRunning.delete(sessionId);
    const starting = this.startKernel(sessionId, left && !notice ? { id: left, said: (n) => (notice = n) } : undefined);
    this.kernels.set(sessionId, starting);
    try {
      return { handle: await starting, notice };
    } catch (err) {
      if (this.kernels.get(sessionId) === starting) this.kernels.delete(sessionId);
      throw err;
    }
  }

  private startKernel(sessionId: string | undefined, left?: LeftKernel): Promise<KernelHandle> {
    const p = left ? this.takeBack(sessionId!, left) : this.startKernelNow(sessionId);
    this.starting.add(p);
    const forget = () => this.starting.delete(p);
    p.then(forget, forget);
    return p;
  }

  /** The kernel an earlier process left running for this conversation, if it can be taken back; else a new one, saying why. */
  private async takeBack(sessionId: string, left: LeftKernel): Promise<KernelHandle> {
    const found = await leftKernel(this.rest!, this.settings, left.id);
    if (found.model) {
      try {
        const handle = await this.startKernelNow(sessionId, found.model);
        left.said(`[codeact] Reconnected to this conversation's Jupyter kernel (${left.id}): variables from earlier runs are still defined.\n`);
        return handle;
      } catch (err) {
        found.gone = `reconnecting failed: ${(err as Error).message}`;
      }
    }
    left.said(
      `[codeact] The Jupyter kernel this conversation used before could not be taken back (${found.gone}); ` +
        'a new kernel was started, so variables from earlier runs are gone.\n',
    );
    return this.startKernelNow(sessionId);
  }

  private async startKernelNow(sessionId: string | undefined, existing?: KernelAPI.IModel): Promise<KernelHandle> {
    const rest = this.rest!;
    const s = this.settings;
    const model = existing ?? (await rest.startNew({ name: s.kernelName, ...(s.kernelEnv ? { env: s.kernelEnv } : {}) }));
    const conn = withQuietConsole(
      s.log,
      () =>
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
      const pending = this.kernels.get(sid);
      void pending?.then(
        (h) => {
          if (h !== handle || handle.busy) return;
          this.kernels.delete(sid);
          this.expiredNotice.set(
            sid,
            `[codeact] The Jupyter kernel of this conversation was shut down after ${formatDuration(this.settings.idleShutdownMs)} ` +
              'without a run; a new kernel was started, so variables from earlier runs are gone.\n',
          );
          void this.shutdownHandle(handle, 'it was idle');
        },
        () => {},
      );
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

function kernelSessions(rt: JupyterRuntime): RuntimeSessions {
  const persist = () => rt.settings.sessionPolicy === 'conversation';
  return {
    ...noSessions,
    get persist() {
      return persist();
    },
    get keepsOutputs() {
      return persist();
    },
    close: (id) => rt.closeSession(id),
    restart: async (id) => (await rt.restartSession(id), true),
    handover: {
      idOf: (id) => (persist() ? rt.kernelIdOf(id) : undefined),
      adopt: (id, kernelId) => rt.adopt(id, kernelId),
      release: () => rt.release(),
      get idleMs() {
        return persist() ? rt.settings.idleShutdownMs : 0;
      },
      endLeft: async (id) => (rt.rest ? endLeftKernel(rt.rest, rt.settings, id) : 'kept'),
    },
  };
}
