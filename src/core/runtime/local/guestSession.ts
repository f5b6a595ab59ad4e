/**
 * Executions on one local guest process: the protocol (frames on the private channel), live capped
 * output, tool calls routed to the host, the timeout and Stop, and the finished item.
 *
 * A session keeps one guest for many executions (its globals live on); a one-shot session runs one
 * execution and ends with it. Executions of a session take turns. In a session, Stop and the timeout
 * interrupt the code (KeyboardInterrupt) and keep the state; only when the interrupt does not take
 * within the grace period is the guest killed, and the run says that the state is gone.
 */
import type { CodeInterpreterCallItem, ExecutionError, SessionInfo, VariablesSummary } from '../../../common/events';
import { cancelledError, completionError, normaliseError, valueCompletion } from '../execution';
import type { ExecuteOptions, ExecuteRequest, RuntimeLimits } from '../types';
import { checkFrame, FrameReader, GUEST_FRAME_FIELDS, isInt, normaliseVariables, sendFrame, sendLine, type GuestFrame, type HostFrame } from './guestFrames';
import { whenDrained, type GuestHandle } from './guestProcess';
import { GuestRun, type Detached } from './guestRun';
import { annotateLimit, crashError } from './guestErrors';
import { formatDuration } from '../../../common/format';
import type { ArtifactStore } from '../artifacts';
import { displayOptions, fileOptions } from '../displays';
import { keepFrame } from '../keptOutput';
import { Emitter } from '../../../common/emitter';
import { GuestJobs } from './guestJobs';
import { JobTools } from './jobTools';
import { detachedEnded, detachRun, offerDetach, waitedNote } from './detach';
import { GuestCheckpoints, type CheckpointBudget } from './checkpoints';
import { settledOrAborted } from '../../util/abort';

interface GuestSessionOptions {
  limits: RuntimeLimits;
  /** Where the files the code writes are copied out to. */
  artifacts?: ArtifactStore;
  maxFrameBytes: number;
  /** How long an interrupt may take before the guest is killed (sessions only). */
  interruptGraceMs: number;
  /** Checkpoints of a session's Python state (./checkpoints); none without. */
  checkpoints?: CheckpointBudget;
}

let uses = 0;
const nextUse = () => ++uses;

export class GuestSession {
  private runs = 0;
  private numbered = 0; // the last execution's number: one numbering per session, whichever door ran it
  private current?: GuestRun;
  queue: Promise<void> = Promise.resolve(); // settles when the runs sent so far end (one sent to the background too)
  private readonly frames: FrameReader;
  private ready?: { resolve: () => void; reject: (e: Error) => void };
  private varsWaiter?: { resolve: (v: VariablesSummary) => void; timer: NodeJS.Timeout };
  private dead = false;
  private deathReason?: string;
  private readonly died = new Emitter<string>();
  busy = false;
  /** Settles when the guest is ready for its first run (set by whoever calls start()). */
  started: Promise<void> = Promise.resolve();
  /** Order of last use (a counter, not a clock: two runs can end in the same millisecond). */
  lastUsed = nextUse();
  /** Its background jobs (./guestJobs). */
  readonly jobs: GuestJobs;
  /** Its checkpoints (./checkpoints): the Python state before each run, for a rewind. */
  readonly checkpoints: GuestCheckpoints;

