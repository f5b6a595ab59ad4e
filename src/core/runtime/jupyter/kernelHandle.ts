/**
 * One kernel on the server, as the Jupyter runtime holds it: its connection, the bridge install,
 * a lock so the runs of a conversation take turns, the runs' output it keeps for output_of (carried in
 * by the next run's cell), restart, idle timer, shutdown, and detach (left running for a later process).
 */
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { JupyterError, withQuietConsole } from './connection';
import { bootstrapCell, toolPromptPrefix } from './kernelBridge';
import type { KernelHost, KernelRun } from './kernelPool';
import { formatDuration } from '../../../common/format';
import { raceAbort } from '../../util/abort';
import { withTimeout } from '../../util/timeout';
import { randomToken } from '../../util/ids';
import type { CodeOutput } from '../../../common/events';
import { keptOutput } from '../keptOutput';

/** Runs whose output waits for a cell to carry it into the kernel, at most, and their size in all. */
const MAX_TO_KEEP = 8;
const MAX_KEEP_BYTES = 4 * 1024 * 1024;

export class KernelHandle {
  readonly nonce = randomToken(16);
  bootstrapped = false;
  restarted = false;
  closed = false;
  lostReason?: string;
  current?: KernelRun;
  busy = 0;
  private lock: Promise<void> = Promise.resolve();
  private idleTimer?: NodeJS.Timeout;
  private shutdownPromise?: Promise<void>;

