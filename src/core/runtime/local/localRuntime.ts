/**
 * The local Python runtime: guests on this machine, in their sandbox.
 *
 * - Sessions (`session: "conversation"`, the default): executions with the same `sessionId` share one
 *   guest process, so variables, imports and functions live on from one to the next, as in a notebook.
 *   Sessions end when closed, after `idleMs` without a run, when more than `maxAlive` are alive (the
 *   least recently used goes), or when their process dies; each ending is announced, and the next run
 *   of that session says that earlier variables are gone.
 * - Without a `sessionId`, or with `session: "run"`, every execution gets a fresh guest that ends with it.
 * - With `zygote: true` guests are forked from a warm process that imported `preload` once (zygote.ts);
 *   when it is unavailable, guests start cold (logged once). With `prestart: true` the next guest is
 *   started ahead of need, so a new session does not wait for Python to start.
 */
import { ArtifactStore } from '../artifacts';
import type { CodeInterpreterCallItem, ExecutionError, SessionChanged, VariablesSummary } from '../../../common/events';
import { guestDirFor } from '../guest/sources';
import { announceDone, executionItem, openExecution, safeEmit } from '../execution';
import { DEFAULT_LIMITS, DEFAULT_MAX_FRAME_BYTES, type ExecuteOptions, type ExecuteRequest, type Runtime, type RuntimeLimits } from '../types';
import { settleCgroups } from './cgroup';
import { ColdGuest, makeHostWorkdir, newMarker, type GuestHandle } from './guestProcess';
import { GuestSession } from './guestSession';
import { resolvePython } from './python';
import { planLaunch, type SandboxOptions } from './sandbox';
import { firstTimeShown } from './usernsDiagnosis';
import { WorkdirCleaner } from './workdirCleanup';
import { Zygote, ZygoteGuest } from './zygote';
import { newId } from '../../util/ids';
import { formatDuration } from '../../../common/format';
import { Emitter } from '../../../common/emitter';

export type SessionPolicy = 'conversation' | 'run';

export interface LocalRuntimeOptions {
  /** Interpreter command or path; default `python3`. */
  python?: string;
  limits?: Partial<RuntimeLimits>;
  sandbox?: SandboxOptions;
  /** Largest protocol frame the guest may send (a call_tool's arguments); default 16 MiB. */
  maxFrameBytes?: number;
  /** Receives one-time warnings, such as "running without a sandbox". */
  onWarning?: (message: string) => void;
  /** Whole-tree cgroup limits where they can be created (default true). */
  cgroups?: boolean;
  /** `conversation` (default): one guest per `sessionId`; `run`: a fresh guest for every execution. */
  session?: SessionPolicy;
  /** A session ends after this long without a run; default 30 min; 0 = never. */
  idleMs?: number;
  /** At most this many sessions stay alive; default 4. */
  maxAlive?: number;
  /** How long Stop or a timeout may take to interrupt a session's code before it is killed; default 3 s. */
  interruptGraceMs?: number;
  /** Fork guests from a warm zygote (default false). */
  zygote?: boolean;
  /** Modules the zygote imports once (implies `zygote`). */
  preload?: string[];
  /** Keep the next guest started ahead of need (default false). */
  prestart?: boolean;
  /** Sessions that start fresh or end (idle, evicted, restarted, crashed). */
  onSessionEvent?: (event: SessionChanged) => void;
  /** Diagnostics (zygote start, fallbacks). */
  log?: (line: string) => void;
}

interface Entry {
  id: string;
  session: GuestSession;
  idleTimer?: NodeJS.Timeout;
}

export class LocalRuntime implements Runtime {
  readonly kind = 'local' as const;
  private readonly limits: RuntimeLimits;
  private readonly maxFrameBytes: number;
  private warned = false;
  private readonly oneShots = new Set<GuestSession>();
  private readonly sessions = new Map<string, Entry>();
  private readonly creating = new Map<string, Promise<Entry>>();
  private readonly notices = new Map<string, string>();
  private readonly sessionChanged = new Emitter<SessionChanged>();
  private zygote?: Promise<Zygote | undefined>;
  private zygoteStarts = 0;
  private zygoteWarned = false;
  private spare?: Promise<GuestSession>;
  private disposed = false;
  /** Removes host working folders in the background; one that will not go is reported and retried on dispose. */
  private readonly cleaner: WorkdirCleaner;
  /** Copies of the files the code wrote, for the user (removed when the runtime is disposed). */
  readonly artifacts = new ArtifactStore();

