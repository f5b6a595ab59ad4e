/**
 * The local Python guest runtime: one fresh process per execution, protocol on a private pipe (fd 3),
 * stdout/stderr streamed live and capped, tool calls routed concurrently to the host, and the whole
 * process tree gone when the run ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Socket } from 'node:net';
import type { CodeActEvent, CodeInterpreterCallItem, ExecutionError, StreamName } from '../../../common/events';
import { DEFAULT_LIMITS, formatBytes, openExecution, type ExecuteOptions, type ExecuteRequest, type Runtime, type RuntimeLimits } from '../types';
import { resolvePython } from './python';
import { announceDone, executionItem, OutputCapture, ToolDispatcher } from '../execution';
import { createRunCgroup, wrapJoin, type RunCgroup } from './cgroup';
import { killByMarker, killTree } from './processTree';
import { planLaunch, type LaunchPlan, type SandboxOptions } from './sandbox';

export interface LocalRuntimeOptions {
  /** Interpreter command or path; default `python3`. */
  python?: string;
  /** Folder holding codeact_guest.py; defaults to the one shipped next to this module. */
  guestDir?: string;
  limits?: Partial<RuntimeLimits>;
  sandbox?: SandboxOptions;
  /** Largest protocol frame the guest may send (a call_tool's arguments); default 16 MiB. */
  maxFrameBytes?: number;
  /** Receives one-time warnings, such as "running without a sandbox". */
  onWarning?: (message: string) => void;
  /** Whole-tree cgroup limits where they can be created (default true). */
  cgroups?: boolean;
}

const DEFAULT_MAX_FRAME = 16 * 1024 * 1024;

export function newItemId(prefix = 'exec'): string {
  return `${prefix}_${randomBytes(8).toString('hex')}`;
}

export class LocalRuntime implements Runtime {
  readonly kind = 'local' as const;
  private readonly limits: RuntimeLimits;
  private readonly guestDir: string;
  private warned = false;
  private readonly live = new Set<() => void>();

  constructor(private readonly options: LocalRuntimeOptions = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...(options.limits ?? {}) };
    this.guestDir = options.guestDir ?? path.join(__dirname, 'guest');
  }

  async execute(request: ExecuteRequest, options: ExecuteOptions = {}): Promise<CodeInterpreterCallItem> {
    const run = new LocalRun(this, request, options, this.limits);
    this.live.add(run.abort);
    try {
      return await run.start();
    } finally {
      this.live.delete(run.abort);
    }
  }

  /** Builds the launch plan for a run (exposed for the run itself and for diagnostics). */
  async plan(workdir: string, marker: string): Promise<LaunchPlan> {
    const python = await resolvePython(this.options.python ?? 'python3');
    const plan = await planLaunch(python, this.guestDir, workdir, marker, this.options.sandbox);
    if (plan.warning && !this.warned) {
      this.warned = true;
      this.options.onWarning?.(plan.warning);
    }
    return plan;
  }

  get useCgroups(): boolean {
    return this.options.cgroups !== false;
  }

  get maxFrameBytes(): number {
    return this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME;
  }

  async dispose(): Promise<void> {
    for (const abort of [...this.live]) abort();
  }
}