  constructor(
    readonly host: KernelHost,
    readonly id: string,
    readonly conn: Kernel.IKernelConnection,
    readonly sessionId: string | undefined,
  ) {
    conn.statusChanged.connect((_sender, status) => {
      if (status === 'autorestarting' || status === 'restarting' || status === 'starting') {
        this.bootstrapped = false;
        this.restarted = true;
        this.toKeep.clear(); // a new session starts empty (codeact_outputs)
      }
      if (status === 'dead') this.lostReason ??= 'the kernel died';
    });
    // A tool frame of a run that has already ended (for instance one that failed on a lost
    // connection while the kernel waited for a reply): answer end-of-file so the kernel is not
    // left waiting, and the next run can start.
    conn.unhandledMessage.connect((_sender, msg) => {
      if (msg.header.msg_type !== 'input_request' || conn.isDisposed) return;
      try {
        conn.sendInputReply({ status: 'ok', value: '\u0004' }, msg.header as KernelMessage.IInputReplyMsg['parent_header']);
      } catch {
        // The connection is going away.
      }
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
    const ok = await waitConnected(this.conn, this.host.settings.reconnectGraceMs);
    if (!ok) this.lostReason ??= 'the WebSocket connection to the server was lost';
    return ok;
  }

  /**
   * After a restart, IOPub messages can be lost until the server's subscription to the new kernel
   * is live (the shell replies get through, so a run would complete without its output). Execute
   * nothing until an IOPub status for it arrives, as Jupyter Server's own "nudge" does.
   */
  async nudge(): Promise<void> {
    const deadline = Date.now() + Math.min(this.host.settings.startTimeoutMs, 30_000);
    while (Date.now() < deadline && !this.closed) {
      const future = this.conn.requestExecute({ code: '', silent: false, store_history: false, allow_stdin: false, stop_on_error: false });
      const heard = await new Promise<boolean>((resolve) => {
        const t = setTimeout(() => resolve(false), 1000);
        future.onIOPub = () => {
          clearTimeout(t);
          resolve(true);
        };
        future.done.catch(() => {
          clearTimeout(t);
          resolve(false);
        });
      });
      if (!future.isDisposed) future.dispose();
      if (heard) {
        this.restarted = false;
        return;
      }
    }
  }

  async bootstrap(): Promise<void> {
    const s = this.host.settings;
    if (this.restarted) await this.nudge();
    const future = this.conn.requestExecute({ code: bootstrapCell(this.nonce), silent: true, store_history: false, allow_stdin: false, stop_on_error: false });
    let reply: KernelMessage.IExecuteReplyMsg;
    try {
      // The execute_reply is enough: waiting for the "idle" status too (future.done) can hang when a
      // freshly (re)started kernel's IOPub messages are lost while the server reconnects to it.
      reply = await withTimeout(
        replyOf(future),
        s.startTimeoutMs,
        () => new JupyterError('JupyterTimeout', `The "${s.kernelName}" kernel did not finish CodeAct's set-up within ${formatDuration(s.startTimeoutMs)}.`),
      );
    } catch (err) {
      if (!future.isDisposed) future.dispose();
      if (err instanceof JupyterError) throw err;
      throw new JupyterError('KernelDied', `The "${s.kernelName}" kernel went away during CodeAct's set-up (${(err as Error).message}).`);
    }
    if (!future.isDisposed) future.dispose(); // its "idle" status is not needed
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

  /** The last execution's number: one numbering per kernel, whichever door ran it (output_of(n), the model, the card). */
  private numbered = 0;

  /** The next execution's number: the caller's (a chat counts its history) unless a run of another door took it. */
  number(hint: number | undefined): number {
    return (this.numbered = Math.max(hint ?? 0, this.numbered + 1));
  }
  /** Finished runs' whole output not yet in the kernel: execution number -> base64 of its "keep" frame. */
  private readonly toKeep = new Map<number, string>();

  /**
   * Files a finished run's whole output for the kernel's later runs (`output_of(n)`, keptOutput.ts): the next
   * run's cell carries it into the kernel before its code (`kept`, then `delivered`), so it costs no request of
   * its own. Only for a conversation's kernel that finished the run and is still connected (false: not kept).
   */
  keepOutput(n: number, outputs: readonly CodeOutput[]): boolean {
    if (!this.sessionId || this.closed || !this.bootstrapped || this.lostReason || this.conn.isDisposed) return false;
    this.toKeep.delete(n);
    this.toKeep.set(n, Buffer.from(JSON.stringify(keptOutput(outputs, n)), 'utf8').toString('base64'));
    // Bounded: only runs whose cell never reached the kernel pile up here; one cell carries all of them, and a
    // server takes WebSocket messages of limited size (Tornado's default: 10 MiB). The oldest go first.
    let bytes = 0;
    for (const data of this.toKeep.values()) bytes += data.length;
    for (const [old, data] of this.toKeep) {
      if (this.toKeep.size <= 1 || (this.toKeep.size <= MAX_TO_KEEP && bytes <= MAX_KEEP_BYTES)) break;
      this.toKeep.delete(old);
      bytes -= data.length;
    }
    return true;
  }

  /** What the next run's cell carries into the kernel, in order. */
  get kept(): ReadonlyMap<number, string> {
    return new Map(this.toKeep);
  }

  /** The kernel ran a cell that carried these (its result came back): they are filed there. */
  delivered(sent: ReadonlyMap<number, string>): void {
    for (const [n, data] of sent) if (this.toKeep.get(n) === data) this.toKeep.delete(n);
  }

  /**
   * Files what no run carried yet with a silent cell of its own, awaited (for a kernel left running when
   * this process lets go of it: the conversation may come back to it). A failure is logged, never thrown.
   */
  async flushKept(): Promise<void> {
    if (!this.toKeep.size || this.closed || !this.bootstrapped || this.conn.isDisposed || this.conn.connectionStatus !== 'connected') return;
    const sent = this.kept;
    const future = this.conn.requestExecute({
      code: [...sent.values()].map((data) => `__import__("codeact_outputs").keep_encoded("${data}")`).join('\n'),
      silent: true,
      store_history: false,
      allow_stdin: false,
      stop_on_error: false,
    });
    try {
      const reply = await withTimeout(replyOf(future), 10_000, () => new Error('no reply within 10 s'));
      if (reply.content.status !== 'ok') throw new Error(`the kernel answered "${reply.content.status}"`);
      this.delivered(sent);
    } catch (err) {
      this.host.settings.log(`[codeact] could not keep the output of earlier runs in kernel ${this.id}: ${(err as Error).message}`);
    } finally {
      if (!future.isDisposed) future.dispose();
    }
  }

  /** Restarts the kernel (state lost) and installs the bridge again. */
  async restart(): Promise<void> {
    const s = this.host.settings;
    this.bootstrapped = false;
    this.toKeep.clear();
    await withTimeout(
      this.conn.restart(),
      s.startTimeoutMs,
      () => new JupyterError('JupyterTimeout', `The kernel did not restart within ${formatDuration(s.startTimeoutMs)}.`),
    );
    await waitForKernel(this.conn, s.startTimeoutMs, this.host.rest!.displayUrl);
    await this.bootstrap();
  }

  /**
   * Lets go of the kernel and leaves it running (its variables and kept output stay, for a later process to
   * adopt): what no run carried yet is filed first; then only this connection closes.
   */
  async detach(): Promise<void> {
    if (this.closed) return;
    await withTimeout(
      this.withLock(() => this.flushKept()),
      15_000,
      () => new Error('the kernel stayed busy'),
    ).catch((err: Error) => this.host.settings.log(`[codeact] leaving kernel ${this.id} running: ${err.message}`));
    this.closed = true;
    this.lostReason ??= 'this process let go of it';
    clearTimeout(this.idleTimer);
    try {
      if (!this.conn.isDisposed) withQuietConsole(this.host.settings.log, () => this.conn.dispose());
    } catch {
      // Already gone.
    }
  }

  shutdown(why: string): Promise<void> {
    this.shutdownPromise ??= (async () => {
      this.closed = true;
      this.lostReason ??= `it was shut down (${why})`;
      clearTimeout(this.idleTimer);
      try {
        await this.host.rest!.shutdown(this.id, 15_000);
      } catch (err) {
        this.host.settings.log(`[codeact] could not shut down Jupyter kernel ${this.id}: ${(err as Error).message}`);
      }
      try {
        if (!this.conn.isDisposed) withQuietConsole(this.host.settings.log, () => this.conn.dispose());
      } catch {
        // Already gone.
      }
    })();
    return this.shutdownPromise;
  }
}

/** Resolves with a request's reply (shell channel), without waiting for its "idle" status. */
function replyOf<T extends KernelMessage.IShellMessage>(future: Kernel.IShellFuture<KernelMessage.IShellMessage, T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    future.onReply = (msg) => resolve(msg);
    future.done.then((msg) => resolve(msg as T), reject);
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
export async function waitForKernel(conn: Kernel.IKernelConnection, ms: number, url: string): Promise<void> {
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
            reject(
              new JupyterError(
                'JupyterConnectionLost',
                `Could not open a WebSocket to the kernel on the Jupyter server at ${url}. A proxy in between must allow WebSockets.`,
              ),
            );
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
