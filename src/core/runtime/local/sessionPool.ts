/**
 * The local runtime's sessions (`session: "conversation"`): one guest per `sessionId`, kept alive between
 * runs. A session ends when closed or restarted, after `idleMs` without a run, when more than `maxAlive`
 * are alive (the least recently used idle one goes), or when its process dies; each ending is announced
 * (`codeact.session`), and the next run of that session is told that earlier variables are gone. The
 * guests come from the launcher (./guestLauncher).
 */
import type { JobChanged, JobOutput, SessionChanged, VariablesSummary } from '../../../common/events';
import { Emitter } from '../../../common/emitter';
import { formatDuration } from '../../../common/format';
import type { RuntimeSessions } from '../types';
import type { GuestRoot } from './guestProcess';
import type { GuestSession } from './guestSession';

/**
 * The local runtime's session defaults: its policy (./localRuntime), how long a session may sit idle, and how
 * many stay alive. The settings `session.policy`, `session.idleMinutes` and `session.maxAlive` read them
 * (../../config/keys.ts).
 */
export const DEFAULT_SESSIONS = { policy: 'conversation', idleMs: 30 * 60_000, maxAlive: 4 } as const;

/** Ended jobs kept for the model's next step, per session (the oldest go first). */
const MAX_JOB_NOTES = 20;

/** A session that runs code or a background job is neither idle nor evicted. */
const occupied = (s: GuestSession): boolean => s.busy || s.jobs.count > 0;

interface SessionPoolOptions {
  /** False with `session: "run"`: no session is kept (every run starts fresh). */
  persist: boolean;
  /** A session ends after this long without a run; default 30 min ({@link DEFAULT_SESSIONS}); 0 = never. */
  idleMs?: number;
  /** At most this many sessions stay alive; default 4 ({@link DEFAULT_SESSIONS}). */
  maxAlive?: number;
  /** A started guest, ready for its first run. */
  launch(): Promise<GuestSession>;
}

/** What `codeact sessions` shows of a live session beyond its ids: where its process tree is, its running jobs. */
export interface SessionUsage {
  root?: GuestRoot;
  jobs: number;
}

interface Entry {
  id: string;
  session: GuestSession;
  idleTimer?: NodeJS.Timeout;
}

export class SessionPool implements RuntimeSessions {
  readonly readsVariables = true;
  private readonly entries = new Map<string, Entry>();
  private readonly creating = new Map<string, Promise<Entry>>();
  /** What the next run of a session is told (its earlier state is gone, and why). */
  private readonly notices = new Map<string, string>();
  private readonly changed = new Emitter<SessionChanged>();
  private readonly jobChanged = new Emitter<JobChanged>();
  private readonly jobOutput = new Emitter<JobOutput>();
  /** Background jobs that ended and that the model has not been told of yet, per session (the newest MAX_JOB_NOTES). */
  private readonly jobNotes = new Map<string, JobChanged[]>();
  private closing = false;

  constructor(private readonly o: SessionPoolOptions) {}

  get persist(): boolean {
    return this.o.persist;
  }

  /** A session's later runs read a run's whole output with output_of(n) (keptOutput.ts). */
  get keepsOutputs(): boolean {
    return this.o.persist;
  }

  /** Listens to sessions starting fresh and ending. */
  onSession(listener: (e: SessionChanged) => void): () => void {
    return this.changed.on(listener);
  }

  /** Listens to background jobs starting and ending (`codeact.job`). */
  onJob(listener: (e: JobChanged) => void): () => void {
    return this.jobChanged.on(listener);
  }

  /** Listens to what running background jobs print (`codeact.job.output`). */
  onJobOutput(listener: (e: JobOutput) => void): () => void {
    return this.jobOutput.on(listener);
  }

  /** Stops a running background job of the session: its whole process tree is killed (../guestJobs `stop`); rejects with why not. */
  async stopJob(sessionId: string, job: number): Promise<void> {
    const entry = this.entries.get(sessionId);
    if (!entry?.session.alive) throw new Error(`The Python session ${sessionId} is not running, so it has no job ${job} to stop.`);
    entry.session.jobs.stop(job, entry.session.guest);
  }

  /** Sends the session's running execution `itemId` to the background (../detach); resolves with its job number. */
  async detach(sessionId: string, itemId: string): Promise<number> {
    const entry = this.entries.get(sessionId);
    if (!entry?.session.alive) throw new Error(`The Python session ${sessionId} is not running, so it has no execution to send to the background.`);
    return entry.session.detach(itemId);
  }

  /** The session's background jobs that ended since the last call, each once. */
  async takeJobNotes(sessionId: string): Promise<JobChanged[]> {
    const notes = this.jobNotes.get(sessionId) ?? [];
    this.jobNotes.delete(sessionId);
    return notes;
  }

  /** The live sessions. */
  list(): GuestSession[] {
    return [...this.entries.values()].map((e) => e.session).filter((s) => s.alive);
  }

  /** Each live session's process tree (to measure its memory) and its running background jobs. */
  usage(): Map<string, SessionUsage> {
    const out = new Map<string, SessionUsage>();
    for (const [id, e] of this.entries) if (e.session.alive) out.set(id, { root: e.session.guest.root, jobs: e.session.jobs.count });
    return out;
  }

