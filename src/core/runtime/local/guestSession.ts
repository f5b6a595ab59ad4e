/**
 * Executions on one local guest process: the protocol (frames on the private channel), live capped
 * output, tool calls routed to the host, the timeout and Stop, and the finished item.
 *
 * A session keeps one guest for many executions (its globals live on); a one-shot session runs one
 * execution and ends with it. Executions of a session take turns. In a session, Stop and the timeout
 * interrupt the code (KeyboardInterrupt) and keep the state; only when the interrupt does not take
 * within the grace period is the guest killed, and the run says that the state is gone.
 */
import type { CodeActEvent, CodeInterpreterCallItem, ExecutionError, SessionInfo, StreamName, VariablesSummary } from '../../../common/events';
import { announceDone, executionItem, OutputCapture, ToolDispatcher } from '../execution';
import { formatBytes } from '../../../common/format';
import { type ExecuteOptions, type ExecuteRequest, type RuntimeLimits } from '../types';
import type { GuestHandle } from './guestProcess';
import { annotateLimit, crashError, formatSeconds } from './guestErrors';
import { randomToken } from '../../util/ids';

export interface GuestSessionOptions {
  limits: RuntimeLimits;
  maxFrameBytes: number;
  /** How long an interrupt may take before the guest is killed (sessions only). */
  interruptGraceMs: number;
}

type Completion = { ok: true; value: unknown } | { ok: false; error: ExecutionError };

const END_PREFIX = Buffer.from('\u0000codeact-end:');

/** Finds the run's end token in a byte stream, holding back only what could be its beginning. */
class EndScanner {
  private carry: Buffer = Buffer.alloc(0);
  constructor(private readonly token: Buffer) {}

  /** Returns [bytes of the run, whether the token was seen]. */
  push(chunk: Buffer): [Buffer, boolean] {
    const data = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = Buffer.alloc(0);
    const at = data.indexOf(this.token);
    if (at >= 0) return [data.subarray(0, at), true];
    // Hold back a tail that may be the start of the token (it always starts with NUL).
    const nul = data.lastIndexOf(0, data.length - 1);
    if (nul >= 0 && data.length - nul < this.token.length && this.token.subarray(0, data.length - nul).equals(data.subarray(nul))) {
      this.carry = Buffer.from(data.subarray(nul));
      return [data.subarray(0, nul), false];
    }
    return [data, false];
  }

  flush(): Buffer {
    const c = this.carry;
    this.carry = Buffer.alloc(0);
    return c;
  }
}

class Execution {
  readonly itemId: string;
  readonly started = performance.now();
  readonly output: OutputCapture;
  readonly tools: ToolDispatcher;
  readonly toolAbort = new AbortController();
  readonly endToken = randomToken(12);
  readonly scanners: Record<StreamName, EndScanner>;
  readonly ended: Record<StreamName, boolean> = { stdout: false, stderr: false };
  completion?: Completion;
  failure?: ExecutionError;
  lastCallId = 0;
  finished = false;
  stateLost = false;
  private resolveDone!: () => void;
  readonly done = new Promise<void>((r) => (this.resolveDone = r));

  constructor(
    readonly runId: number,
    readonly request: ExecuteRequest,
    readonly options: ExecuteOptions,
    limits: RuntimeLimits,
    itemId: string,
  ) {
    this.itemId = itemId;
    this.output = new OutputCapture(limits.maxOutputBytes);
    const token = Buffer.concat([END_PREFIX, Buffer.from(`${this.endToken}\u0000`)]);
    this.scanners = { stdout: new EndScanner(token), stderr: new EndScanner(token) };
    this.tools = new ToolDispatcher({
      itemId,
      emit: (e) => this.emit(e),
      handler: options.onToolCall,
      enabled: request.tools !== false,
      maxConcurrent: limits.maxConcurrentToolCalls,
      signal: this.toolAbort.signal,
    });
  }

