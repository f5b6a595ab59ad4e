/**
 * The session host's server: a real LocalRuntime whose sessions outlive the clients that use them.
 *
 * - A connection is accepted only from this user (the peer's uid, ./peer.ts) and only after a `hello` with
 *   the host's token, within {@link HELLO_MS}; anything else is refused and closed. A bad line closes that
 *   connection, never the host.
 * - A run belongs to no connection: a client that goes away (even kill -9) leaves it running. Its events are
 *   journaled per session (the current run, or the last finished one; bounded in bytes, the oldest dropped
 *   first and counted), so a client that `watch`es gets them all, in order, then the live rest.
 * - A run's tool call goes to a listening client that takes tool calls (the one that started it, or one that
 *   watches with `tools`); with none attached, it fails at once with {@link NO_CLIENT}: the gateway, the
 *   approvals and the keys are the client's, never the host's.
 * - With no client attached and no run going on for `idleMs`, the host ends (its sessions end, their trees
 *   are killed); `end` ends it at once.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { CodeActEvent, CodeInterpreterCallItem, JobChanged, JobOutput, SessionChanged } from '../../common/events';
import type { ExecuteRequest, Runtime, RuntimeSessions, ToolCallRequest } from '../runtime/types';
import type { SessionUsage } from '../runtime/local/sessionPool';
import { treeMemory } from './memory';
import { JobJournal } from './jobJournal';
import { peerUid } from './peer';
import { sameToken } from './place';
import { endSocket, parseClientMessage, readLines, send, writeEvent, type ClientMessage, type HostMessage, type HostSessionInfo } from './wire';

/** What a run's tool call fails with when no client that takes tool calls is attached. */
const NO_CLIENT =
  'No CodeAct client is attached to this session (the window or CLI that started the run went away), so the tool was not called. The run goes on; tools work again once a client reattaches.';

/** What a background job's tool call fails with when no run of its session takes tool calls. */
const NO_CLIENT_FOR_JOB = (job: number) =>
  `No CodeAct client takes this session's tool calls now, so background job ${job}'s tool was not called: a job's call goes to the window or CLI that started it while it stays attached, or to one that runs code in this session or watches it.`;

/** Longest wait for a connection's hello. */
const HELLO_MS = 10_000;
/** Most connections at once. */
const MAX_CONNECTIONS = 64;
/** Bytes of events a session's journal keeps (the oldest go first). */
const JOURNAL_BYTES = 16 * 1024 * 1024;
/** Runs of one session sent and not finished at once (one runs, the others wait their turn). */
const MAX_PENDING_RUNS = 4;

/** The runtime the host serves (a LocalRuntime). */
interface HostedRuntimeCore extends Runtime {
  readonly sessions: RuntimeSessions & { usage?(): Map<string, SessionUsage> };
  onSession(listener: (e: SessionChanged) => void): () => void;
  onJob(listener: (e: JobChanged) => void): () => void;
  onJobOutput(listener: (e: JobOutput) => void): () => void;
}

interface HostServerOptions {
  runtime: HostedRuntimeCore;
  token: string;
  workspace: string;
  /** End after this long with no client and no run; 0 = never. */
  idleMs: number;
  /** The uid allowed to connect (default: this process's). */
  allowedUid?: number;
  /** The interpreter that reads a caller's uid (default /usr/bin/python3, ./peer.ts). */
  peerPython?: string;
  log?: (line: string) => void;
}

interface Listener {
  conn: Conn;
  rid: string;
  tools: boolean;
}

interface Call {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  pause?: () => () => void;
  resume?: () => void;
}

interface Run {
  sessionId?: string;
  itemId?: string;
  controller: AbortController;
  listeners: Listener[];
  calls: Map<string, Call>;
  /** After its end: the client that took its tool calls, which its background jobs' calls go to when no run of the session takes them. */
  home?: Listener;
}

interface Journal {
  events: string[];
  bytes: number;
  dropped: number;
  run: Run;
  done?: { item: CodeInterpreterCallItem | null; error?: string };
}

