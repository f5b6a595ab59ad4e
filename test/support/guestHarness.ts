/**
 * Drives the REAL local guest (codeact_guest.py and the library, from guestDir()) at the frame level,
 * without the host runtime: a Python process with the protocol channel on fd 3, init, then run frames;
 * each run's frames (display, file, complete) and its stdout and stderr up to the run's end token.
 * For the guest's own tests (the display and files protocol) and the bench.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import { guestDir } from '../../src/core/runtime/guest/sources';

/** Debian's interpreter, which has matplotlib, pandas, Pillow and IPython. */
export const DEBIAN_PYTHON = '/usr/bin/python3';

export interface GuestFrame {
  t: string;
  [key: string]: any;
}

export interface RunOutcome {
  /** Every frame of the run, in arrival order, the "complete" frame last. */
  frames: GuestFrame[];
  displays: GuestFrame[];
  files: GuestFrame[];
  complete: GuestFrame;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  display?: Record<string, unknown>;
  files?: Record<string, unknown>;
  last?: boolean;
  /** `call_tool` defined in the run (default false; the test answers each tool_call with {@link GuestHarness.send}). */
  tools?: boolean;
  timeoutMs?: number;
  /** A background job of the session (codeact_jobs.py): the run returns its handle at once. */
  background?: boolean;
}

export interface HarnessOptions {
  python?: string;
  /** The guest's working directory (default: a new empty temporary folder, removed on close). */
  cwd?: string;
  env?: Record<string, string>;
  maxFrameBytes?: number;
  /** A complete launch (a sandbox's command line) instead of the plain interpreter. */
  launch?: { command: string; args: string[]; env: Record<string, string>; cwd: string };
}

/** The command line the host uses: the library from its private folder, never from sys.path. */
export function guestArgs(dir: string): string[] {
  const boot = `import sys;sys.path[:]=[p for p in sys.path if p not in ("", ".")];sys.path.insert(0,${JSON.stringify(dir)});import codeact_guest;codeact_guest.run()`;
  return ['-I', '-c', boot];
}