  constructor(
    readonly guest: GuestHandle,
    private readonly o: GuestSessionOptions,
  ) {
    const jobTools = new JobTools(o.limits, (line) => !this.dead && sendLine(this.guest.proto, line));
    this.jobs = new GuestJobs(() => this.sessionId ?? '', o.limits.maxJobMs, o.limits.maxJobs, jobTools);
    const stuck = () => this.kill('it did not answer a rewind');
    this.checkpoints = new GuestCheckpoints((f) => !this.dead && sendFrame(this.guest.proto, f), o.checkpoints ?? { max: 0, memoryBytes: 0 }, stuck);
    this.frames = new FrameReader(o.maxFrameBytes, {
      frame: (line) => this.onFrame(line),
      violation: (what) => this.violation(what),
      stopped: () => this.dead,
    });
    guest.proto.on('data', (b: Buffer) => this.frames.push(b));
    guest.stdout.on('data', (b: Buffer) => this.current?.onOutput('stdout', b));
    guest.stderr.on('data', (b: Buffer) => this.current?.onOutput('stderr', b));
    // Streams handed over by the zygote's socket server arrive paused.
    for (const s of [guest.proto, guest.stdout, guest.stderr]) s.resume();
    // The exit is noticed on another channel than the guest's last frames (a signal, or the zygote's
    // socket): read what the protocol channel still holds before deciding the guest died mid-run.
    void guest.exited.then((exit) => whenDrained(guest.proto, () => this.onExit(exit.code, exit.signal)));
  }

  get alive(): boolean {
    return !this.dead && this.guest.alive;
  }