interface Conn {
  socket: Socket;
  authed: boolean;
  /** Runs this connection listens to, by its rid. */
  runs: Map<string, Run>;
  /** Ended runs whose tool calls it took, by rid: their jobs' calls come to it (at most {@link MAX_HOMES}). */
  homes: Map<string, Run>;
}

/** Ended runs per connection whose background jobs' tool calls it still takes. */
const MAX_HOMES = 16;

export class SessionHostServer {
  private readonly conns = new Set<Conn>();
  private readonly running = new Set<Run>();
  /** Per session: its runs not yet finished (one runs, the others wait their turn), then its last finished one. */
  private readonly journals = new Map<string, Journal[]>();
  private readonly info = new Map<string, HostSessionInfo>();
  /** Background jobs' events per session, for a client that attaches later (./jobJournal). */
  private readonly jobs = new JobJournal();
  private idleTimer: NodeJS.Timeout | undefined;
  /** The live sessions as last broadcast (joined), so an unchanged list is not sent again. */
  private saidLive = '';
  private ending: Promise<void> | undefined;
  readonly server: Server;
  /** Resolves once the host has ended (idle, `end`, or {@link end}). */
  readonly ended: Promise<void>;
  private resolveEnded!: () => void;

  constructor(private readonly o: HostServerOptions) {
    this.server = createServer((socket) => this.accept(socket));
    this.ended = new Promise((r) => (this.resolveEnded = r));
    o.runtime.onSession((e) => {
      if (e.state === 'ended' && !o.runtime.sessions.has(e.session_id)) this.info.delete(e.session_id);
      this.broadcast({ type: 'session', event: e });
      this.liveChanged();
    });
    const onJob = (e: JobChanged | JobOutput) => {
      this.jobs.record(e);
      this.broadcast({ type: 'job', event: e });
    };
    o.runtime.onJob(onJob);
    o.runtime.onJobOutput(onJob);
    this.armIdle();
  }

  private log(line: string) {
    this.o.log?.(line);
  }

  private live(): string[] {
    return [...this.info.keys()].filter((id) => this.o.runtime.sessions.has(id));
  }

  /** Tells every client the live sessions, when they changed since it was last said (not after every run). */
  private liveChanged() {
    const live = this.live();
    const said = live.join('\n');
    if (said === this.saidLive) return;
    this.saidLive = said;
    this.broadcast({ type: 'sessions', live });
  }

  private broadcast(m: HostMessage) {
    for (const c of this.conns) if (c.authed) send(c.socket, m);
  }

  private accept(socket: Socket) {
    socket.on('error', () => {});
    if (this.ending || this.conns.size >= MAX_CONNECTIONS) {
      socket.destroy();
      return;
    }
    const conn: Conn = { socket, authed: false, runs: new Map(), homes: new Map() };
    this.conns.add(conn);
    this.disarmIdle();
    socket.on('close', () => this.gone(conn));
    const refuse = (message: string) => {
      this.log(`refused a connection: ${message}`);
      send(socket, { type: 'refused', message });
      endSocket(socket);
    };
    const hello = setTimeout(() => refuse('no hello in time'), HELLO_MS);
    socket.on('close', () => clearTimeout(hello));
    const allowed = this.o.allowedUid ?? process.getuid?.() ?? -1;
    peerUid(socket, this.o.peerPython).then(
      (uid) => {
        if (uid !== allowed) return refuse(`this session host belongs to another user (uid ${allowed}); uid ${uid} may not attach`);
        socket.resume();
        readLines(
          socket,
          (v) => {
            const m = parseClientMessage(v);
            if (typeof m === 'string') return refuse(`a bad message: ${m}`);
            if (!conn.authed) {
              if (m.type !== 'hello') return refuse('the first message must be hello');
              if (!sameToken(m.token, this.o.token)) return refuse('wrong token');
              clearTimeout(hello);
              conn.authed = true;
              const s = this.o.runtime.sessions;
              return send(socket, {
                type: 'welcome',
                pid: process.pid,
                workspace: this.o.workspace,
                live: this.live(),
                persist: s.persist,
                keepsOutputs: s.keepsOutputs,
                readsVariables: s.readsVariables,
                ...(this.o.runtime.staged ? { staged: true } : {}),
              });
            }
            this.handle(conn, m);
          },
          (why) => refuse(why),
        );
      },
      (e: Error) => refuse(e.message),
    );
  }

