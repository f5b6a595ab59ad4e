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
 *
 * The sessions are kept by ./sessionPool, the guests launched by ./guestLauncher; this file runs an
 * execution on one of them.
 */
import { ArtifactStore } from '../artifacts';
import type { CodeInterpreterCallItem, ExecutionError, JobChanged, JobOutput, SessionChanged } from '../../../common/events';
import { afterReview, announceDone, executionItem, openExecution, safeEmit, setupCategory } from '../execution';
import {
  DEFAULT_LIMITS,
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_REWIND_BUDGETS,
  type ExecuteOptions,
  type ExecuteRequest,
  type Runtime,
  type RuntimeLimits,
  type RevertOutcome,
  type RewindOutcome,
  type StagedChanges,
} from '../types';
import { settleCgroups } from './cgroup';
import { GuestLauncher, type GuestLaunchOptions } from './guestLauncher';
import type { GuestSession } from './guestSession';
import { DEFAULT_SESSIONS, SessionPool } from './sessionPool';
import { newId } from '../../util/ids';
import { settledOrAborted } from '../../util/abort';
import type { CodeActEvent } from '../../../common/events';
import { WorkspaceChanges } from '../rewind/workspaceChanges';
import type { StoreBudgets } from '../rewind/fileStore';
import { DEFAULT_CHECKPOINT_BUDGET, type CheckpointBudget } from './checkpoints';
import { neverKept, StagedWorkspace } from './stagedWorkspace';

type SessionPolicy = 'conversation' | 'run';

export interface LocalRuntimeOptions extends GuestLaunchOptions {
  limits?: Partial<RuntimeLimits>;
  /** Largest protocol frame the guest may send (a call_tool's arguments); default 16 MiB. */
  maxFrameBytes?: number;
  /** `conversation` (default): one guest per `sessionId`; `run`: a fresh guest for every execution. */
  session?: SessionPolicy;
  /** A session ends after this long without a run; default 30 min; 0 = never. */
  idleMs?: number;
  /** Sessions that start fresh or end (idle, evicted, restarted, crashed). */
  onSessionEvent?: (event: SessionChanged) => void;
  /** Background jobs that start, print or end (the panel's job strip and cards). */
  onJobEvent?: (event: JobChanged | JobOutput) => void;
  /**
   * What each run changed in a workspace mounted `readwrite` (its item's `changes`): on unless `false`;
   * the store's budgets (codeact.rewind.*).
   */
  rewind?: false | Partial<StoreBudgets>;
  /** Checkpoints of each session's Python state before its runs (./checkpoints); default 10 and 1 GiB; max 0: none. */
  checkpoints?: Partial<CheckpointBudget>;
  /**
   * Review mode (codeact.sandbox.reviewWrites): with the workspace mounted `readwrite`, the code's writes are staged
   * (./stagedWorkspace) and reach the workspace only through {@link LocalRuntime.staged}'s keep.
   */
  reviewWrites?: boolean;
}

export class LocalRuntime implements Runtime {
  readonly kind = 'local' as const;
  readonly sessions: SessionPool;
  private readonly limits: RuntimeLimits;
  private readonly launcher: GuestLauncher;
  /** Copies of the files the code wrote, for the user (removed when the runtime is disposed). */
  readonly artifacts = new ArtifactStore();
  /** The writable workspace's changes, once a session mounts it `readwrite` (../rewind). */
  private changes: WorkspaceChanges | undefined;
  /** Review mode: where the code's writes are staged. */
  private readonly stage: StagedWorkspace | undefined;
  /** Review mode: the staged changes, kept into the workspace or discarded (undefined: the code writes the workspace itself). */
  readonly staged: StagedChanges | undefined;