  emit(event: CodeActEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // A consumer's bug must not break the run.
    }
  }

  onOutput(stream: StreamName, chunk: Buffer): void {
    if (this.ended[stream]) return;
    const [data, seen] = this.scanners[stream].push(chunk);
    if (data.length) {
      const text = this.output.pushBytes(stream, data);
      if (text) this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream, delta: text });
    }
    if (seen) {
      this.ended[stream] = true;
      this.onEnded?.();
    }
  }

  /** Called when an end token arrives (set once the result is in). */
  onEnded?: () => void;

  /** The streams are over (the token arrived, or the pipes closed): emit what is left. */
  endOutput(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (!this.ended[stream]) {
        const rest = this.scanners[stream].flush();
        if (rest.length) {
          const text = this.output.pushBytes(stream, rest);
          if (text) this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream, delta: text });
        }
        this.ended[stream] = true;
      }
      const tail = this.output.end(stream);
      if (tail) this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream, delta: tail });
    }
  }

  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.toolAbort.abort();
    this.resolveDone();
  }
}

let uses = 0;
const nextUse = () => ++uses;

export class GuestSession {
  private runs = 0;
  private current?: Execution;
  private queue: Promise<void> = Promise.resolve();
  private frameBuf: Buffer[] = [];
  private frameLen = 0;
  private ready?: { resolve: () => void; reject: (e: Error) => void };
  private varsWaiter?: { resolve: (v: VariablesSummary) => void; timer: NodeJS.Timeout };
  private dead = false;
  private deathReason?: string;
  private readonly deathListeners = new Set<(reason: string) => void>();
  busy = false;
  /** Settles when the guest is ready for its first run (set by whoever calls start()). */
  started: Promise<void> = Promise.resolve();
  /** Order of last use (a counter, not a clock: two runs can end in the same millisecond). */
  lastUsed = nextUse();

  constructor(
    readonly guest: GuestHandle,
    private readonly o: GuestSessionOptions,
  ) {
    guest.proto.on('data', (b: Buffer) => this.onProtocolData(b));
    guest.stdout.on('data', (b: Buffer) => this.current?.onOutput('stdout', b));
    guest.stderr.on('data', (b: Buffer) => this.current?.onOutput('stderr', b));
    // Streams handed over by the zygote's socket server arrive paused.
    for (const s of [guest.proto, guest.stdout, guest.stderr]) s.resume();
    // The exit is noticed on another channel than the guest's last frames (a signal, or the zygote's
    // socket): read what the protocol channel still holds before deciding the guest died mid-run.
    void guest.exited.then((exit) => this.whenDrained(guest.proto, () => this.onExit(exit.code, exit.signal)));
  }

  get alive(): boolean {
    return !this.dead && this.guest.alive;
  }

  /** Executions so far. */
  get count(): number {
    return this.runs;
  }

  onDeath(listener: (reason: string) => void): () => void {
    this.deathListeners.add(listener);
    return () => this.deathListeners.delete(listener);
  }

  /** The session this guest serves (it keeps its globals); undefined: one run, then the guest ends. */
  private sessionId?: string;

  private get persistent(): boolean {
    return this.sessionId !== undefined;
  }

  /** Makes the guest a session's (before its first run). */
  bind(sessionId: string): void {
    this.sessionId = sessionId;
  }

  /**
   * Sends init (limits, frame sizes); resolves when the guest is ready for its first run. A guest started
   * ahead of need has done this before anyone asks for it.
   */
  start(limits: Record<string, number>, subreaper: boolean): Promise<void> {
    this.send({
      t: 'init',
      subreaper,
      limits,
      max_frame: this.o.maxFrameBytes,
      max_value: Math.min(this.o.limits.maxValueBytes, this.o.maxFrameBytes - 1024),
      max_concurrency: this.o.limits.maxConcurrentToolCalls,
      max_output: this.o.limits.maxOutputBytes,
    });
    return new Promise<void>((resolve, reject) => {
      if (this.dead) return reject(new Error(this.deathReason ?? 'the guest exited'));
      this.ready = { resolve, reject };
    });
  }

