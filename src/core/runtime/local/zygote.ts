/**
 * The warm zygote on the host side: one Python process, started in the sandbox like any guest, that
 * imports `codeact.python.preload` once and then forks a clean guest for each new session or run
 * (codeact_zygote.py explains the fork safety and the per-guest namespaces).
 *
 * A forked guest cannot inherit pipes the host made for it, so it connects back to a Unix socket the
 * host listens on, in a private folder (0300) that is mounted read-only into the sandbox: three
 * connections (protocol, stdout, stderr), each opened with a one-time token the host made for that
 * fork, to a socket of that fork's own that is gone before the guest runs code (forkSocket.ts).
 */
import { chmodSync, readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import type { Duplex, Readable } from 'node:stream';
import type { RunCgroup } from './cgroup';
import { checkFrame, isInt, sendFrame, ZYGOTE_FRAME_FIELDS, type Unchecked, type ZygoteCommand, type ZygoteFrame } from './guestFrames';
import { ColdGuest, makeHostWorkdir, newMarker, type GuestExit, type GuestHandle, type GuestRoot } from './guestProcess';
import { descendantsOf, killByMarker, killTree } from '../../util/processTree';
import { minimalEnv, planLaunch, SANDBOX_WORKDIR, type LaunchPlan, type SandboxOptions } from './sandbox';
import type { PythonInfo } from './python';
import type { WorkdirCleaner } from './workdirCleanup';
import { randomToken } from '../../util/ids';
import { CodeActError } from '../../util/errors';
import { ForkSocket } from './forkSocket';
import { ownTempDir } from './tempFolders';

interface ZygoteOptions {
  python: PythonInfo;
  guestDir: string;
  sandbox?: SandboxOptions;
  preload: string[];
  useCgroups: boolean;
  /** How many guests may live at once (sizes the sandbox's pids cgroup). */
  maxGuests: number;
  /** How long the preload imports may take. */
  startTimeoutMs?: number;
  onWarning?: (message: string) => void;
  /** Removes host working folders (without a sandbox). */
  cleaner: WorkdirCleaner;
}

interface PendingFork {
  token: string;
  /** The fork's own socket, until its guest has connected. */
  socket?: ForkSocket;
  pid?: number;
  ns?: boolean;
  marker: string;
  hostWorkdir?: string;
  resolve: (g: ZygoteGuest) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

class ZygoteError extends CodeActError {
  readonly category = 'runtime' as const;
  constructor(message: string) {
    super(message);
    this.name = 'ZygoteError';
  }
}

export class Zygote {
  private readonly socketDir: string;
  private readonly pending = new Map<string, PendingFork>();
  private readonly children = new Map<number, ZygoteGuest>();
  private proc?: ColdGuest;
  private frameBuf = '';
  private readyWaiter?: { resolve: () => void; reject: (e: Error) => void };
  private deadReason?: string;
  private stderrTail = '';
  plan?: LaunchPlan;

  private constructor(private readonly o: ZygoteOptions) {
    this.socketDir = ownTempDir('zygote');
    // Write and search, no read: no guest can list the forks' sockets (forkSocket.ts).
    chmodSync(this.socketDir, 0o300);
  }

  /** Starts a zygote and waits until its preload imports are done. */
  static async start(o: ZygoteOptions): Promise<Zygote> {
    const z = new Zygote(o);
    try {
      await z.boot();
      return z;
    } catch (err) {
      z.dispose();
      throw err;
    }
  }

  get alive(): boolean {
    return !this.deadReason && !!this.proc?.alive;
  }

  /** The host PID of a process the zygote forked (`pid`: in the zygote's namespace when sandboxed), found under the zygote's tree. */
  hostPidOf(pid: number): number | undefined {
    const root = this.proc?.pid;
    if (!root) return undefined;
    const under = descendantsOf(root);
    return this.plan?.pidNamespace ? hostPidIn(under, pid) : under.includes(pid) ? pid : undefined;
  }

  private async boot(): Promise<void> {
    const o = this.o;
    const marker = newMarker();
    const plan = await planLaunch(o.python, o.guestDir, { role: 'zygote', marker, workdir: makeHostWorkdir, socketDir: this.socketDir }, o.sandbox);
    const hostWorkdir = plan.hostWorkdir;
    this.plan = plan;
    // The whole tree is capped at the limits times the guests it may hold; each guest gets its own cgroup with
    // the limits themselves (adoptGuest).
    const share = Math.max(1, o.maxGuests + 1);
    const proc = new ColdGuest({
      plan,
      role: 'zygote',
      marker,
      hostWorkdir,
      useCgroups: o.useCgroups,
      pidsMax: plan.treeLimits.pids * share,
      memoryMax: plan.treeLimits.memoryBytes * share,
      cleaner: o.cleaner,
    });
    this.proc = proc;
    proc.stdout.on('data', () => {});
    proc.stderr.on('data', (b: Buffer) => (this.stderrTail = (this.stderrTail + b.toString('utf8')).slice(-2000)));
    proc.proto.on('data', (b: Buffer) => this.onData(b));
    void proc.exited.then((exit) => this.onExit(exit));
    const ready = new Promise<void>((resolve, reject) => (this.readyWaiter = { resolve, reject }));
    proc.proto.write(JSON.stringify({ t: 'zygote', preload: o.preload }) + '\n');
    const timeoutMs = o.startTimeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        ready,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new ZygoteError(`the warm Python process did not finish its preload imports within ${Math.round(timeoutMs / 1000)} s`)),
            timeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Forks a fresh guest: it is connected and waits for its init frame. */
  fork(timeoutMs = 30_000): Promise<ZygoteGuest> {
    if (!this.alive || !this.plan) return Promise.reject(new ZygoteError(`the warm Python process is gone (${this.deadReason ?? 'not started'})`));
    const plan = this.plan;
    const token = randomToken(18);
    const marker = newMarker();
    const sandboxed = plan.pidNamespace;
    const hostWorkdir = sandboxed ? undefined : makeHostWorkdir();
    const workdir = hostWorkdir ?? SANDBOX_WORKDIR;
    return new Promise<ZygoteGuest>((resolve, reject) => {
      const timer = setTimeout(() => this.failFork(token, `a forked guest did not connect within ${Math.round(timeoutMs / 1000)} s`), timeoutMs);
      const p: PendingFork = { token, marker, hostWorkdir, resolve, reject, timer };
      this.pending.set(token, p);
      p.socket = new ForkSocket(
        this.socketDir,
        path.posix.dirname(plan.socketPath ?? ''),
        token,
        () => this.maybeComplete(p),
        (err) => this.failFork(token, `the warm Python process could not fork a guest: its socket failed (${err.message})`),
      );
      this.send({
        t: 'fork',
        token,
        socket: p.socket.guestPath,
        ns: sandboxed,
        workdir,
        tmp_size: plan.rlimits.fsize,
        // The strict seccomp filter the guest stacks on itself before user code runs.
        seccomp: plan.guestSeccomp ? plan.guestSeccomp.toString('base64') : undefined,
        // A workspace or a venv under /tmp or /dev/shm would vanish under the guest's private tmpfs: it is carried over.
        keep: plan.keepMounts ?? (plan.workspacePath ? [plan.workspacePath] : []),
        env: minimalEnv(workdir, sandboxed ? plan.guestEnv : { ...plan.guestEnv, CODEACT_RUN: marker }),
      });
    });
  }

  /** A fork that will not complete: its socket and connections closed, its folder removed, its caller told. */
  private failFork(token: string, message: string): void {
    const p = this.pending.get(token);
    if (!p) return;
    this.pending.delete(token);
    clearTimeout(p.timer);
    p.socket?.close(true);
    if (p.hostWorkdir) void this.o.cleaner.remove(p.hostWorkdir);
    p.reject(new ZygoteError(message));
  }

  /** The host PID at the root of the zygote's tree (its sandbox's, when it has one). */
  get hostPid(): number | undefined {
    return this.proc?.pid;
  }

  signal(pid: number, sig: number): void {
    this.send({ t: 'signal', pid, sig });
  }

  killChild(pid: number): void {
    this.send({ t: 'kill', pid });
  }

  dispose(): void {
    this.markDead('it was shut down');
    this.proc?.kill(false);
    void this.proc?.release();
    try {
      chmodSync(this.socketDir, 0o700);
      rmSync(this.socketDir, { recursive: true, force: true });
    } catch {}
  }

  private send(frame: ZygoteCommand): void {
    const proto = this.proc?.proto;
    if (proto) sendFrame(proto, frame);
  }

  private onData(chunk: Buffer): void {
    this.frameBuf += chunk.toString('utf8');
    if (this.frameBuf.length > 1 << 20) return this.fail('it sent an oversized frame');
    let nl: number;
    while ((nl = this.frameBuf.indexOf('\n')) >= 0) {
      const line = this.frameBuf.slice(0, nl);
      this.frameBuf = this.frameBuf.slice(nl + 1);
      const checked = checkFrame<ZygoteFrame>(line, ZYGOTE_FRAME_FIELDS);
      // A frame of a kind this host does not know is ignored, as before; one that is not JSON ends the zygote.
      if ('frame' in checked) this.onFrame(checked.frame);
      else if (!checked.json) return this.fail('it sent a malformed frame');
    }
  }

  private onFrame(frame: Unchecked<ZygoteFrame>): void {
    switch (frame.t) {
      case 'ready': {
        const failed: Array<{ module?: unknown; error?: unknown }> = Array.isArray(frame.failed) ? frame.failed : [];
        if (failed.length) {
          this.o.onWarning?.(
            `codeact.python.preload: ${failed.map((f) => `"${String(f.module)}" could not be imported (${String(f.error).slice(0, 200)})`).join('; ')}. ` +
              "Install it in the interpreter CodeAct uses (the status bar names it; codeact.python.path or the folder's .venv), or remove it from the list.",
          );
        }
        if (Number(frame.threads) > 1) {
          this.o.onWarning?.(
            `codeact.python.preload: importing these modules started ${frame.threads} threads, so guests cannot be forked safely; code starts cold instead.`,
          );
          this.readyWaiter?.reject(new ZygoteError('the preload started threads'));
        } else {
          this.readyWaiter?.resolve();
        }
        this.readyWaiter = undefined;
        return;
      }
      case 'forked': {
        const p = this.pending.get(String(frame.token));
        if (!p || !isInt(frame.pid)) return;
        p.pid = frame.pid;
        p.ns = frame.ns === true;
        this.maybeComplete(p);
        return;
      }
      case 'fork_failed':
        this.failFork(String(frame.token), `the warm Python process could not fork a guest: ${String(frame.error).slice(0, 300)}`);
        return;
      case 'exited': {
        const pid = isInt(frame.pid) ? frame.pid : -1;
        const child = this.children.get(pid);
        if (!child) {
          // A guest that died before it connected: fail its fork now rather than at the timeout.
          for (const p of this.pending.values()) {
            if (p.pid !== pid) continue;
            this.failFork(
              p.token,
              `a forked guest exited before it connected (status ${frame.status})${this.stderrTail ? `: ${this.stderrTail.trim().split('\n').slice(-2).join(' ')}` : ''}`,
            );
          }
          return;
        }
        this.children.delete(pid);
        const status = Number(frame.status);
        child.onExited(status < 0 ? { code: null, signal: signalName(-status) } : { code: status, signal: null });
        return;
      }
    }
  }

  private maybeComplete(p: PendingFork): void {
    const { proto, stdout, stderr } = p.socket?.streams ?? {};
    if (!proto || !stdout || !stderr || p.pid === undefined || !this.plan) return;
    this.pending.delete(p.token);
    clearTimeout(p.timer);
    p.socket?.close(); // the guest is connected: no one else may connect
    let cgroup: RunCgroup | undefined;
    try {
      cgroup = this.adoptGuest(p.pid, p.marker);
    } catch (err) {
      for (const s of [proto, stdout, stderr]) s.destroy();
      this.killChild(p.pid);
      if (p.hostWorkdir) void this.o.cleaner.remove(p.hostWorkdir);
      p.reject(new ZygoteError(`a forked guest could not be given its own cgroup (${(err as Error).message})`));
      return;
    }
    const plan: LaunchPlan = { ...this.plan, pidNamespace: this.plan.pidNamespace, workdir: p.hostWorkdir ?? SANDBOX_WORKDIR, info: { ...this.plan.info } };
    if (cgroup) plan.info.limits = { ...plan.info.limits, scope: `process tree (cgroup: ${cgroup.controllers.join(', ')})` };
    const guest = new ZygoteGuest(this, p.pid, p.ns === true, proto, stdout, stderr, plan, p.marker, this.o.cleaner, p.hostWorkdir, cgroup);
    this.children.set(p.pid, guest);
    p.resolve(guest);
  }

  /**
   * Moves a forked guest (it waits for its init frame, no user code has run) into a cgroup of its own
   * inside the zygote's, with the sandbox's limits: one session's memory or fork bomb (tmpfs pages
   * included) then hits its own limit, not its neighbours' or the zygote's.
   */
  private adoptGuest(nsPid: number, marker: string): RunCgroup | undefined {
    const tree = this.proc?.cgroup;
    if (!tree || !this.plan) return undefined;
    const hostPid = hostPidIn(tree.memberPids(), nsPid);
    if (!hostPid) throw new Error(`no process ${nsPid} in the sandbox's cgroup`);
    const child = tree.child(`guest-${marker}`, { pidsMax: this.plan.treeLimits.pids, memoryBytes: this.plan.treeLimits.memoryBytes });
    // cgroup v2 allows no child cgroups in a cgroup that holds processes: there the guests share the
    // zygote's tree limits (the limits times the guests it may hold).
    if (!child) return undefined;
    try {
      child.adopt(hostPid);
    } catch (err) {
      void child.remove();
      throw err;
    }
    return child;
  }

  private onExit(exit: GuestExit): void {
    const detail = this.stderrTail.trim().split('\n').slice(-3).join(' ');
    this.markDead(`it exited (${exit.signal ?? `code ${exit.code}`})${detail ? `: ${detail}` : ''}`);
  }

  private fail(reason: string): void {
    this.markDead(reason);
    this.proc?.kill(false);
  }

  private markDead(reason: string): void {
    if (this.deadReason) return;
    this.deadReason = reason;
    this.readyWaiter?.reject(new ZygoteError(`the warm Python process did not start: ${reason}`));
    this.readyWaiter = undefined;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.socket?.close(true);
      if (p.hostWorkdir) void this.o.cleaner.remove(p.hostWorkdir);
      p.reject(new ZygoteError(`the warm Python process is gone: ${reason}`));
    }
    this.pending.clear();
    // In the sandbox every guest dies with the zygote's PID namespace; without one, kill them here.
    for (const child of this.children.values()) {
      child.kill(false);
      child.onExited({ code: null, signal: 'SIGKILL' });
    }
    this.children.clear();
  }
}

/** A guest forked by the zygote. */
export class ZygoteGuest implements GuestHandle {
  readonly origin = 'zygote' as const;
  readonly exited: Promise<GuestExit>;
  private resolveExit!: (e: GuestExit) => void;
  private gone = false;

  constructor(
    private readonly zygote: Zygote,
    readonly pid: number,
    /** The guest has a PID namespace of its own: everything it starts dies with it. */
    readonly ownNamespace: boolean,
    readonly proto: Duplex,
    readonly stdout: Readable,
    readonly stderr: Readable,
    readonly plan: LaunchPlan,
    private readonly marker: string,
    private readonly cleaner: WorkdirCleaner,
    private readonly hostWorkdir?: string,
    readonly cgroup?: RunCgroup,
  ) {
    this.exited = new Promise<GuestExit>((r) => (this.resolveExit = r));
  }

  get alive(): boolean {
    return !this.gone;
  }

  get root(): GuestRoot | undefined {
    if (!this.plan.pidNamespace) return { pid: this.pid };
    const under = this.zygote.hostPid;
    return under ? { under, nsPid: this.pid } : undefined;
  }

  onExited(exit: GuestExit): void {
    if (this.gone) return;
    this.gone = true;
    // Sockets end when every process holding them is gone; the session waits for that with a grace.
    this.resolveExit(exit);
  }

  selfPid: number | undefined;

  setReportedPid(pid: number): void {
    this.selfPid = pid;
  }

  treeRoot(): number | undefined {
    return this.gone ? undefined : this.zygote.hostPidOf(this.pid);
  }

  interrupt(): void {
    if (!this.gone) this.zygote.signal(this.pid, 2);
  }

  kill(clean = false): void {
    // A guest with a PID namespace of its own takes everything it started with it; so does a one-shot
    // guest that reported (it killed its descendants first). Otherwise the zygote kills the whole tree.
    if (clean || this.ownNamespace) this.zygote.signal(this.pid, 9);
    else this.zygote.killChild(this.pid);
    if (!this.plan.pidNamespace && !clean) {
      // Without a sandbox the PID is the host's: freeze and kill the tree from here too, then anything
      // that carries the guest's marker.
      killTree(this.pid);
      killByMarker('CODEACT_RUN', this.marker);
    }
    for (const s of [this.proto]) s.destroy();
  }

  /** Idempotent: every call waits for the one removal. */
  release(): Promise<void> {
    this.releasing ??= (async () => {
      void this.cgroup?.remove();
      if (this.hostWorkdir) await this.cleaner.remove(this.hostWorkdir);
    })();
    return this.releasing;
  }
  private releasing?: Promise<void>;
}

/** The host PID of the process, among `pids`, whose PID in the sandbox's namespace is `nsPid`. */
function hostPidIn(pids: number[], nsPid: number): number | undefined {
  for (const pid of pids) {
    try {
      const line = readFileSync(`/proc/${pid}/status`, 'latin1')
        .split('\n')
        .find((l) => l.startsWith('NSpid:'));
      const ids = line?.slice(6).trim().split(/\s+/).map(Number) ?? [];
      if (ids.length >= 2 && ids[1] === nsPid) return pid;
    } catch {}
  }
  return undefined;
}

function signalName(n: number): NodeJS.Signals | null {
  const table: Record<number, NodeJS.Signals> = {
    2: 'SIGINT',
    6: 'SIGABRT',
    7: 'SIGBUS',
    9: 'SIGKILL',
    11: 'SIGSEGV',
    15: 'SIGTERM',
    24: 'SIGXCPU',
    25: 'SIGXFSZ',
  };
  return table[n] ?? null;
}