  /** A connection closed: its runs go on; tool calls it had not answered fail. */
  private gone(conn: Conn) {
    if (!this.conns.delete(conn)) return;
    for (const run of conn.runs.values()) {
      run.listeners = run.listeners.filter((l) => l.conn !== conn);
      if (!run.listeners.some((l) => l.tools)) for (const [id, call] of run.calls) this.failCall(run, id, call, NO_CLIENT);
    }
    conn.runs.clear();
    for (const run of conn.homes.values()) {
      run.home = undefined;
      for (const [id, call] of run.calls) this.failCall(run, id, call, NO_CLIENT);
    }
    conn.homes.clear();
    this.armIdle();
  }

  private failCall(run: Run, callId: string, call: Call, message: string) {
    run.calls.delete(callId);
    call.resume?.();
    call.reject(new Error(message));
  }

  private handle(conn: Conn, m: ClientMessage) {
    switch (m.type) {
      case 'hello':
        return; // once is enough
      case 'execute':
        return this.execute(conn, m.rid, m.request);
      case 'tool_result': {
        const run = conn.runs.get(m.rid) ?? conn.homes.get(m.rid);
        const call = run?.calls.get(m.callId);
        if (!run || !call) return;
        run.calls.delete(m.callId);
        call.resume?.();
        if (m.ok) call.resolve(m.value);
        else call.reject(new Error(m.message ?? 'The tool call failed.'));
        return;
      }
      case 'tool_pause': {
        const call = (conn.runs.get(m.rid) ?? conn.homes.get(m.rid))?.calls.get(m.callId);
        if (!call) return;
        if (m.paused && !call.resume) call.resume = call.pause?.();
        else if (!m.paused && call.resume) {
          call.resume();
          call.resume = undefined;
        }
        return;
      }
      case 'stop':
        conn.runs.get(m.rid)?.controller.abort();
        return;
      case 'watch':
        return this.watch(conn, m.rid, m.sessionId, m.tools);
      case 'ask':
        this.ask(m.ask, m.sessionId, m.job, m.itemId, m.paths).then(
          (value) => send(conn.socket, { type: 'reply', rid: m.rid, value }),
          (e: Error) => send(conn.socket, { type: 'reply', rid: m.rid, error: e.message }),
        );
        return;
      case 'end':
        void this.end();
        return;
      default: {
        const never: never = m;
        return never;
      }
    }
  }

  private async ask(ask: Extract<ClientMessage, { type: 'ask' }>['ask'], id: string, job?: number, itemId?: string, paths?: string[]): Promise<unknown> {
    const s = this.o.runtime.sessions;
    switch (ask) {
      case 'has':
        return s.has(id);
      case 'variables':
        return s.variables(id);
      case 'close':
        await s.close(id);
        this.info.delete(id);
        this.jobs.forget(id);
        this.liveChanged();
        return true;
      case 'restart':
        return s.restart(id);
      case 'list':
        return this.list();
      case 'jobNotes':
        return (await s.takeJobNotes?.(id)) ?? [];
      case 'jobEvents':
        return this.jobs.events(id);
      case 'stopJob':
        if (!s.stopJob) throw new Error('This runtime runs no background jobs.');
        await s.stopJob(id, job ?? 0);
        return true;
      case 'detach':
        if (!s.detach) throw new Error('This runtime cannot send a run to the background.');
        return s.detach(id, itemId ?? '');
      case 'revert':
        if (!this.o.runtime.revertChanges) throw new Error('This runtime keeps no workspace changes.');
        return this.o.runtime.revertChanges(itemId ?? '', paths);
      case 'rewind':
        if (!this.o.runtime.rewind) throw new Error('This runtime keeps no checkpoints.');
        return this.o.runtime.rewind(itemId ?? '');
      case 'staged':
      case 'keep':
      case 'discard': {
        const staged = this.o.runtime.staged;
        if (!staged) throw new Error('Review mode (codeact.sandbox.reviewWrites) is off here: the code writes the workspace itself.');
        return ask === 'staged' ? staged.list() : staged[ask](paths);
      }
    }
  }

