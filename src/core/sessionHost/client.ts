/**
 * A client's side of the session host: a `Runtime` whose runs happen in the host (./server.ts). The code
 * review (`beforeRun`) runs here before the request is sent; the run's tool calls come back here and go
 * to this client's handler (its gateway, approvals and keys); Stop is a message; closing this client
 * (dispose, or the process going away) leaves the host's sessions and runs alive, so another client can
 * attach to them (`watch`, and the next `execute` with the same session id).
 */
import { connect, type Socket } from 'node:net';
import type { CodeActEvent, CodeInterpreterCallItem, JobChanged, JobOutput, SessionChanged, VariablesSummary } from '../../common/events';
import type { FilesChanged } from '../../common/rewind';
import { afterReview, announceDone, executionItem, safeEmit } from '../runtime/execution';
import type {
  ExecuteOptions,
  ExecuteRequest,
  RevertOutcome,
  RewindOutcome,
  Runtime,
  RuntimeSessions,
  StagedChanges,
  ToolCallHandler,
  WatchedRun,
  WatchOptions,
} from '../runtime/types';
import { CodeActError } from '../util/errors';
import { newId } from '../util/ids';
import { readToken, type HostPlace } from './place';
import { endSocket, parseHostMessage, readLines, send, type Ask, type ClientMessage, type HostMessage, type HostSessionInfo } from './wire';

/** The host cannot be reached, refused us, or went away. */
export class SessionHostError extends CodeActError {
  readonly category = 'environment' as const;
  constructor(
    message: string,
    /** A host answered and refused this client (starting another would not help). */
    readonly refused = false,
  ) {
    super(message);
    this.name = 'SessionHostError';
  }
}

type Welcome = Extract<HostMessage, { type: 'welcome' }>;

interface Waiting {
  onEvent?: (e: CodeActEvent) => void;
  onToolCall?: ToolCallHandler;
  /** Tool calls in flight, by call id. */
  calls: Map<string, AbortController>;
  resolve: (m: Extract<HostMessage, { type: 'done' }>) => void;
}

/** One authenticated connection to a host. */
export class HostConnection {
  private readonly runs = new Map<string, Waiting>();
  /** Ended runs that took tool calls, by rid: their background jobs' calls still come to them (at most 16, as the host keeps). */
  private readonly homes = new Map<string, Waiting>();
  private readonly replies = new Map<string, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly sessionListeners = new Set<(e: SessionChanged) => void>();
  private readonly jobListeners = new Set<(e: JobChanged | JobOutput) => void>();
  private closedWith: string | undefined;
  /** Numbers this connection's runs and asks (a rid is unique per connection; no random bytes per run). */
  private seq = 0;
  /** The host's live sessions, as it last said. */
  live: Set<string>;

  private constructor(
    private readonly socket: Socket,
    readonly welcome: Welcome,
    /** Where the host is (its socket, token and name). */
    readonly place: HostPlace,
  ) {
    this.live = new Set(welcome.live);
  }