  /** True while the session has a live guest. */
  has(sessionId: string): boolean {
    return this.entries.get(sessionId)?.session.alive === true;
  }

  /** The session's variables (null when it has none, or while it runs). */
  async variables(sessionId: string): Promise<VariablesSummary | null> {
    const entry = this.entries.get(sessionId);
    const summary = entry ? await entry.session.variables() : null;
    const checkpoints = entry?.session.checkpoints.report;
    return summary && checkpoints ? { ...summary, checkpoints } : summary;
  }

  /** Ends a session (its process tree is killed); the next run of it starts fresh. */
  async close(sessionId: string): Promise<void> {
    this.notices.delete(sessionId);
    this.end(sessionId, 'closed', 'The Python session was closed.', false);
  }

  /** Kills the session's process tree and announces it; the next run starts a new session. */
  async restart(sessionId: string): Promise<boolean> {
    const had = this.entries.has(sessionId);
    this.end(sessionId, 'restarted', 'The Python session was restarted: variables from earlier runs are gone.', true);
    return had;
  }

  /** The session's live guest, or a new one (started once however many runs ask at the same time). */
  async session(id: string): Promise<GuestSession> {
    const live = this.entries.get(id);
    if (live?.session.alive) {
      clearTimeout(live.idleTimer);
      return live.session;
    }
    const pending = this.creating.get(id);
    if (pending) return (await pending).session;
    const making = this.create(id);
    this.creating.set(id, making);
    try {
      return (await making).session;
    } finally {
      this.creating.delete(id);
    }
  }

  /** What the session's next run is told (once), if its earlier state is gone. */
  takeNotice(id: string): string | undefined {
    const notice = this.notices.get(id);
    this.notices.delete(id);
    return notice;
  }

  /** A run of the session ended: its idle clock starts. */
  ran(id: string): void {
    const entry = this.entries.get(id);
    const ms = this.o.idleMs ?? DEFAULT_SESSIONS.idleMs;
    if (!entry || ms <= 0) return;
    clearTimeout(entry.idleTimer);
    entry.idleTimer = setTimeout(() => {
      if (occupied(entry.session)) return this.ran(id);
      this.end(id, 'idle', `The Python session ended after ${formatDuration(ms)} without a run: variables from earlier runs are gone.`, true);
    }, ms);
    entry.idleTimer.unref?.();
  }

  /** The runtime is going: every session ends, and a guest that dies from now on is not announced. */
  closeAll(message: string): void {
    this.closing = true;
    for (const id of [...this.entries.keys()]) this.end(id, 'closed', message, false);
  }

  private async create(id: string): Promise<Entry> {
    this.evictFor(id);
    const session = await this.o.launch();
    session.bind(id);
    const guest = session.guest;
    const entry: Entry = { id, session };
    session.jobs.changed.on((e) => {
      if (e.state !== 'running') {
        const notes = this.jobNotes.get(id) ?? [];
        notes.push(e);
        this.jobNotes.set(id, notes.slice(-MAX_JOB_NOTES));
      }
      this.jobChanged.fire(e);
    });
    session.jobs.output.on((e) => this.jobOutput.fire(e));
    session.onDeath((reason) => {
      if (this.entries.get(id) !== entry) return;
      this.entries.delete(id);
      clearTimeout(entry.idleTimer);
      void guest.release();
      if (this.closing) return;
      const message = `The Python session ended (${reason}): variables from earlier runs are gone. The next run starts a new session.`;
      this.notices.set(id, `[codeact] ${message}\n`);
      this.changed.fire({ type: 'codeact.session', session_id: id, state: 'ended', reason: /interrupt/.test(reason) ? 'interrupt' : 'crashed', message });
    });
    if (!session.alive) throw new Error('The Python guest exited as it started; see the log.');
    this.entries.set(id, entry);
    this.changed.fire({ type: 'codeact.session', session_id: id, state: 'started', message: 'A new Python session started.' });
    return entry;
  }

  private end(id: string, reason: NonNullable<SessionChanged['reason']>, message: string, notice: boolean): void {
    const entry = this.entries.get(id);
    if (!entry) {
      if (notice) this.notices.set(id, `[codeact] ${message}\n`);
      return;
    }
    this.entries.delete(id);
    clearTimeout(entry.idleTimer);
    entry.session.kill(reason === 'idle' ? 'it was idle' : reason === 'evicted' ? 'too many sessions were alive' : `it was ${reason}`);
    void entry.session.guest.release();
    if (notice) this.notices.set(id, `[codeact] ${message}\n`);
    this.changed.fire({ type: 'codeact.session', session_id: id, state: 'ended', reason, message });
  }

  /** Makes room for one more session: the least recently used idle one goes. */
  private evictFor(id: string): void {
    const max = Math.max(1, this.o.maxAlive ?? DEFAULT_SESSIONS.maxAlive);
    const alive = [...this.entries.values()].filter((e) => e.id !== id && e.session.alive);
    let excess = alive.length + 1 - max;
    for (const e of alive.filter((x) => !occupied(x.session)).sort((a, b) => a.session.lastUsed - b.session.lastUsed)) {
      if (excess <= 0) break;
      this.end(
        e.id,
        'evicted',
        `The Python session was closed to keep at most ${max} sessions alive (codeact.session.maxAlive): variables from earlier runs are gone.`,
        true,
      );
      excess--;
    }
  }
}