class LocalRun {
  readonly itemId: string;
  private readonly started = performance.now();
  private child?: ChildProcess;
  private plan?: LaunchPlan;
  private cgroup?: RunCgroup;
  private proto?: Socket;
  private workdir?: string;
  private readonly marker = randomBytes(12).toString('hex');
  private readonly output: OutputCapture;
  private frameBuf: Buffer[] = [];
  private frameLen = 0;
  private completion?: { ok: true; value: unknown } | { ok: false; error: ExecutionError };
  private failure?: ExecutionError;
  private readonly toolAbort = new AbortController();
  private lastCallId = 0;
  private readonly tools: ToolDispatcher;
  private finished = false;
  private finish!: () => void;
  private readonly done = new Promise<void>((r) => (this.finish = r));
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly runtime: LocalRuntime,
    private readonly request: ExecuteRequest,
    private readonly options: ExecuteOptions,
    private readonly limits: RuntimeLimits,
  ) {
    this.itemId = request.itemId ?? newItemId();
    this.output = new OutputCapture(limits.maxOutputBytes);
    this.tools = new ToolDispatcher({
      itemId: this.itemId,
      emit: (e) => this.emit(e),
      handler: options.onToolCall,
      enabled: request.tools !== false,
      maxConcurrent: limits.maxConcurrentToolCalls,
      signal: this.toolAbort.signal,
    });
  }

  private emit(event: CodeActEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // A consumer's bug must not break the run.
    }
  }

  readonly abort = (): void => {
    this.fail({ type: 'Cancelled', message: 'The run was stopped.' });
  };

  async start(): Promise<CodeInterpreterCallItem> {
    const signal = this.options.signal;
    const refused = openExecution((e) => this.emit(e), this.request, this.itemId, 'local', this.limits, signal);
    if (refused) return this.result(refused);
    const onAbort = () => this.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      this.workdir = mkdtempSync(path.join(tmpdir(), 'codeact-run-'));
      try {
        this.plan = await this.runtime.plan(this.workdir, this.marker);
      } catch (err) {
        this.failure = { type: (err as Error).name || 'LaunchError', message: (err as Error).message };
        return this.result(this.failure);
      }
      if (this.failure) return this.result(this.failure);
      this.launch(this.plan);
      const timeoutMs = this.request.timeoutMs ?? this.limits.timeoutMs;
      this.timer = setTimeout(() => {
        this.fail({
          type: 'Timeout',
          message: `The code ran longer than the ${formatSeconds(timeoutMs)} timeout and was stopped` +
            (this.tools.inFlight ? `, with ${this.tools.inFlight} tool call(s) still in flight` : '') +
            '. Make it faster, or raise the timeout (CLI: --timeout SECONDS; settings: codeact.timeoutSeconds).',
        });
      }, timeoutMs);
      await this.done;
      return this.result(this.failure ?? (this.completion && !this.completion.ok ? this.completion.error : undefined));
    } finally {
      signal?.removeEventListener('abort', onAbort);
      clearTimeout(this.timer);
      this.toolAbort.abort();
      this.cgroup?.remove();
      if (this.workdir) rmSync(this.workdir, { recursive: true, force: true, maxRetries: 3 });
    }
  }

  private launch(plan: LaunchPlan): void {
    // Sandboxed runs get a pids cgroup where one can be made (root, or a delegated subtree): RLIMIT_NPROC
    // does not bind root, so without it a fork bomb would run until the timeout. Joining a cgroup costs a
    // migration (~15 ms on cgroup v1), so only the process count, which rlimits cannot cap for root, is
    // capped this way; memory stays a per-process RLIMIT_AS.
    this.cgroup = this.runtime.useCgroups && plan.pidNamespace ? createRunCgroup(`run-${this.marker}`, { pidsMax: plan.treeLimits.pids }) : undefined;
    const { command, args } = wrapJoin(plan.command, plan.args, this.cgroup?.procsFiles ?? []);
    if (this.cgroup) plan.info.limits = { ...plan.info.limits, scope: 'process tree (cgroup)' };
    const child = spawn(command, args, {
      cwd: plan.cwd,
      env: this.cgroup ? { ...plan.env, CODEACT_CGROUPS: this.cgroup.procsFiles.join(' ') } : plan.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    child.on('error', (err) => {
      this.failure ??= { type: 'LaunchError', message: `Could not start the Python guest: ${err.message}` };
      this.teardown();
    });
    child.stdout!.on('data', (b: Buffer) => this.onOutput('stdout', b));
    child.stderr!.on('data', (b: Buffer) => this.onOutput('stderr', b));
    child.stdout!.on('error', () => {});
    child.stderr!.on('error', () => {});
    const proto = child.stdio[3] as Socket;
    this.proto = proto;
    proto.on('data', (b: Buffer) => this.onProtocolData(b));
    proto.on('error', () => {});
    child.on('exit', (code, sig) => this.onExit(code, sig));
    this.send({
      t: 'run',
      code: this.request.code,
      tools: this.request.tools !== false,
      max_concurrency: this.limits.maxConcurrentToolCalls,
      max_frame: this.runtime.maxFrameBytes,
      subreaper: !plan.pidNamespace,
      limits: plan.rlimits,
    });
  }

  private send(frame: unknown): void {
    const proto = this.proto;
    if (!proto || proto.destroyed || !proto.writable) return;
    proto.write(JSON.stringify(frame) + '\n');
  }

  private onOutput(stream: StreamName, chunk: Buffer): void {
    const text = this.output.pushBytes(stream, chunk);
    if (text) this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream, delta: text });
  }

  private onProtocolData(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      if (this.frameLen + piece.length > this.runtime.maxFrameBytes) return this.violation('a protocol frame over the size limit');
      this.frameBuf.push(piece);
      const line = Buffer.concat(this.frameBuf).toString('utf8');
      this.frameBuf = [];
      this.frameLen = 0;
      this.onFrame(line);
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length) {
      this.frameLen += rest.length;
      if (this.frameLen > this.runtime.maxFrameBytes) {
        return this.violation(`a protocol frame over ${formatBytes(this.runtime.maxFrameBytes)} (a call_tool argument that large is refused)`);
      }
      this.frameBuf.push(Buffer.from(rest));
    }
  }

  private violation(what: string): void {
    this.fail({ type: 'ProtocolError', message: `The guest sent ${what}; the run was stopped.` });
  }

  private onFrame(line: string): void {
    if (this.finished || this.completion) return this.violation('a frame after its result');
    let frame: any;
    try {
      frame = JSON.parse(line);
    } catch {
      return this.violation('a malformed frame');
    }
    if (frame === null || typeof frame !== 'object') return this.violation('a malformed frame');
    if (frame.t === 'complete') {
      if (frame.ok === true) this.completion = { ok: true, value: frame.value ?? null };
      else this.completion = { ok: false, error: normaliseError(frame.error) };
      return;
    }
    if (frame.t === 'tool_call') {
      const id = frame.id;
      if (!Number.isSafeInteger(id) || id <= this.lastCallId || typeof frame.name !== 'string') return this.violation('a malformed tool call');
      this.lastCallId = id;
      const args = frame.args === undefined ? {} : frame.args;
      void this.tools.dispatch(frame.name, args).then((r) => this.send(r.ok ? { t: 'tool_result', id, ok: true, value: r.value } : { t: 'tool_result', id, ok: false, error: r.error }));
      return;
    }
    this.violation(`an unknown frame type ${JSON.stringify(String(frame.t)).slice(0, 40)}`);
  }

  private fail(error: ExecutionError): void {
    if (this.finished) return;
    this.failure ??= error;
    this.teardown();
  }

  private onExit(code: number | null, sig: NodeJS.Signals | null): void {
    if (!this.completion && !this.failure) {
      this.failure = crashError(code, sig, this.output.text('stderr'));
    }
    this.teardown(code ?? undefined);
  }

  private teardown(_exitCode?: number): void {
    if (this.finished) return;
    this.finished = true;
    this.toolAbort.abort();
    const child = this.child;
    if (child?.pid) {
      if (this.plan?.pidNamespace) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {}
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {}
      } else if (this.completion) {
        // The guest (a child subreaper) killed its own descendants before it reported.
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {}
      } else {
        // It did not get that far (a crash, a timeout, a Stop, os._exit): freeze and kill the tree,
        // then anything that still carries the run's marker.
        killTree(child.pid);
        killByMarker('CODEACT_RUN', this.marker);
      }
    }
    if (!child) return this.finish();
    // Wait for the output pipes to drain (they close once every process holding them is gone), but
    // never hang on a straggler: destroy them after a short grace.
    const pipes = [child.stdout, child.stderr].filter((p) => p && !p.destroyed && !p.readableEnded);
    let open = pipes.length;
    const grace = setTimeout(() => {
      for (const p of pipes) p!.destroy();
      done();
    }, 1000);
    const done = () => {
      clearTimeout(grace);
      this.proto?.destroy();
      for (const name of ['stdout', 'stderr'] as const) {
        const tail = this.output.end(name);
        if (tail) this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream: name, delta: tail });
      }
      this.finish();
    };
    if (!open) return done();
    for (const p of pipes) {
      p!.once('close', () => {
        if (--open === 0) done();
      });
    }
  }

  private result(error?: ExecutionError): CodeInterpreterCallItem {
    const item = executionItem({
      itemId: this.itemId,
      code: this.request.code,
      runtime: 'local',
      outputs: this.output.outputs(),
      error,
      value: this.completion?.ok ? this.completion.value : null,
      startedAt: this.started,
      truncated: this.output.truncated,
      sandbox: this.plan?.info,
    });
    if (error) annotateLimit(item, this.plan, this.cgroup);
    return announceDone((e) => this.emit(e), item);
  }
}