  /** The live sessions, each with its memory and running jobs. */
  private async list(): Promise<HostSessionInfo[]> {
    const usage = this.o.runtime.sessions.usage?.() ?? new Map<string, SessionUsage>();
    const memory = await treeMemory(new Map([...usage].map(([id, u]) => [id, u.root])));
    return this.live().map((id) => {
      const u = usage.get(id);
      return { ...this.info.get(id)!, ...(memory.has(id) ? { memoryBytes: memory.get(id) } : {}), ...(u ? { jobs: u.jobs } : {}) };
    });
  }

  private execute(conn: Conn, rid: string, request: ExecuteRequest) {
    if (conn.runs.has(rid)) return send(conn.socket, { type: 'done', rid, item: null, error: `a run with rid ${rid} is already going on` });
    const pending = request.sessionId ? (this.journals.get(request.sessionId) ?? []).filter((j) => !j.done) : [];
    if (pending.length >= MAX_PENDING_RUNS)
      return send(conn.socket, { type: 'done', rid, item: null, error: `the session already has ${MAX_PENDING_RUNS} runs waiting; stop one or wait for it` });
    const run: Run = { sessionId: request.sessionId, controller: new AbortController(), listeners: [{ conn, rid, tools: true }], calls: new Map() };
    conn.runs.set(rid, run);
    this.running.add(run);
    this.disarmIdle();
    const sessionId = request.sessionId;
    const journal: Journal | undefined = sessionId ? { events: [], bytes: 0, dropped: 0, run } : undefined;
    if (sessionId && journal) {
      this.journals.set(sessionId, [...pending, journal]);
      const now = Date.now();
      const info = this.info.get(sessionId) ?? { id: sessionId, workspace: this.o.workspace, startedAt: now, lastRunAt: now };
      this.info.set(sessionId, { ...info, lastRunAt: now, running: request.itemId });
    }
    const onEvent = (event: CodeActEvent) => {
      if (event.type === 'response.output_item.added' && event.item.type === 'code_interpreter_call') run.itemId = event.item.id;
      // Serialized once: for the journal and for every listener.
      const line = JSON.stringify(event);
      if (journal) this.record(journal, line);
      for (const l of run.listeners) writeEvent(l.conn.socket, `{"type":"event","rid":${JSON.stringify(l.rid)},"event":${line}}\n`);
    };
    const finish = (done: { item: CodeInterpreterCallItem | null; error?: string }) => {
      this.running.delete(run);
      if (journal && sessionId) {
        journal.done = done;
        // The runs still to finish, and this one as the session's last finished run.
        const list = this.journals.get(sessionId) ?? [];
        this.journals.set(
          sessionId,
          list.filter((j) => !j.done || j === journal),
        );
      }
      for (const l of run.listeners) {
        send(l.conn.socket, { type: 'done', rid: l.rid, ...done, ...(journal?.dropped ? { dropped: journal.dropped } : {}) });
        l.conn.runs.delete(l.rid);
      }
      // Its jobs' calls go on coming to the client that took its own (while it stays attached).
      const home = run.listeners.find((l) => l.tools);
      if (home) {
        run.home = home;
        home.conn.homes.delete(home.rid);
        home.conn.homes.set(home.rid, run);
        if (home.conn.homes.size > MAX_HOMES) {
          const [oldest, old] = home.conn.homes.entries().next().value!;
          home.conn.homes.delete(oldest);
          old.home = undefined;
        }
      }
      run.listeners = [];
      // A background job's call this run took and no one answered (the run's own calls ended with it).
      for (const [id, call] of run.calls) this.failCall(run, id, call, 'The run that took this tool call ended before it was answered.');
      if (sessionId) {
        const info = this.info.get(sessionId);
        if (info) this.info.set(sessionId, { ...info, running: undefined, lastRunAt: Date.now() });
        if (!this.o.runtime.sessions.has(sessionId)) this.info.delete(sessionId);
      }
      this.liveChanged();
      this.armIdle();
    };
    this.o.runtime.execute(request, { signal: run.controller.signal, onEvent, onToolCall: (call, signal) => this.toolCall(run, call, signal) }).then(
      (item) => finish({ item }),
      (e: Error) => finish({ item: null, error: e.message }),
    );
  }