  constructor(private readonly options: LocalRuntimeOptions = {}) {
    this.cleaner = new WorkdirCleaner((m) => {
      options.log?.(m);
      options.onWarning?.(m);
    });
    this.limits = { ...DEFAULT_LIMITS, ...(options.limits ?? {}) };
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    if (options.onSessionEvent) this.sessionChanged.on(options.onSessionEvent);
  }

  get statePersists(): boolean {
    return this.policy === 'conversation';
  }

  /** A session's later runs read a run's whole output with output_of(n) (keptOutput.ts). */
  get keepsOutputs(): boolean {
    return this.statePersists;
  }

  get policy(): SessionPolicy {
    return this.options.session ?? 'conversation';
  }

  private get useZygote(): boolean {
    return this.options.zygote === true || (this.options.preload?.length ?? 0) > 0;
  }

  /** Listens to sessions starting fresh and ending. */
  onSession(listener: (e: SessionChanged) => void): () => void {
    return this.sessionChanged.on(listener);
  }

  async execute(request: ExecuteRequest, options: ExecuteOptions = {}): Promise<CodeInterpreterCallItem> {
    const itemId = request.itemId ?? newId('exec');
    const started = performance.now();
    const emit = safeEmit(options.onEvent);
    // A run that ends before it reaches a guest.
    const refuse = (error: ExecutionError) => announceDone(emit, executionItem({ itemId, code: request.code, runtime: 'local', outputs: [], error, startedAt: started }));
    const refused = openExecution(emit, request, itemId, 'local', this.limits, options.signal);
    if (refused) return refuse(refused);
    const sessionId = this.policy === 'conversation' ? request.sessionId : undefined;
    let session: GuestSession;
    try {
      session = sessionId ? (await this.sessionFor(sessionId)).session : await this.oneShot();
    } catch (err) {
      return refuse({ type: (err as Error).name || 'LaunchError', message: (err as Error).message });
    }
    const notice = sessionId ? this.notices.get(sessionId) : undefined;
    if (sessionId) this.notices.delete(sessionId);
    try {
      return await session.execute(request, options, itemId, notice);
    } finally {
      if (!sessionId) {
        this.oneShots.delete(session);
        const clean = session.end();
        const guest = session.guest;
        const teardown = guest.exited.then(() => guest.release());
        // The result is announced already. A guest alone in its own PID namespace that ended cleanly is
        // past recall once SIGKILL is sent (the kernel takes everything in the namespace with it), so the
        // run returns now and its teardown (the namespace's, milliseconds; the folder's) finishes behind
        // it, awaited by dispose. Otherwise this waits, without blocking the event loop, until the guest
        // is gone and the run's folder with it (or reported as left behind).
        if (clean && guest instanceof ZygoteGuest && guest.ownNamespace) this.track(teardown);
        else await teardown;
      } else {
        this.armIdle(sessionId);
      }
    }
  }

  /** True while the session has a live guest. */
  hasSession(sessionId: string): boolean {
    return this.sessions.get(sessionId)?.session.alive === true;
  }

  /** The session's variables (null when it has none, or while it runs). */
  async variables(sessionId: string): Promise<VariablesSummary | null> {
    const entry = this.sessions.get(sessionId);
    return entry ? entry.session.variables() : null;
  }

  /** Ends a session (its process tree is killed); the next run of it starts fresh. */
  async closeSession(sessionId: string): Promise<void> {
    this.notices.delete(sessionId);
    this.end(sessionId, 'closed', 'The Python session was closed.', false);
  }

  /** Kills the session's process tree and announces it; the next run starts a new session. */
  async restartSession(sessionId: string): Promise<boolean> {
    const had = this.sessions.has(sessionId);
    this.end(sessionId, 'restarted', 'The Python session was restarted: variables from earlier runs are gone.', true);
    return had;
  }

  /** Resolves once the guest started ahead of need (with prestart) is ready. For benchmarks and tests. */
  async warm(): Promise<void> {
    await this.spare?.catch(() => undefined);
  }

  /** Teardowns of ended one-shot guests still finishing (awaited by dispose). */
  private readonly teardowns = new Set<Promise<void>>();