  constructor(private readonly options: LocalRuntimeOptions = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...(options.limits ?? {}) };
    const sb = options.sandbox;
    if (options.reviewWrites && sb?.mountWorkspace === 'readwrite' && sb.workspace) {
      const stage = (this.stage = new StagedWorkspace(sb.workspace, options.log));
      options = { ...options, sandbox: { ...sb, stage } };
      this.staged = {
        list: async () => (await this.stagedTracker(stage)).staged(),
        keep: async (paths) => (await this.stagedTracker(stage)).settle('keep', paths),
        discard: async (paths) => (await this.stagedTracker(stage)).settle('discard', paths),
      };
    }
    this.launcher = new GuestLauncher(options, {
      limits: this.limits,
      maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      artifacts: this.artifacts,
      checkpoints: { ...DEFAULT_CHECKPOINT_BUDGET, ...(options.checkpoints ?? {}) },
    });
    this.sessions = new SessionPool({
      persist: this.policy === 'conversation',
      idleMs: options.idleMs,
      maxAlive: options.maxAlive,
      launch: () => this.launcher.fresh(true),
    });
    // A workspace mounted readwrite: its first copy starts now, while the model writes the first code.
    if (this.stage && sb?.kind !== 'none') {
      const stage = this.stage;
      void stage.pid().then(
        (pid) => this.track(stage.merged(pid), stage.workspace).warm(),
        () => undefined,
      );
    } else if (!this.stage && options.rewind !== false && sb?.mountWorkspace === 'readwrite' && sb.workspace && sb.kind !== 'none') {
      void this.track(sb.workspace).warm();
    }
    if (options.onSessionEvent) this.sessions.onSession(options.onSessionEvent);
    if (options.onJobEvent) {
      this.sessions.onJob(options.onJobEvent);
      this.sessions.onJobOutput(options.onJobEvent);
    }
  }

  get policy(): SessionPolicy {
    return this.options.session ?? DEFAULT_SESSIONS.policy;
  }

  /** Listens to sessions starting fresh and ending. */
  onSession(listener: (e: SessionChanged) => void): () => void {
    return this.sessions.onSession(listener);
  }

  /** Listens to background jobs starting and ending (`codeact.job`). */
  onJob(listener: (e: JobChanged) => void): () => void {
    return this.sessions.onJob(listener);
  }

  /** Listens to what running background jobs print (`codeact.job.output`: the panel's job strip and card). */
  onJobOutput(listener: (e: JobOutput) => void): () => void {
    return this.sessions.onJobOutput(listener);
  }

  execute(request: ExecuteRequest, options: ExecuteOptions = {}): Promise<CodeInterpreterCallItem> {
    return afterReview(this.kind, request, options, (request, options) => this.run(request, options));
  }

  private async run(request: ExecuteRequest, options: ExecuteOptions): Promise<CodeInterpreterCallItem> {
    const itemId = request.itemId ?? newId('exec');
    const started = performance.now();
    const emit = safeEmit(options.onEvent);
    // A run that ends before it reaches a guest.
    const refuse = (error: ExecutionError) =>
      announceDone(emit, executionItem({ itemId, code: request.code, runtime: 'local', outputs: [], error, startedAt: started }));
    const refused = openExecution(emit, request, itemId, 'local', this.limits, options.signal);
    if (refused) return refuse(refused);
    const sessionId = this.policy === 'conversation' ? request.sessionId : undefined;
    let session: GuestSession;
    try {
      session = sessionId ? await this.sessions.session(sessionId) : await this.launcher.oneShot();
    } catch (err) {
      return refuse({ type: (err as Error).name || 'LaunchError', message: (err as Error).message, ...setupCategory(err) });
    }
    const notice = sessionId ? this.sessions.takeNotice(sessionId) : undefined;
    const changes = await this.changesOf(session);
    try {
      if (!changes) return await session.execute(request, options, itemId, notice);
      // The scan before waits for the session's runs before this one (a run sent to the background writes until it
      // ends: its files are its own, not this run's). The first copy of a large workspace can take a while: Stop
      // does not wait for either (the run then stops at once).
      await settledOrAborted(session.queue, options.signal);
      await settledOrAborted(changes.ready(), options.signal);
      // The run's end waits for its changeset: the card and the model get it on the item.
      const held: CodeActEvent[] = [];
      const onEvent = (e: CodeActEvent) => (isEnd(e, itemId) ? held.push(e) : emit(e));
      let item: CodeInterpreterCallItem | undefined;
      try {
        item = await session.execute(request, { ...options, onEvent }, itemId, notice);
      } finally {
        // Always after a ready(): the workspace's count of runs going on comes down, and the ends go out.
        const found = await changes.after(itemId).catch((e: Error) => ({ root: changes.root, changes: [], incomplete: `the scan failed (${e.message})` }));
        if (item) item.changes = found;
        for (const e of held) emit(e);
      }
      return item;
    } finally {
      if (!sessionId) await this.launcher.endOneShot(session);
      else this.sessions.ran(sessionId);
    }
  }

  /** Puts back the workspace files an execution changed (its card's Revert); rejects with why not. */
  async revertChanges(itemId: string, paths?: readonly string[]): Promise<RevertOutcome> {
    if (!this.changes) throw new Error('No workspace changes are tracked here (the workspace is not mounted readwrite, or CodeAct restarted since).');
    return this.changes.revert(itemId, paths);
  }

  /**
   * "Rewind to here" (issue 35): the session that ran `point` gets its Python state from before it back
   * (./checkpoints), and the workspace files the code changed since go back as they were; a redo point keeps
   * both as they are now. Each part says why when it cannot be done; rejects when neither can.
   */
  async rewind(point: string): Promise<RewindOutcome> {
    const session = this.sessions.list().find((s) => s.checkpoints.has(point));
    const changes = this.changes;
    if (!session && !changes?.has(point))
      throw new Error('That execution is not part of a session this runtime still has (it ended, or CodeAct restarted since).');
    const work = async (): Promise<RewindOutcome> => {
      // A job running (or the session gone meanwhile) refuses the whole rewind: the files alone would move under it.
      const refusal = session?.rewindRefusal;
      if (refusal) throw new Error(refusal);
      let python: RewindOutcome['python'] = {
        restored: false,
        why: 'its Python session has ended, or keeps no checkpoints (codeact.rewind.maxCheckpoints)',
      };
      const redo = newId('redo');
      let redone = false;
      if (session) {
        try {
          const r = await session.checkpoints.restore(point, redo);
          session.guest.setReportedPid(r.pid);
          python = { restored: true };
          redone = !!r.redo;
        } catch (e) {
          python = { restored: false, why: (e as Error).message };
        }
      }
      let files: RewindOutcome['files'] = {
        why: changes
          ? 'the workspace files from before that execution are no longer kept'
          : 'workspace files are tracked only when the sandbox mounts the workspace readwrite (codeact.sandbox.mountWorkspace)',
      };
      if (changes?.has(point)) {
        files = await changes.rewindTo(point, redo).catch((e: Error) => ({ why: e.message }));
        redone ||= !('why' in files);
      }
      if (!python.restored && 'why' in files) throw new Error(python.why);
      return { python, files, ...(redone ? { redo } : {}) };
    };
    return session ? session.inTurn(work) : work();
  }

  /**
   * The tracker of the workspace's changes when this session's sandbox mounts it writable (and rewind is on); in
   * review mode, always, of the code's view of it (the staged writes are listed and kept from there).
   */
  private async changesOf(session: GuestSession): Promise<WorkspaceChanges | undefined> {
    const plan = session.guest.plan;
    if (plan.info.workspace !== 'readwrite' || !plan.workspacePath) return undefined;
    if (plan.info.staged && this.stage) return this.stagedTracker(this.stage);
    if (this.options.rewind === false) return undefined;
    return this.changes?.root === plan.workspacePath ? this.changes : this.track(plan.workspacePath);
  }

  /** Review mode's tracker: of the code's view of the workspace, through the stage's helper (which must be alive). */
  private async stagedTracker(stage: StagedWorkspace): Promise<WorkspaceChanges> {
    const root = stage.merged(await stage.pid());
    return this.changes?.root === root ? this.changes : this.track(root, stage.workspace);
  }

  /** Starts tracking the changes the code makes in `root` (the one before it, if any, ends); `workspace`: review mode's. */
  private track(root: string, workspace?: string): WorkspaceChanges {
    void this.changes?.dispose();
    const budgets = { ...DEFAULT_REWIND_BUDGETS, ...(this.options.rewind || {}) };
    const hostRun = this.options.sandbox?.hostRunPaths;
    this.changes = new WorkspaceChanges(root, budgets, this.options.log, workspace, () => (workspace ? neverKept(workspace, hostRun) : []));
    return this.changes;
  }

  /** Resolves once the guest started ahead of need (with prestart) is ready. For benchmarks and tests. */
  async warm(): Promise<void> {
    await this.launcher.warm();
  }

  async dispose(): Promise<void> {
    this.sessions.closeAll('CodeAct is shutting down.');
    await this.launcher.dispose();
    await settleCgroups();
    this.artifacts.dispose();
    await this.changes?.dispose();
    this.stage?.dispose();
  }
}

/** The events that end run `itemId` (held until its changeset is on the item). */
const isEnd = (e: CodeActEvent, itemId: string): boolean =>
  (e.type === 'response.code_interpreter_call.completed' && e.item_id === itemId) ||
  (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' && e.item.id === itemId);