/** The text of a stream without the run's markers, and the order of text and displays on it. */
export function timeline(text: string, end: string): Array<string | number> {
  const out: Array<string | number> = [];
  const re = new RegExp(`\\u0000codeact-display:${end}:(\\d+)\\u0000`, 'g');
  let at = 0;
  for (const m of text.matchAll(re)) {
    if (m.index! > at) out.push(text.slice(at, m.index));
    out.push(Number(m[1]));
    at = m.index! + m[0].length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** A stream's text with every display marker taken out. */
export function plain(text: string): string {
  return text.replace(/\u0000codeact-display:[A-Za-z0-9]+:\d+\u0000/g, '');
}

export class GuestHarness {
  readonly child: ChildProcess;
  readonly cwd: string;
  private readonly ownCwd: boolean;
  private readonly proto: Duplex;
  private buf = '';
  private out = Buffer.alloc(0);
  private err = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  private frames: GuestFrame[] = [];
  /** Every frame the guest sent, in arrival order (none taken out). */
  readonly received: GuestFrame[] = [];
  private runs = 0;
  private exited = false;

  constructor(o: HarnessOptions = {}) {
    this.ownCwd = !o.cwd && !o.launch;
    this.cwd = o.launch?.cwd ?? o.cwd ?? mkdtempSync(path.join(tmpdir(), 'codeact-guest-test-'));
    const env = o.launch?.env ?? { PATH: '/usr/bin:/bin', HOME: this.cwd, TMPDIR: this.cwd, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', ...(o.env ?? {}) };
    const command = o.launch?.command ?? o.python ?? DEBIAN_PYTHON;
    const args = o.launch?.args ?? guestArgs(guestDir());
    this.child = spawn(command, args, { cwd: this.cwd, env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    this.proto = this.child.stdio[3] as Duplex;
    this.proto.on('data', (b: Buffer) => this.onProto(b));
    this.child.stdout!.on('data', (b: Buffer) => ((this.out = Buffer.concat([this.out, b])), this.wake()));
    this.child.stderr!.on('data', (b: Buffer) => ((this.err = Buffer.concat([this.err, b])), this.wake()));
    this.child.on('exit', () => ((this.exited = true), this.wake()));
    for (const s of [this.proto, this.child.stdout!, this.child.stderr!]) s.on('error', () => {});
    this.send({ t: 'init', max_frame: o.maxFrameBytes ?? 16 << 20, max_output: 1 << 20, max_concurrency: 8, jobs: { max: 2, max_seconds: 600 } });
  }

  private onProto(b: Buffer): void {
    const lines = (this.buf + b.toString('utf8')).split('\n');
    this.buf = lines.pop()!;
    for (const line of lines) {
      const frame = JSON.parse(line);
      this.frames.push(frame);
      this.received.push(frame);
    }
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private until<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`guest harness: timed out waiting for ${what}; stderr: ${this.err.toString('utf8').slice(-2000)}`)),
        timeoutMs,
      );
      const test = () => {
        const v = check();
        if (v !== undefined) {
          clearTimeout(timer);
          return resolve(v);
        }
        if (this.exited) {
          clearTimeout(timer);
          return reject(new Error(`guest harness: the guest exited while waiting for ${what}; stderr: ${this.err.toString('utf8').slice(-2000)}`));
        }
        this.waiters.push(test);
      };
      test();
    });
  }

  /** Resolves with the first frame that matches, once it came. */
  frame(match: (f: GuestFrame) => boolean, timeoutMs = 30_000): Promise<GuestFrame> {
    return this.until(() => this.received.find(match), timeoutMs, 'a frame');
  }

  send(frame: unknown): void {
    this.proto.write(JSON.stringify(frame) + '\n');
  }

  async ready(timeoutMs = 30_000): Promise<GuestFrame> {
    return this.until(() => this.frames.find((f) => f.t === 'ready'), timeoutMs, 'ready');
  }

  /** Resolves once stdout holds `text` (a barrier the code under test sets). */
  async stdoutHas(text: string, timeoutMs = 60_000): Promise<void> {
    await this.until(() => (this.out.toString('utf8').includes(text) ? true : undefined), timeoutMs, JSON.stringify(text));
  }

  /** SIGINT to the guest (Stop). */
  interrupt(): void {
    this.child.kill('SIGINT');
  }

  /** One run: its frames, and its stdout and stderr up to its end token (markers kept). */
  run(code: string, o: RunOptions = {}): Promise<RunOutcome & { end: string }> {
    return this.start(code, o).then((started) => started.done);
  }

  /** Sends a run; `done` settles with it (meanwhile the test can interrupt it). */
  async start(code: string, o: RunOptions = {}): Promise<{ done: Promise<RunOutcome & { end: string }> }> {
    await this.ready();
    return { done: this.collect(code, o) };
  }

  private async collect(code: string, o: RunOptions): Promise<RunOutcome & { end: string }> {
    const run = ++this.runs;
    const end = `E${run}x${Math.random().toString(36).slice(2, 10)}`;
    const token = `\u0000codeact-end:${end}\u0000`;
    const frame: Record<string, unknown> = { t: 'run', run, code, tools: o.tools ?? false, end, last: o.last ?? false };
    if (o.display) frame.display = o.display;
    if (o.files) frame.files = o.files;
    if (o.background) frame.background = true;
    this.send(frame);
    const complete = await this.until(() => this.frames.find((f) => f.t === 'complete' && f.run === run), o.timeoutMs ?? 60_000, `run ${run}`);
    const cut = (b: Buffer, wrote: boolean) => {
      const text = b.toString('utf8');
      const at = text.indexOf(token);
      return wrote ? (at >= 0 ? [text.slice(0, at), text.slice(at + token.length)] : undefined) : [text, ''];
    };
    const [stdout, stderr] = await this.until(
      () => {
        const o1 = cut(this.out, complete.end?.[0] === true);
        const o2 = cut(this.err, complete.end?.[1] === true);
        return o1 && o2 ? [o1, o2] : undefined;
      },
      10_000,
      `the end token of run ${run}`,
    );
    this.out = Buffer.from(stdout[1], 'utf8');
    this.err = Buffer.from(stderr[1], 'utf8');
    const frames = this.frames.filter((f) => f.run === run);
    this.frames = this.frames.filter((f) => f.run !== run);
    return {
      frames,
      displays: frames.filter((f) => f.t === 'display'),
      files: frames.filter((f) => f.t === 'file'),
      complete,
      stdout: stdout[0],
      stderr: stderr[0],
      end,
    };
  }

  /** The variables view (a "vars" frame), between runs. */
  async vars(): Promise<GuestFrame> {
    this.send({ t: 'vars' });
    const frame = await this.until(() => this.frames.find((f) => f.t === 'vars'), 10_000, 'vars');
    this.frames = this.frames.filter((f) => f !== frame);
    return frame;
  }

  async close(): Promise<void> {
    if (!this.exited) {
      this.proto.end();
      this.child.kill('SIGKILL');
      await this.until(() => (this.exited ? true : undefined), 10_000, 'exit').catch(() => {});
    }
    if (this.ownCwd) rmSync(this.cwd, { recursive: true, force: true });
  }
}

/** A started, ready guest. */
export async function startGuest(o: HarnessOptions = {}): Promise<GuestHarness> {
  const g = new GuestHarness(o);
  await g.ready();
  return g;
}