  onDeath(listener: (reason: string) => void): () => void {
    return this.died.on(listener);
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

  /** Sends init (limits, frame sizes); resolves when the guest is ready for its first run (a guest started ahead of need did it earlier). */
  start(limits: Record<string, number>, subreaper: boolean): Promise<void> {
    this.send({
      t: 'init',
      subreaper,
      limits,
      max_frame: this.o.maxFrameBytes,
      max_value: Math.min(this.o.limits.maxValueBytes, this.o.maxFrameBytes - 1024),
      max_concurrency: this.o.limits.maxConcurrentToolCalls,
      max_output: this.o.limits.maxOutputBytes,
      jobs: { max: this.o.limits.maxJobs, max_seconds: this.o.limits.maxJobMs / 1000 },
    });
    return new Promise<void>((resolve, reject) => {
      if (this.dead) return reject(new Error(this.deathReason ?? 'the guest exited'));
      this.ready = { resolve, reject };
    });
  }

  /** Runs one execution (after the ones before it), whose opening the caller has announced (openExecution); never rejects for the code's failures. */
  async execute(request: ExecuteRequest, options: ExecuteOptions, itemId: string, notice?: string): Promise<CodeInterpreterCallItem> {
    const limits = this.o.limits;
    // Its number (the card's, output_of(n)'s, the model's): the caller's (a chat counts its history) unless taken.
    request = { ...request, execution: (this.numbered = Math.max(request.execution ?? 0, this.numbered + 1)) };
    const exec = new GuestRun(++this.runs, request, options, limits, itemId, this.o.interruptGraceMs);
    exec.onToolFlood = (what) => {
      if (this.current === exec) this.violation(what);
    };
    this.attachStop(exec);
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((r) => (release = r));
    const signal = options.signal;
    let myTurn = false;
    /** The run is under way: its end (not this call's return: it may be sent to the background) gives the turn on. */
    let running = false;
    const since = performance.now();
    try {
      if (signal?.aborted) return this.result(exec, cancelledError(true));
      await settledOrAborted(previous, signal);
      myTurn = true;
      if (signal?.aborted) return this.result(exec, cancelledError(true));
      if (!this.alive) {
        return this.result(exec, {
          type: 'SessionEnded',
          message: `The Python session has ended (${this.deathReason ?? 'its process exited'}); run the code again to start a new one.`,
        });
      }
      this.busy = true;
      this.lastUsed = nextUse();
      this.current = exec;
      if (notice) exec.onOutput('stderr', Buffer.from(notice));
      offerDetach(exec, this.sessionId, this.o.limits);
      const waited = waitedNote(this.lastDetached, since);
      if (waited) exec.note(waited);
      running = true;
      const run = this.runNow(exec).finally(() => this.endTurn(exec, release));
      return await Promise.race([run, exec.detachedItem]);
    } finally {
      // A run under way gives the turn on at its end. Stopped while waiting: the run before this one may still
      // be going; the next run's turn comes when that one ends, never earlier.
      if (!running && myTurn) this.endTurn(exec, release);
      else if (!running) void previous.then(release);
    }
  }

  private endTurn(exec: GuestRun, release: () => void): void {
    if (this.current === exec) this.current = undefined;
    this.busy = false;
    this.lastUsed = nextUse();
    release();
  }

  /** The last run sent to the background (the next execution says how long it waited for it). */
  private lastDetached?: Detached;
  /** The last run's "keep" frame (output_of(n)): goes with the next run, one write (no wake of the guest before a result). */
  private keepNext?: () => string;

  /** "Keep running in background" (./detach): the running execution goes on as a background job, its execute() resolves now; the job's number, or throws why not. */
  detach(itemId: string): number {
    const exec = this.current;
    if (!exec || exec.itemId !== itemId) throw new Error('This execution is not running in this session now.');
    if (!this.persistent || !this.sessionId) throw new Error('Only a run of a session can go on in the background.');
    const session: SessionInfo = { id: this.sessionId, execution: exec.request.execution! };
    const { job, item } = detachRun(exec, this.jobs, this.o.limits, session, this.guest.plan.info);
    this.lastDetached = exec.detached;
    exec.handOver(item);
    return job;
  }

  private async runNow(exec: GuestRun): Promise<CodeInterpreterCallItem> {
    const { request, options } = exec;
    const unwatch = (exec.unwatch = exec.watch(options.signal));
    exec.startClock(request.timeoutMs ?? this.o.limits.timeoutMs);
    try {
      const l = this.o.limits;
      const checkpoint = this.persistent && this.checkpoints.beforeRun(exec.itemId);
      if (checkpoint) this.send(checkpoint);
      this.send({
        t: 'run',
        run: exec.runId,
        code: request.code,
        tools: request.tools !== false,
        end: exec.endToken,
        last: !this.persistent,
        display: displayOptions(l),
        files: fileOptions(l, !!this.o.artifacts),
        ...(request.background ? { background: true as const } : {}),
        // Job numbers the host took (runs sent to the background): the guest's next fork is numbered past them.
        ...(this.jobs.floor ? { job_floor: this.jobs.floor } : {}),
      });
      await exec.done;
      await Promise.allSettled(exec.fileWrites);
      const error = exec.failure ?? completionError(exec.completion);
      const item = this.result(exec, error);
      if (exec.detached) detachedEnded(exec, item, this.jobs);
      return item;
    } finally {
      exec.clock.stop();
      unwatch();
    }
  }

  /**
   * How Stop and the timeout reach the guest (the run's skeleton decides when). A session interrupts and keeps
   * its state if it can; a one-shot run is killed.
   */
  private attachStop(exec: GuestRun): void {
    exec.attach({
      inFlight: () => exec.tools.inFlight,
      settled: () => !!exec.failure,
      onStop: (error) => (exec.failure = error),
      cancelTools: () => exec.toolAbort.abort(),
      interrupt: () => {
        if (!this.persistent) {
          this.kill('the run was stopped');
          return false;
        }
        this.guest.interrupt();
        return true;
      },
      kill: (graceMs) => {
        const error = exec.stopping!;
        exec.stateLost = true;
        exec.failure = {
          ...error,
          message:
            `${error.message.replace(/\.$/, '')}. The code did not respond to the interrupt within ${formatDuration(graceMs)}, ` +
            'so its Python session was ended: variables from earlier runs are gone, and the next run starts a new session.',
        };
        this.kill('the code did not respond to an interrupt');
      },
    });
  }

  /** Runs `work` in the session's turn: after the runs sent so far; runs sent meanwhile wait for it. */
  async inTurn<T>(work: () => Promise<T>): Promise<T> {
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((r) => (release = r));
    await previous;
    return work().finally(release);
  }

  /** Why the session cannot be rewound now, if it cannot. */
  get rewindRefusal(): string | undefined {
    if (!this.alive) return `The Python session has ended (${this.deathReason ?? 'its process exited'}).`;
    return this.jobs.count ? 'A background job is running in this session: stop it or wait for it, then rewind.' : undefined;
  }

  /** The variables view of an idle session (null while it runs or when it is gone). */
  variables(timeoutMs = 5000): Promise<VariablesSummary | null> {
    if (!this.alive || this.busy || !this.persistent || this.varsWaiter) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.varsWaiter = undefined;
        resolve(null);
      }, timeoutMs);
      this.varsWaiter = { resolve: (v) => resolve(v), timer };
      this.send({ t: 'vars' });
    });
  }

  /** Ends a one-shot session after its run; true when clean (the run completed, the guest killed what it started): no search for strays. */
  end(): boolean {
    if (this.dead) return false;
    const clean = !this.persistent && this.lastCompleted;
    this.endedClean = clean;
    this.markDead('the run is over');
    this.guest.kill(clean);
    return clean;
  }

  private lastCompleted = false;
  /** Ended by end() after a clean run: nothing is left to look for when the process exits. */
  private endedClean = false;

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

  private finishExec(exec: GuestRun): void {
    if (exec.finished) return;
    this.lastCompleted = !!exec.completion && !exec.failure;
    exec.endOutput();
    exec.finish();
  }

  private markDead(reason: string): void {
    if (this.dead) return;
    this.dead = true;
    this.deathReason = reason;
    this.jobs.sessionEnded(reason);
    this.checkpoints.ended(reason);
    this.ready?.reject(new Error(`The Python guest could not start: ${reason}`));
    this.ready = undefined;
    if (this.varsWaiter) {
      clearTimeout(this.varsWaiter.timer);
      this.varsWaiter.resolve(null as unknown as VariablesSummary);
      this.varsWaiter = undefined;
    }
    this.died.fire(reason);
  }

  private onExit(code: number | null, sig: NodeJS.Signals | null): void {
    const exec = this.current;
    if (exec && !exec.completion && !exec.failure) {
      exec.failure = crashError(code, sig, exec.out.capture.text('stderr'));
      exec.stateLost = this.persistent;
    }
    const launchError = (this.guest as { launchError?: Error }).launchError;
    if (exec && launchError && !exec.completion) exec.failure = { type: 'LaunchError', message: `Could not start the Python guest: ${launchError.message}` };
    this.markDead(launchError ? `it could not start: ${launchError.message}` : 'its process exited');
    // After a clean end the tree was known empty and is killed already; otherwise look for what is left
    // (a search of every process: milliseconds, worth it only when something may remain).
    if (!this.endedClean) this.guest.kill(!!exec?.completion && !this.persistent);
    this.afterKill();
  }

  private send(frame: HostFrame): void {
    if (frame.t !== 'run' || !this.keepNext) return sendFrame(this.guest.proto, frame);
    sendLine(this.guest.proto, `${this.keepNext()}\n${JSON.stringify(frame)}`);
    this.keepNext = undefined;
  }

  private violation(what: string): void {
    const exec = this.current;
    if (this.dead) return; // frames still on their way from a guest already stopped
    if (exec && !exec.finished) {
      exec.failure = { type: 'ProtocolError', message: `The guest sent ${what}; the run was stopped.` };
      exec.stateLost = this.persistent;
    }
    this.kill(`it sent ${what}`);
  }

  private onFrame(line: string): void {
    const checked = checkFrame<GuestFrame>(line, GUEST_FRAME_FIELDS);
    if ('wrong' in checked) return this.violation(checked.wrong);
    const frame = checked.frame;
    const exec = this.current;
    switch (frame.t) {
      case 'ready':
        if (!this.ready) return this.violation('an unexpected ready frame');
        if (isInt(frame.pid)) this.guest.setReportedPid(frame.pid);
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
        exec.completion = frame.ok === true ? valueCompletion(frame.value ?? null) : { ok: false, error: normaliseError(frame.error) };
        // The run is over once its end token has come through stdout and stderr (a one-shot guest has
        // also killed what it started by now; the host kills the guest itself right after).
        const end: unknown[] = Array.isArray(frame.end) ? frame.end : [];
        this.whenOutputEnded(exec, end[0] === true, end[1] === true);
        return;
      }
      case 'display': {
        // A display from a thread the code left running after its run ended is dropped, not an error.
        if (!exec || exec.completion || frame.run !== exec.runId) return;
        const seq = frame.seq;
        if (!isInt(seq) || seq <= exec.lastDisplaySeq || seq > 1e9) return this.violation('a malformed display frame');
        const marks: unknown[] = Array.isArray(frame.marks) ? frame.marks : [];
        const update = frame.update === true;
        exec.onDisplay(seq, exec.out.take(frame, update), { stdout: marks[0] === true, stderr: marks[1] === true }, update);
        return;
      }
      case 'checkpointed':
      case 'restored': {
        const wrong = this.checkpoints.onFrame(frame);
        return wrong ? this.violation(wrong) : undefined;
      }
      case 'job':
      case 'job_output': {
        const start =
          exec && 'run' in frame && frame.run === exec.runId ? { itemId: exec.itemId, options: exec.options, tools: exec.request.tools !== false } : undefined;
        const wrong = this.jobs.onFrame(frame, start);
        return wrong ? this.violation(wrong) : undefined;
      }
      case 'file': {
        if (!exec || exec.completion || frame.run !== exec.runId) return;
        exec.onFile(frame, this.o.limits, this.o.artifacts);
        return;
      }
      case 'tool_call': {
        if (frame.job !== undefined) {
          const wrong = this.jobs.tools!.onCall(frame);
          return wrong ? this.violation(wrong) : undefined;
        }
        const id = frame.id;
        if (!exec || exec.completion || frame.run !== exec.runId) return this.violation('a tool call for no running code');
        if (!isInt(id) || id <= exec.lastCallId || typeof frame.name !== 'string') return this.violation('a malformed tool call');
        exec.lastCallId = id;
        const args = frame.args === undefined ? {} : frame.args;
        void exec.tools.dispatch(frame.name, args).then((r) => {
          if (exec.finished || this.current !== exec) return;
          // The value is serialised once, by the dispatcher.
          if (r.ok) sendLine(this.guest.proto, `{"t":"tool_result","id":${id},"ok":true,"value":${r.json}}`);
          else this.send({ t: 'tool_result', id, ok: false, error: r.error, ...(r.limit ? { limit: true } : {}) });
        });
        return;
      }
    }
  }

  /** A run is over when its end token has come through stdout and stderr (or could not be written). */
  private whenOutputEnded(exec: GuestRun, stdoutToken: boolean, stderrToken: boolean): void {
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

  private result(exec: GuestRun, error?: ExecutionError): CodeInterpreterCallItem {
    if (!exec.finished) exec.finish();
    const session: SessionInfo | undefined = this.sessionId
      ? { id: this.sessionId, execution: exec.request.execution!, ...(exec.stateLost ? { state_lost: true } : {}) }
      : undefined;
    const item = exec.item(exec.request.code, { runtime: 'local', error, completion: exec.completion, sandbox: this.guest.plan.info });
    if (session) item.session = session;
    if (error) annotateLimit(item, this.guest.plan, this.guest.cgroup);
    // The session's later runs can read this one's whole output (output_of(n)).
    if (this.persistent && this.current === exec && this.alive && !exec.stateLost) {
      this.keepNext = keepFrame(item.outputs, exec.request.execution!);
      const checkpoint = this.checkpoints.afterRun(); // the state for the next run, kept now (with output_of(n))
      if (checkpoint) {
        sendLine(this.guest.proto, `${this.keepNext()}\n${JSON.stringify(checkpoint)}`);
        this.keepNext = undefined;
      }
    }
    return exec.announce(item);
  }
}