  /**
   * Runs one execution (after the ones before it), whose opening the caller has announced
   * (openExecution). Never rejects for failures of the code.
   */
  async execute(request: ExecuteRequest, options: ExecuteOptions, itemId: string, notice?: string): Promise<CodeInterpreterCallItem> {
    const limits = this.o.limits;
    const exec = new Execution(++this.runs, request, options, limits, itemId);
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((r) => (release = r));
    const signal = options.signal;
    try {
      if (signal?.aborted) return this.result(exec, { type: 'Cancelled', message: 'The run was stopped before it started.' });
      await waitOrAbort(previous, signal);
      if (signal?.aborted) return this.result(exec, { type: 'Cancelled', message: 'The run was stopped before it started.' });
      if (!this.alive) {
        return this.result(exec, { type: 'SessionEnded', message: `The Python session has ended (${this.deathReason ?? 'its process exited'}); run the code again to start a new one.` });
      }
      this.busy = true;
      this.lastUsed = nextUse();
      this.current = exec;
      if (notice) exec.onOutput('stderr', Buffer.from(notice));
      return await this.runNow(exec);
    } finally {
      if (this.current === exec) this.current = undefined;
      this.busy = false;
      this.lastUsed = nextUse();
      release();
    }
  }

  private async runNow(exec: Execution): Promise<CodeInterpreterCallItem> {
    const { request, options } = exec;
    const signal = options.signal;
    const onAbort = () => this.stopRun(exec, { type: 'Cancelled', message: 'The run was stopped.' });
    signal?.addEventListener('abort', onAbort, { once: true });
    const timeoutMs = request.timeoutMs ?? this.o.limits.timeoutMs;
    const timer = setTimeout(() => {
      this.stopRun(exec, {
        type: 'Timeout',
        message:
          `The code ran longer than the ${formatSeconds(timeoutMs)} timeout and was stopped` +
          (exec.tools.inFlight ? `, with ${exec.tools.inFlight} tool call(s) still in flight` : '') +
          '. Make it faster, or raise the timeout (CLI: --timeout SECONDS; settings: codeact.timeoutSeconds).',
      });
    }, timeoutMs);
    try {
      this.send({ t: 'run', run: exec.runId, code: request.code, tools: request.tools !== false, end: exec.endToken, last: !this.persistent });
      await exec.done;
      const error = exec.failure ?? (exec.completion && !exec.completion.ok ? exec.completion.error : undefined);
      return this.result(exec, error);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Stop or timeout. A session interrupts and keeps its state if it can; a one-shot run is killed. */
  private stopRun(exec: Execution, error: ExecutionError): void {
    if (exec.finished || exec.failure) return;
    exec.failure = error;
    exec.toolAbort.abort();
    if (!this.persistent) return this.kill('the run was stopped');
    this.guest.interrupt();
    const grace = setTimeout(() => {
      if (exec.finished) return;
      exec.stateLost = true;
      const seconds = formatSeconds(this.o.interruptGraceMs);
      exec.failure = {
        ...error,
        message:
          `${error.message.replace(/\.$/, '')}. The code did not respond to the interrupt within ${seconds}, ` +
          'so its Python session was ended: variables from earlier runs are gone, and the next run starts a new session.',
      };
      this.kill('the code did not respond to an interrupt');
    }, this.o.interruptGraceMs);
    void exec.done.then(() => clearTimeout(grace));
  }

  /** The variables view of an idle session (null while it runs or when it is gone). */
  variables(timeoutMs = 5000): Promise<VariablesSummary | null> {
    if (!this.alive || this.busy || !this.persistent) return Promise.resolve(null);
    if (this.varsWaiter) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.varsWaiter = undefined;
        resolve(null);
      }, timeoutMs);
      this.varsWaiter = { resolve: (v) => resolve(v), timer };
      this.send({ t: 'vars' });
    });
  }

  /** Ends a one-shot session after its run: a clean end needs no search for stray processes. */
  end(): void {
    if (this.dead) return;
    const clean = !this.persistent && this.lastCompleted;
    this.markDead('the run is over');
    this.guest.kill(clean);
  }

  private lastCompleted = false;

  /** Kills the guest's whole process tree; the session is over. */
  kill(reason: string): void {
    if (!this.dead) this.markDead(reason);
    this.guest.kill(false);
    this.afterKill();
  }

  private afterKill(): void {
    const exec = this.current;
    if (!exec || exec.finished) return;
    // Wait for the output pipes to drain (they close once every process holding them is gone), but
    // never hang on a straggler: give up after a short grace.
    const guest = this.guest;
    const grace = setTimeout(() => this.finishExec(exec), 1000);
    void guest.exited.then(() => {
      let open = 0;
      for (const s of [guest.stdout, guest.stderr]) {
        if (s.destroyed || s.readableEnded) continue;
        open++;
        s.once('close', () => {
          if (--open === 0) {
            clearTimeout(grace);
            this.finishExec(exec);
          }
        });
      }
      if (!open) {
        clearTimeout(grace);
        this.finishExec(exec);
      }
    });
  }

  private finishExec(exec: Execution): void {
    if (exec.finished) return;
    this.lastCompleted = !!exec.completion && !exec.failure;
    exec.endOutput();
    exec.finish();
  }

  private markDead(reason: string): void {
    if (this.dead) return;
    this.dead = true;
    this.deathReason = reason;
    this.ready?.reject(new Error(`The Python guest could not start: ${reason}`));
    this.ready = undefined;
    if (this.varsWaiter) {
      clearTimeout(this.varsWaiter.timer);
      this.varsWaiter.resolve(null as unknown as VariablesSummary);
      this.varsWaiter = undefined;
    }
    for (const l of this.deathListeners) {
      try {
        l(reason);
      } catch {}
    }
  }

  private whenDrained(stream: NodeJS.ReadableStream & { destroyed?: boolean; readableEnded?: boolean }, then: () => void): void {
    if (stream.destroyed || stream.readableEnded) return then();
    let done = false;
    const once = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      then();
    };
    const timer = setTimeout(once, 500);
    stream.once('end', once);
    stream.once('close', once);
  }

  private onExit(code: number | null, sig: NodeJS.Signals | null): void {
    const exec = this.current;
    if (exec && !exec.completion && !exec.failure) {
      exec.failure = crashError(code, sig, exec.output.text('stderr'));
      exec.stateLost = this.persistent;
    }
    const launchError = (this.guest as { launchError?: Error }).launchError;
    if (exec && launchError && !exec.completion) exec.failure = { type: 'LaunchError', message: `Could not start the Python guest: ${launchError.message}` };
    this.markDead(launchError ? `it could not start: ${launchError.message}` : 'its process exited');
    this.guest.kill(!!exec?.completion && !this.persistent);
    this.afterKill();
  }

  private send(frame: unknown): void {
    const proto = this.guest.proto;
    if (proto.destroyed || !proto.writable) return;
    proto.write(JSON.stringify(frame) + '\n');
  }

  private onProtocolData(chunk: Buffer): void {
    let start = 0;
    const max = this.o.maxFrameBytes;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      if (this.frameLen + piece.length > max) return this.violation(`a protocol frame over ${formatBytes(max)} (a call_tool argument that large is refused)`);
      const line = this.frameBuf.length ? Buffer.concat([...this.frameBuf, piece]).toString('utf8') : piece.toString('utf8');
      this.frameBuf = [];
      this.frameLen = 0;
      this.onFrame(line);
      if (this.dead) return;
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length) {
      this.frameLen += rest.length;
      if (this.frameLen > max) return this.violation(`a protocol frame over ${formatBytes(max)} (a call_tool argument that large is refused)`);
      this.frameBuf.push(Buffer.from(rest));
    }
  }

  private violation(what: string): void {
    const exec = this.current;
    if (exec && !exec.finished) {
      exec.failure = { type: 'ProtocolError', message: `The guest sent ${what}; the run was stopped.` };
      exec.stateLost = this.persistent;
    }
    this.kill(`it sent ${what}`);
  }

  private onFrame(line: string): void {
    let frame: any;
    try {
      frame = JSON.parse(line);
    } catch {
      return this.violation('a malformed frame');
    }
    if (frame === null || typeof frame !== 'object') return this.violation('a malformed frame');
    const exec = this.current;
    switch (frame.t) {
      case 'ready':
        if (!this.ready) return this.violation('an unexpected ready frame');
        if (Number.isSafeInteger(frame.pid)) this.guest.setReportedPid(frame.pid);
        this.ready.resolve();
        this.ready = undefined;
        return;
      case 'vars': {
        const waiter = this.varsWaiter;
        if (!waiter) return this.violation('an unexpected variables frame');
        clearTimeout(waiter.timer);
        this.varsWaiter = undefined;
        waiter.resolve(normaliseVariables(frame));
        return;
      }
      case 'complete': {
        if (!exec || exec.completion || frame.run !== exec.runId) return this.violation('a result for no running code');
        exec.completion = frame.ok === true ? { ok: true, value: frame.value ?? null } : { ok: false, error: normaliseError(frame.error) };
        // The run is over once its end token has come through stdout and stderr (a one-shot guest has
        // also killed what it started by now; the host kills the guest itself right after).
        const end = Array.isArray(frame.end) ? frame.end : [];
        this.whenOutputEnded(exec, end[0] === true, end[1] === true);
        return;
      }
      case 'tool_call': {
        const id = frame.id;
        if (!exec || exec.completion || frame.run !== exec.runId) return this.violation('a tool call for no running code');
        if (!Number.isSafeInteger(id) || id <= exec.lastCallId || typeof frame.name !== 'string') return this.violation('a malformed tool call');
        exec.lastCallId = id;
        const args = frame.args === undefined ? {} : frame.args;
        void exec.tools.dispatch(frame.name, args).then((r) => {
          if (exec.finished || this.current !== exec) return;
          this.send(r.ok ? { t: 'tool_result', id, ok: true, value: r.value } : { t: 'tool_result', id, ok: false, error: r.error });
        });
        return;
      }
      default:
        return this.violation(`an unknown frame type ${JSON.stringify(String(frame.t)).slice(0, 40)}`);
    }
  }

  /** A run is over when its end token has come through stdout and stderr (or could not be written). */
  private whenOutputEnded(exec: Execution, stdoutToken: boolean, stderrToken: boolean): void {
    const check = () => (!stdoutToken || exec.ended.stdout) && (!stderrToken || exec.ended.stderr);
    if (check()) return this.finishExec(exec);
    // Checked again as each token arrives; a guest whose fd 1 or 2 no longer reaches us gets a second.
    const grace = setTimeout(() => this.finishExec(exec), 1000);
    exec.onEnded = () => {
      if (!check()) return;
      clearTimeout(grace);
      this.finishExec(exec);
    };
  }

  private result(exec: Execution, error?: ExecutionError): CodeInterpreterCallItem {
    if (!exec.finished) exec.finish();
    const session: SessionInfo | undefined = this.sessionId ? { id: this.sessionId, execution: exec.runId, ...(exec.stateLost ? { state_lost: true } : {}) } : undefined;
    const item = executionItem({
      itemId: exec.itemId,
      code: exec.request.code,
      runtime: 'local',
      outputs: exec.output.outputs(),
      error,
      value: exec.completion?.ok ? exec.completion.value : null,
      startedAt: exec.started,
      truncated: exec.output.truncated,
      sandbox: this.guest.plan.info,
    });
    if (session) item.session = session;
    if (error) annotateLimit(item, this.guest.plan, this.guest.cgroup);
    return announceDone((e) => exec.emit(e), item);
  }
}