  private track(teardown: Promise<void>): void {
    const t = teardown.catch(() => {}).finally(() => this.teardowns.delete(t));
    this.teardowns.add(t);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    for (const id of [...this.sessions.keys()]) this.end(id, 'closed', 'CodeAct is shutting down.', false);
    for (const s of this.oneShots) s.kill('CodeAct is shutting down');
    // Ended guests report their exit through the zygote within milliseconds; a zygote that no longer
    // answers is disposed below, which ends them all, so the wait is bounded.
    await Promise.race([Promise.all(this.teardowns), new Promise<void>((resolve) => setTimeout(resolve, 3000).unref())]);
    const spare = this.spare;
    this.spare = undefined;
    void spare?.then((g) => (g.kill('CodeAct is shutting down'), g.guest.release())).catch(() => {});
    await spare?.catch(() => undefined);
    const z = this.zygote;
    this.zygote = undefined;
    (await z?.catch(() => undefined))?.dispose();
    await this.settleCleanup();
    await settleCgroups();
    this.artifacts.dispose();
  }

  /** Waits for working folders being removed, retries the ones that would not go, and names what is left. */
  private async settleCleanup(): Promise<void> {
    const left = await this.cleaner.settle();
    if (!left.length) return;
    const m =
      `${left.length} working folder(s) could not be removed and are left on disk: ${left.map((d) => `${d} (${this.cleaner.leftovers.get(d)})`).join('; ')}. ` +
      'Remove them by hand (umount anything mounted inside first).';
    this.options.log?.(m);
    this.options.onWarning?.(m);
  }

  // ---- sessions -----------------------------------------------------------------------------------

  private async sessionFor(id: string): Promise<Entry> {
    const live = this.sessions.get(id);
    if (live?.session.alive) {
      clearTimeout(live.idleTimer);
      return live;
    }
    const pending = this.creating.get(id);
    if (pending) return pending;
    const making = this.createSession(id);
    this.creating.set(id, making);
    try {
      return await making;
    } finally {
      this.creating.delete(id);
    }
  }

  private async createSession(id: string): Promise<Entry> {
    this.evictFor(id);
    const session = await this.fresh(true);
    session.bind(id);
    const guest = session.guest;
    const entry: Entry = { id, session };
    session.onDeath((reason) => {
      if (this.sessions.get(id) !== entry) return;
      this.sessions.delete(id);
      clearTimeout(entry.idleTimer);
      void guest.release();
      if (this.disposed) return;
      const message = `The Python session ended (${reason}): variables from earlier runs are gone. The next run starts a new session.`;
      this.notices.set(id, `[codeact] ${message}\n`);
      this.announce({ type: 'codeact.session', session_id: id, state: 'ended', reason: /interrupt/.test(reason) ? 'interrupt' : 'crashed', message });
    });
    if (!session.alive) throw new Error('The Python guest exited as it started; see the log.');
    this.sessions.set(id, entry);
    this.announce({ type: 'codeact.session', session_id: id, state: 'started', message: 'A new Python session started.' });
    return entry;
  }

  private end(id: string, reason: NonNullable<SessionChanged['reason']>, message: string, notice: boolean): void {
    const entry = this.sessions.get(id);
    if (!entry) {
      if (notice) this.notices.set(id, `[codeact] ${message}\n`);
      return;
    }
    this.sessions.delete(id);
    clearTimeout(entry.idleTimer);
    entry.session.kill(reason === 'idle' ? 'it was idle' : reason === 'evicted' ? 'too many sessions were alive' : `it was ${reason}`);
    void entry.session.guest.release();
    if (notice) this.notices.set(id, `[codeact] ${message}\n`);
    this.announce({ type: 'codeact.session', session_id: id, state: 'ended', reason, message });
  }

  private armIdle(id: string): void {
    const entry = this.sessions.get(id);
    const ms = this.options.idleMs ?? 30 * 60_000;
    if (!entry || ms <= 0) return;
    clearTimeout(entry.idleTimer);
    entry.idleTimer = setTimeout(() => {
      if (entry.session.busy) return this.armIdle(id);
      this.end(id, 'idle', `The Python session ended after ${formatDuration(ms)} without a run: variables from earlier runs are gone.`, true);
    }, ms);
    entry.idleTimer.unref?.();
  }

  /** Makes room for one more session: the least recently used idle one goes. */
  private evictFor(id: string): void {
    const max = Math.max(1, this.options.maxAlive ?? 4);
    const alive = [...this.sessions.values()].filter((e) => e.id !== id && e.session.alive);
    let excess = alive.length + 1 - max;
    for (const e of alive.filter((x) => !x.session.busy).sort((a, b) => a.session.lastUsed - b.session.lastUsed)) {
      if (excess <= 0) break;
      this.end(e.id, 'evicted', `The Python session was closed to keep at most ${max} sessions alive (codeact.session.maxAlive): variables from earlier runs are gone.`, true);
      excess--;
    }
  }

  private announce(e: SessionChanged): void {
    this.sessionChanged.fire(e);
  }

  // ---- guests -------------------------------------------------------------------------------------