  /** Keeps an event in the session's journal, dropping the oldest past {@link JOURNAL_BYTES}. */
  private record(journal: Journal, line: string) {
    journal.events.push(line);
    journal.bytes += line.length;
    let drop = 0;
    while (journal.bytes > JOURNAL_BYTES && drop < journal.events.length - 1) journal.bytes -= journal.events[drop++].length;
    if (drop) {
      journal.events.splice(0, drop);
      journal.dropped += drop;
    }
  }

  private watch(conn: Conn, rid: string, sessionId: string, tools: boolean) {
    // The session's current run (the first not finished), else its last finished one.
    const list = this.journals.get(sessionId) ?? [];
    const journal = list.find((j) => !j.done) ?? list[list.length - 1];
    if (!journal) return send(conn.socket, { type: 'done', rid, item: null });
    if (conn.runs.has(rid)) return send(conn.socket, { type: 'done', rid, item: null, error: `a run with rid ${rid} is already going on` });
    // What the run printed so far, in order; then, in the same turn of the event loop, the live rest.
    for (const line of journal.events) writeEvent(conn.socket, `{"type":"event","rid":${JSON.stringify(rid)},"event":${line}}\n`);
    if (journal.done) return send(conn.socket, { type: 'done', rid, ...journal.done, ...(journal.dropped ? { dropped: journal.dropped } : {}) });
    journal.run.listeners.push({ conn, rid, tools });
    conn.runs.set(rid, journal.run);
  }

  private toolCall(started: Run, call: ToolCallRequest, signal: AbortSignal): Promise<unknown> {
    // A job's call outlives the run that started the job: it goes to any run of the session that takes tool calls.
    const taker = (r: Run) => r.listeners.find((l) => l.tools);
    let run = taker(started) || call.job === undefined ? started : [...this.running].find((r) => r.sessionId === started.sessionId && taker(r));
    let to = run && taker(run);
    // None: the client that ran the job's own run takes it, while attached (its home).
    if (!to && call.job !== undefined && started.home && this.conns.has(started.home.conn)) {
      run = started;
      to = started.home;
    }
    if (!run || !to) return Promise.reject(new Error(call.job === undefined ? NO_CLIENT : NO_CLIENT_FOR_JOB(call.job)));
    return new Promise((resolve, reject) => {
      const entry: Call = { resolve, reject, pause: call.pause };
      run.calls.set(call.callId, entry);
      const onAbort = () => {
        if (!run.calls.has(call.callId)) return;
        for (const l of run.listeners.length ? run.listeners : run.home ? [run.home] : [])
          send(l.conn.socket, { type: 'tool_cancel', rid: l.rid, callId: call.callId });
        this.failCall(run, call.callId, entry, 'The run was stopped.');
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const job = call.job === undefined ? {} : { job: call.job };
      send(to.conn.socket, { type: 'tool_call', rid: to.rid, callId: call.callId, itemId: call.itemId, name: call.name, arguments: call.arguments, ...job });
    });
  }

  private disarmIdle() {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private armIdle() {
    this.disarmIdle();
    if (this.o.idleMs <= 0 || this.conns.size || this.running.size || this.ending) return;
    this.idleTimer = setTimeout(() => {
      this.log('no client attached and no run going on: ending');
      void this.end();
    }, this.o.idleMs);
  }

  /** Ends the host: no new connections, every session ends (their process trees are killed). */
  end(): Promise<void> {
    this.ending ??= (async () => {
      this.disarmIdle();
      this.server.close();
      for (const run of this.running) run.controller.abort();
      for (const c of this.conns) endSocket(c.socket);
      try {
        await this.o.runtime.dispose();
      } finally {
        this.resolveEnded();
      }
    })();
    return this.ending;
  }
}