function normaliseError(raw: any): ExecutionError {
  if (!raw || typeof raw !== 'object') return { type: 'Error', message: 'The code failed.' };
  return {
    type: typeof raw.type === 'string' ? raw.type : 'Error',
    message: typeof raw.message === 'string' ? raw.message : String(raw.message ?? ''),
    ...(typeof raw.traceback === 'string' && raw.traceback ? { traceback: raw.traceback } : {}),
    ...(Number.isSafeInteger(raw.line) ? { line: raw.line } : {}),
  };
}

const SIGNAL_TEXT: Partial<Record<NodeJS.Signals, string>> = {
  SIGSEGV: 'a segmentation fault (often a C stack overflow from very deep recursion)',
  SIGABRT: 'an abort',
  SIGKILL: 'SIGKILL',
  SIGXCPU: 'the CPU time limit',
  SIGBUS: 'a bus error',
};

function crashError(code: number | null, sig: NodeJS.Signals | null, stderr: string): ExecutionError {
  const tail = stderr.trim().split('\n').slice(-5).join('\n');
  if (sig) {
    return {
      type: 'Crash',
      message: `The Python process died from ${SIGNAL_TEXT[sig] ?? sig} before returning a result.` + (tail ? `\n${tail}` : ''),
    };
  }
  // bubblewrap reports its child's death by signal as 128 + n.
  if (code !== null && code > 128 && code < 160) {
    const name = signalName(code - 128);
    return { type: 'Crash', message: `The Python process died from ${(name && SIGNAL_TEXT[name]) ?? name ?? `signal ${code - 128}`} before returning a result.` + (tail ? `\n${tail}` : '') };
  }
  return {
    type: 'Crash',
    message: `The Python process exited with code ${code} before returning a result (the code may have called os._exit or closed the host pipe).` + (tail ? `\n${tail}` : ''),
  };
}