  private async oneShot(): Promise<GuestSession> {
    const session = await this.fresh(false);
    this.oneShots.add(session);
    return session;
  }

  private sessionOptions() {
    return { limits: this.limits, maxFrameBytes: this.maxFrameBytes, interruptGraceMs: this.options.interruptGraceMs ?? 3000, artifacts: this.artifacts };
  }

  private subreaper(guest: GuestHandle): boolean {
    if (guest instanceof ZygoteGuest) return !guest.ownNamespace;
    return !guest.plan.pidNamespace;
  }

  /**
   * A started guest that has run nothing yet: the one started ahead of need (its limits applied, ready),
   * or a new one. `waitReady`: a session waits for it; a one-shot run sends its code right behind init.
   */
  private async fresh(waitReady: boolean): Promise<GuestSession> {
    const spare = this.spare;
    this.spare = undefined;
    let session: GuestSession | undefined;
    if (spare) session = await spare.catch(() => undefined);
    if (!session?.alive) {
      session = await this.startSession();
      if (waitReady) await session.started;
    }
    if (this.options.prestart && !this.disposed) {
      const next = this.startSession().then(async (s) => (await s.started, s));
      next.catch(() => {});
      this.spare = next;
    }
    return session;
  }

  private async startSession(): Promise<GuestSession> {
    const guest = await this.newGuest();
    const session = new GuestSession(guest, this.sessionOptions());
    session.onDeath(() => void guest.exited.then(() => guest.release()));
    session.started = session.start(guest.plan.rlimits, this.subreaper(guest));
    session.started.catch(() => {});
    return session;
  }

  private async newGuest(): Promise<GuestHandle> {
    if (this.useZygote) {
      const z = await this.getZygote();
      if (z) {
        try {
          return await z.fork();
        } catch (err) {
          this.logOnce(`${(err as Error).message}; code starts cold instead.`);
        }
      }
    }
    return this.coldGuest();
  }

  private async coldGuest(): Promise<GuestHandle> {
    const python = await resolvePython(this.options.python ?? 'python3');
    const marker = newMarker();
    // The host folder is made only for a launch without a sandbox.
    const plan = await planLaunch(python, guestDirFor(python.executable), { role: 'guest', marker, workdir: makeHostWorkdir }, this.options.sandbox);
    this.warnOnce(plan.warning, plan.info.kind === 'none');
    return new ColdGuest({ plan, role: 'guest', marker, hostWorkdir: plan.hostWorkdir, useCgroups: this.options.cgroups !== false, cleaner: this.cleaner });
  }

  private getZygote(): Promise<Zygote | undefined> {
    const current = this.zygote;
    if (current) {
      return current.then((z) => {
        if (z?.alive) return z;
        if (this.zygote === current && this.zygoteStarts < 3 && !this.disposed) this.zygote = undefined;
        return this.zygote ? undefined : this.getZygote();
      });
    }
    if (this.zygoteStarts >= 3 || this.disposed) return Promise.resolve(undefined);
    this.zygoteStarts++;
    const starting = (async () => {
      const python = await resolvePython(this.options.python ?? 'python3');
      const z = await Zygote.start({
        python,
        guestDir: guestDirFor(python.executable),
        sandbox: this.options.sandbox,
        preload: this.options.preload ?? [],
        useCgroups: this.options.cgroups !== false,
        maxGuests: (this.options.maxAlive ?? 4) + 2,
        onWarning: (m) => this.options.onWarning?.(m),
        cleaner: this.cleaner,
      });
      this.warnOnce(z.plan?.warning, z.plan?.info.kind === 'none');
      this.options.log?.(`warm Python process ready${this.options.preload?.length ? ` (preloaded ${this.options.preload.join(', ')})` : ''}`);
      return z;
    })().catch((err) => {
      this.logOnce(`The warm Python process could not start (${(err as Error).message}); code starts cold instead.`);
      return undefined;
    });
    this.zygote = starting;
    return starting;
  }

  /**
   * A launch's warning, once per runtime; the fallback to no sandbox (`perProcess`) once per process (an
   * extension session, a CLI run), however many runtimes the settings build: later ones only log it.
   */
  private warnOnce(warning: string | undefined, perProcess: boolean): void {
    if (!warning || this.warned) return;
    this.warned = true;
    if (perProcess && !firstTimeShown(warning)) this.options.log?.(warning);
    else this.options.onWarning?.(warning);
  }

  private logOnce(line: string): void {
    if (this.zygoteWarned) return;
    this.zygoteWarned = true;
    this.options.log?.(line);
  }
}