  /** Connects to the host at `place` and says hello with its token; rejects with what went wrong. */
  static open(place: HostPlace): Promise<HostConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(place.socket);
      let conn: HostConnection | undefined;
      let settled = false;
      const fail = (message: string, refused = false) => {
        if (conn) return conn.close(message);
        if (settled) return;
        settled = true;
        socket.destroy();
        reject(new SessionHostError(message, refused));
      };
      socket.on('error', (e: NodeJS.ErrnoException) => fail(`cannot reach the session host at ${place.socket}: ${e.code ?? e.message}`));
      socket.on('close', () => fail('the session host closed the connection'));
      socket.on('connect', () => {
        const token = readToken(place);
        if (!token) return fail(`the session host at ${place.socket} has no token file of ours`);
        send(socket, { type: 'hello', token });
      });
      readLines(
        socket,
        (v) => {
          const m = parseHostMessage(v);
          if (typeof m === 'string') return fail(`the session host sent ${m}`);
          if (conn) return conn.handle(m);
          if (m.type === 'refused') return fail(`the session host refused this client: ${m.message}`, true);
          if (m.type !== 'welcome') return fail(`the session host sent ${m.type} before its welcome`);
          settled = true;
          conn = new HostConnection(socket, m, place);
          resolve(conn);
        },
        (why) => fail(`the session host sent ${why}`),
      );
    });
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  private handle(m: HostMessage) {
    switch (m.type) {
      case 'welcome':
      case 'refused':
        return;
      case 'sessions':
        this.live = new Set(m.live);
        return;
      case 'session':
        for (const l of this.sessionListeners) l(m.event);
        return;
      case 'job':
        for (const l of this.jobListeners) l(m.event);
        return;
      case 'event':
        this.runs.get(m.rid)?.onEvent?.(m.event);
        return;
      case 'tool_call':
        return this.toolCall(m);
      case 'tool_cancel':
        (this.runs.get(m.rid) ?? this.homes.get(m.rid))?.calls.get(m.callId)?.abort();
        return;
      case 'done': {
        const run = this.runs.get(m.rid);
        this.runs.delete(m.rid);
        if (run?.onToolCall) {
          this.homes.set(m.rid, run);
          if (this.homes.size > 16) this.homes.delete(this.homes.keys().next().value!);
        }
        run?.resolve(m);
        return;
      }
      case 'reply': {
        const r = this.replies.get(m.rid);
        this.replies.delete(m.rid);
        if (m.error !== undefined) r?.reject(new SessionHostError(m.error));
        else r?.resolve(m.value);
        return;
      }
      default: {
        const never: never = m;
        return never;
      }
    }
  }

  private toolCall(m: Extract<HostMessage, { type: 'tool_call' }>) {
    const run = this.runs.get(m.rid) ?? this.homes.get(m.rid);
    const answer = (r: Omit<Extract<ClientMessage, { type: 'tool_result' }>, 'type' | 'rid' | 'callId'>) =>
      send(this.socket, { type: 'tool_result', rid: m.rid, callId: m.callId, ...r });
    if (!run?.onToolCall) return answer({ ok: false, message: 'This client does not take tool calls.' });
    const controller = new AbortController();
    run.calls.set(m.callId, controller);
    const pause = () => {
      send(this.socket, { type: 'tool_pause', rid: m.rid, callId: m.callId, paused: true });
      return () => send(this.socket, { type: 'tool_pause', rid: m.rid, callId: m.callId, paused: false });
    };
    run
      .onToolCall(
        { itemId: m.itemId, callId: m.callId, name: m.name, arguments: m.arguments, pause, emit: run.onEvent, ...(isJob(m.job) ? { job: m.job } : {}) },
        controller.signal,
      )
      .then(
        (value) => answer({ ok: true, value }),
        (e: Error) => answer({ ok: false, message: e?.message ?? String(e) }),
      )
      .finally(() => run.calls.delete(m.callId));
  }

  /** Sends a run and resolves with the host's `done` (or a `done` with an error when the host goes away). */
  run(
    message: { type: 'execute'; request: ExecuteRequest } | { type: 'watch'; sessionId: string; tools: boolean },
    o: { onEvent?: (e: CodeActEvent) => void; onToolCall?: ToolCallHandler; signal?: AbortSignal },
  ): Promise<Extract<HostMessage, { type: 'done' }>> {
    const rid = `r${++this.seq}`;
    return new Promise((resolve) => {
      if (this.closedWith !== undefined) return resolve({ type: 'done', rid, item: null, error: this.closedWith });
      const onAbort = () => send(this.socket, { type: 'stop', rid });
      o.signal?.addEventListener('abort', onAbort, { once: true });
      this.runs.set(rid, {
        onEvent: o.onEvent,
        onToolCall: o.onToolCall,
        calls: new Map(),
        resolve: (m) => {
          o.signal?.removeEventListener('abort', onAbort);
          resolve(m);
        },
      });
      send(this.socket, { ...message, rid });
      if (o.signal?.aborted) onAbort();
    });
  }

  ask(ask: Ask, sessionId: string, job?: number, itemId?: string, paths?: readonly string[]): Promise<unknown> {
    const rid = `q${++this.seq}`;
    return new Promise((resolve, reject) => {
      if (this.closedWith !== undefined) return reject(new SessionHostError(this.closedWith));
      this.replies.set(rid, { resolve, reject });
      send(this.socket, {
        type: 'ask',
        rid,
        ask,
        sessionId,
        ...(job !== undefined ? { job } : {}),
        ...(itemId !== undefined ? { itemId } : {}),
        ...(paths !== undefined ? { paths: [...paths] } : {}),
      });
    });
  }

  onSession(listener: (e: SessionChanged) => void): () => void {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  /** Background jobs of the host's sessions that start, print or end. */
  onJob(listener: (e: JobChanged | JobOutput) => void): () => void {
    this.jobListeners.add(listener);
    return () => this.jobListeners.delete(listener);
  }

  /** Asks the host to end (its sessions end). */
  end(): void {
    send(this.socket, { type: 'end' });
  }

  /** Closes this connection; the host and its runs go on. Runs this client waited for end with `why`. */
  close(why = 'this client closed its connection to the session host'): void {
    if (this.closedWith !== undefined) return;
    this.closedWith = why;
    // What was sent (an `end`) still goes out; nothing more is read.
    this.socket.removeAllListeners('data');
    endSocket(this.socket);
    for (const [rid, run] of this.runs) {
      for (const c of run.calls.values()) c.abort();
      run.resolve({ type: 'done', rid, item: null, error: why });
    }
    this.runs.clear();
    for (const r of this.replies.values()) r.reject(new SessionHostError(why));
    this.replies.clear();
  }
}