function waitOrAbort(p: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (!signal) return p;
  return new Promise<void>((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void p.then(done);
  });
}

export function normaliseError(raw: any): ExecutionError {
  if (!raw || typeof raw !== 'object') return { type: 'Error', message: 'The code failed.' };
  return {
    type: typeof raw.type === 'string' ? raw.type : 'Error',
    message: typeof raw.message === 'string' ? raw.message : String(raw.message ?? ''),
    ...(typeof raw.traceback === 'string' && raw.traceback ? { traceback: raw.traceback } : {}),
    ...(Number.isSafeInteger(raw.line) ? { line: raw.line } : {}),
  };
}

/** The guest's variables frame, checked field by field (it is untrusted input). */
export function normaliseVariables(raw: any): VariablesSummary {
  const list = Array.isArray(raw?.variables) ? raw.variables.slice(0, 500) : [];
  const str = (v: unknown, n: number) => (typeof v === 'string' ? v.slice(0, n) : undefined);
  return {
    total: Number.isSafeInteger(raw?.total) ? raw.total : list.length,
    variables: list
      .filter((v: any) => v && typeof v.name === 'string')
      .map((v: any) => ({
        name: v.name.slice(0, 200),
        type: str(v.type, 200) ?? '',
        ...(str(v.summary, 300) !== undefined ? { summary: str(v.summary, 300) } : {}),
        ...(Array.isArray(v.shape) && v.shape.every((n: unknown) => Number.isSafeInteger(n)) ? { shape: v.shape.slice(0, 8) } : {}),
        ...(Number.isSafeInteger(v.len) ? { len: v.len } : {}),
      })),
  };
}