function signalName(n: number): NodeJS.Signals | undefined {
  const table: Record<number, NodeJS.Signals> = { 6: 'SIGABRT', 7: 'SIGBUS', 9: 'SIGKILL', 11: 'SIGSEGV', 15: 'SIGTERM', 24: 'SIGXCPU', 25: 'SIGXFSZ' };
  return table[n];
}

/** Names a resource limit that was hit, instead of a bare crash. */
function annotateLimit(item: CodeInterpreterCallItem, plan?: LaunchPlan, cgroup?: RunCgroup): void {
  const err = item.error;
  if (!err || !plan) return;
  const limits = plan.info.limits ?? {};
  const tb = `${err.message}\n${err.traceback ?? ''}`;
  if (err.type === 'MemoryError' || (err.type === 'Crash' && cgroup?.memoryExceeded())) {
    err.message = `memory limit ${limits.memory} exceeded (MemoryError). Use less memory or raise codeact.sandbox.limits.memory.`;
  } else if (/Errno 27\]|File too large/.test(tb)) {
    err.message = `file size limit ${limits.fileSize} exceeded: ${err.message}. Write smaller files or raise codeact.sandbox.limits.fileSize.`;
  } else if (err.type === 'Crash' && /CPU time limit|SIGXCPU/.test(err.message)) {
    err.message = `CPU time limit ${limits.cpuSeconds} s exceeded. ${err.message}`;
  } else if ((/Errno 11\]|Resource temporarily unavailable/.test(tb) && /fork|spawn|Popen|thread/i.test(tb)) || cgroup?.pidsExceeded()) {
    err.message = `process limit reached (${limits.processes ?? 'the system limit'} processes): ${err.message}`;
  } else if (/Errno 24\]|Too many open files/.test(tb)) {
    err.message = `open file limit ${limits.openFiles} reached: ${err.message}`;
  }
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