/** The host's sessions as the `Runtime` contract sees them. */
class HostedSessions implements RuntimeSessions {
  readonly persist: boolean;
  readonly keepsOutputs: boolean;
  readonly readsVariables: boolean;
  readonly outlivesClient = true;
  constructor(private readonly conn: HostConnection) {
    ({ persist: this.persist, keepsOutputs: this.keepsOutputs, readsVariables: this.readsVariables } = conn.welcome);
  }
  has(sessionId: string): boolean {
    return this.conn.live.has(sessionId);
  }
  async variables(sessionId: string): Promise<VariablesSummary | null> {
    return (await this.conn.ask('variables', sessionId)) as VariablesSummary | null;
  }
  async close(sessionId: string): Promise<void> {
    await this.conn.ask('close', sessionId);
  }
  async restart(sessionId: string): Promise<boolean> {
    return (await this.conn.ask('restart', sessionId)) === true;
  }
  /** The session's background jobs that ended since the last call (the host keeps them while no client is attached). */
  async takeJobNotes(sessionId: string): Promise<JobChanged[]> {
    const notes = await this.conn.ask('jobNotes', sessionId);
    return Array.isArray(notes) ? (notes as JobChanged[]) : [];
  }
  /** Stops a running background job of the session in the host (its whole tree); rejects with why not. */
  async stopJob(sessionId: string, job: number): Promise<void> {
    await this.conn.ask('stopJob', sessionId, job);
  }
  /** Sends the session's running execution `itemId` to the background in the host; resolves with its job number. */
  async detach(sessionId: string, itemId: string): Promise<number> {
    return (await this.conn.ask('detach', sessionId, undefined, itemId)) as number;
  }
  /** The session's background jobs so far, as the host journaled them: each running job's output whole and in order, and the ends (then `onJob` has the rest). */
  async jobEvents(sessionId: string): Promise<Array<JobChanged | JobOutput>> {
    const events = await this.conn.ask('jobEvents', sessionId);
    return Array.isArray(events) ? (events as Array<JobChanged | JobOutput>) : [];
  }
  async list(): Promise<HostSessionInfo[]> {
    return (await this.conn.ask('list', '')) as HostSessionInfo[];
  }
}

/** What a run this client let go of while it ran (a window reload, VS Code closing) says: it is not over. */
export const RUN_LEFT_RUNNING =
  'This window let go of the run before it ended (a reload, or VS Code closing): it goes on in the session host, and its result is not known here. The next run in this session waits for it to end; what it assigned is then defined.';

/** The local runtime, its guests in a session host. */
export class HostedRuntime implements Runtime {
  readonly kind = 'local' as const;
  readonly sessions: HostedSessions;
  /** This client let go of the host (dispose). */
  private detached = false;
  constructor(readonly connection: HostConnection) {
    this.sessions = new HostedSessions(connection);
    if (connection.welcome.staged)
      this.staged = {
        list: async () => (await connection.ask('staged', '')) as FilesChanged,
        keep: async (paths) => (await connection.ask('keep', '', undefined, undefined, paths)) as RevertOutcome,
        discard: async (paths) => (await connection.ask('discard', '', undefined, undefined, paths)) as RevertOutcome,
      };
  }

  execute(request: ExecuteRequest, options: ExecuteOptions = {}): Promise<CodeInterpreterCallItem> {
    return afterReview(this.kind, request, options, async (request, o) => {
      const itemId = request.itemId ?? newId('exec');
      const startedAt = performance.now();
      const done = await this.connection.run({ type: 'execute', request: { ...request, itemId } }, o);
      if (done.item) return done.item;
      // This client let go first (a reload): the run goes on in the host. Else the host went away before the run's end.
      const error = {
        type: 'SessionHostError',
        message: this.detached ? RUN_LEFT_RUNNING : `The session host did not finish the run: ${done.error ?? 'it sent no result'}.`,
      };
      return announceDone(safeEmit(o.onEvent), executionItem({ itemId, code: request.code, runtime: this.kind, outputs: [], error, startedAt }));
    });
  }

  /**
   * What a session's current run printed so far, in order, then its live rest, until it ends (or its last
   * finished run's events). Resolves with its item, or null when the session has no run.
   */
  async watch(sessionId: string, o: WatchOptions = {}): Promise<WatchedRun> {
    const done = await this.connection.run({ type: 'watch', sessionId, tools: !!o.onToolCall }, o);
    return { item: done.item, dropped: done.dropped ?? 0, error: done.error };
  }

  onSession(listener: (e: SessionChanged) => void): () => void {
    return this.connection.onSession(listener);
  }

  /** Background jobs that start, print or end in the host (replay what came before with `sessions.jobEvents`). */
  onJob(listener: (e: JobChanged | JobOutput) => void): () => void {
    return this.connection.onJob(listener);
  }

  /** Puts back the workspace files an execution changed, in the host (the card's Revert); rejects with why not. */
  async revertChanges(itemId: string, paths?: readonly string[]): Promise<RevertOutcome> {
    return (await this.connection.ask('revert', '', undefined, itemId, paths)) as RevertOutcome;
  }

  async rewind(point: string): Promise<RewindOutcome> {
    return (await this.connection.ask('rewind', '', undefined, point)) as RewindOutcome;
  }

  /** Review mode, in the host: there when the host's runtime stages the code's writes (its welcome says so). */
  readonly staged: StagedChanges | undefined;

  /** Leaves the host and its sessions running (a run going on too: its `execute` resolves with {@link RUN_LEFT_RUNNING}). */
  async dispose(): Promise<void> {
    this.detached = true;
    this.connection.close();
  }
}

/** A job number from the host's message (the host is ours, but its lines are checked all the same). */
const isJob = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
