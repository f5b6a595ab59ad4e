/**
 * The private channel between the host and a local guest: JSON frames, one a line, each at most
 * `maxFrameBytes` (the guest's frames are untrusted input: a frame over the cap ends the guest). The
 * frames are typed here as guest/codeact_guest.py's and codeact_zygote.py's docstrings describe them
 * (test/engine/guestFrames.test.ts drives the real guest to check that they match what it sends).
 */
import type { Writable } from 'node:stream';
import type { VariablesSummary } from '../../../common/events';
import { formatBytes } from '../../../common/format';

// ---- the frames ---------------------------------------------------------------------------------

/** A run's caps on rich outputs, as the run frame carries them (displays.ts). */
interface DisplayCaps {
  max_bytes: number;
  max_total: number;
  max_count: number;
  hidpi: boolean;
  /** The pixel cap: the guest downscales no image whose header declares more (it is not decoded). */
  max_pixels: number;
}

interface FileCaps {
  max_bytes: number;
  max_total: number;
  max_count: number;
}

/** What the host sends a guest. */
export type HostFrame =
  | {
      t: 'init';
      subreaper: boolean;
      limits: Record<string, number>;
      max_frame: number;
      max_value: number;
      max_concurrency: number;
      max_output: number;
      jobs: { max: number; max_seconds: number };
    }
  | {
      t: 'run';
      run: number;
      code: string;
      tools: boolean;
      end: string;
      last: boolean;
      display: DisplayCaps;
      files: FileCaps;
      background?: true;
      job_floor?: number;
    }
  | { t: 'tool_result'; id: number; ok: true; value: unknown; job?: number }
  | { t: 'tool_result'; id: number; ok: false; error: string; limit?: true; job?: number }
  | { t: 'vars' }
  | { t: 'keep'; n: number; stdout: string; stderr: string; max_total: number }
  /** Checkpoints of the session's Python state (guest/codeact_checkpoint.py), between runs. */
  | { t: 'checkpoint'; id: string; measure?: true }
  | { t: 'drop'; id: string }
  | { t: 'restore'; id: string; keep: string | null };

/** What a guest sends the host. */
export type GuestFrame =
  /** After init; the pid in the guest's own namespace. */
  | { t: 'ready'; pid: number }
  /** `job`: a background job's call (guest/codeact_jobtools.py; no `run`), answered with the same `job`. */
  | { t: 'tool_call'; run?: number; id: number; name: string; args: unknown; job?: number }
  /** In order with the output: `marks` says which of stdout and stderr carry its marker; seq 1, 2, … per run. */
  | {
      t: 'display';
      run: number;
      seq: number;
      marks: [boolean, boolean];
      data: Record<string, unknown>;
      metadata: Record<string, unknown>;
      result?: true;
      display_id?: string;
      update?: true;
      summary?: string;
    }
  /** A file the run made or changed; `data` (base64) while it fits the caps. */
  | { t: 'file'; run: number; path: string; size: number; data: string | null; note?: string }
  /** The run's result: `value` is the last expression as JSON (ok) or `error` says what was raised; `end`: the end token written to stdout, stderr. */
  | {
      t: 'complete';
      run: number;
      ok: boolean;
      value?: unknown;
      error?: { type: string; message: string; traceback: string; line: number | null };
      end: [boolean, boolean];
      files: number;
    }
  | { t: 'vars'; variables: Array<{ name: string; type: string; summary?: string; shape?: number[]; len?: number }>; total: number }
  /** A background job started (`run`: the execution that started it) or ended (guest/codeact_jobs.py). */
  | {
      t: 'job';
      job: number;
      state: 'running' | 'done' | 'failed' | 'stopped' | 'timed_out';
      run?: number;
      /** The job's process, in the guest's own namespace (a running job): what a Stop from the host would kill. */
      pid?: number;
      seconds?: number;
      value?: string | null;
      error?: { type: string; message: string } | null;
      tail?: string;
      bytes?: number;
      cut?: boolean;
    }
  /** What a running job printed since its last piece; `skipped`: bytes left out just before it (guest/codeact_jobs.py `_Live`). */
  | { t: 'job_output'; job: number; data: string; skipped: number }
  /** A checkpoint was taken (or why not); `held`: every checkpoint kept, oldest first, with its unshared memory in bytes (-1: not read this time). */
  | { t: 'checkpointed'; id: string; ok: boolean; error?: string; ms: number; held: Array<[string, number]> }
  /** From the process that serves the session after a restore (`pid`: its own, in the guest's namespace), or why not. */
  | { t: 'restored'; id: string; ok: boolean; error?: string; pid?: number; kept?: string; held?: Array<[string, number]> };

/** What the host sends the warm zygote (codeact_zygote.py). */
export type ZygoteCommand =
  | { t: 'fork'; token: string; socket: string; ns: boolean; workdir: string; tmp_size: number; seccomp?: string; keep: string[]; env: Record<string, string> }
  | { t: 'signal'; pid: number; sig: number }
  | { t: 'kill'; pid: number };

/** What the warm zygote sends the host. */
export type ZygoteFrame =
  | { t: 'ready'; pid: number; failed: Array<{ module: string; error: string }>; threads: number }
  | { t: 'forked'; token: string; pid: number; ns: boolean }
  | { t: 'fork_failed'; token: string; error: string }
  | { t: 'exited'; pid: number; status: number };

/**
 * A frame as it comes off the wire: its kind is checked ({@link checkFrame}); each other field is untrusted
 * (`unknown`) until the code that reads it checks it.
 */
export type Unchecked<F extends { t: string }> = F extends unknown ? { t: F['t'] } & { [K in Exclude<keyof F, 't'>]?: unknown } : never;

/** The fields of each kind of frame a guest sends, as the union says (the frame-spec test holds the guest to them). */
export const GUEST_FRAME_FIELDS: { readonly [K in GuestFrame['t']]: ReadonlyArray<Exclude<keyof Extract<GuestFrame, { t: K }>, 't'>> } = {
  ready: ['pid'],
  tool_call: ['run', 'id', 'name', 'args', 'job'],
  display: ['run', 'seq', 'marks', 'data', 'metadata', 'result', 'display_id', 'update', 'summary'],
  file: ['run', 'path', 'size', 'data', 'note'],
  complete: ['run', 'ok', 'value', 'error', 'end', 'files'],
  vars: ['variables', 'total'],
  job: ['job', 'state', 'run', 'pid', 'seconds', 'value', 'error', 'tail', 'bytes', 'cut'],
  job_output: ['job', 'data', 'skipped'],
  checkpointed: ['id', 'ok', 'error', 'ms', 'held'],
  restored: ['id', 'ok', 'error', 'pid', 'kept', 'held'],
};

export const ZYGOTE_FRAME_FIELDS: { readonly [K in ZygoteFrame['t']]: ReadonlyArray<Exclude<keyof Extract<ZygoteFrame, { t: K }>, 't'>> } = {
  ready: ['pid', 'failed', 'threads'],
  forked: ['token', 'pid', 'ns'],
  fork_failed: ['token', 'error'],
  exited: ['pid', 'status'],
};

/**
 * The edge: one line of the channel as a frame of a known kind (`kinds`: {@link GUEST_FRAME_FIELDS} or
 * {@link ZYGOTE_FRAME_FIELDS}), or what is wrong with it (a malformed frame, an unknown type); `json`: the line was JSON.
 */
export function checkFrame<F extends { t: string }>(
  line: string,
  kinds: { readonly [K in F['t']]: unknown },
): { frame: Unchecked<F> } | { wrong: string; json: boolean } {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return { wrong: 'a malformed frame', json: false };
  }
  if (raw === null || typeof raw !== 'object') return { wrong: 'a malformed frame', json: true };
  const t = (raw as { t?: unknown }).t;
  if (typeof t !== 'string' || !Object.hasOwn(kinds, t)) return { wrong: `an unknown frame type ${JSON.stringify(String(t)).slice(0, 40)}`, json: true };
  return { frame: raw as Unchecked<F> };
}

/** A whole number, as the frames' counters and ids are. */
export function isInt(v: unknown): v is number {
  return Number.isSafeInteger(v);
}

/** Writes one frame, unless the channel is gone. */
export function sendFrame(proto: Writable, frame: HostFrame | ZygoteCommand): void {
  sendLine(proto, JSON.stringify(frame));
}

/** A frame already serialised (one line of JSON, without its newline). */
export function sendLine(proto: Writable, line: string): void {
  if (proto.destroyed || !proto.writable) return;
  proto.write(line + '\n');
}

interface FrameHandlers {
  frame(line: string): void;
  /** The guest broke the protocol (here: a frame over the cap). */
  violation(what: string): void;
  /** True once no more frames should be read (the guest is dead). */
  stopped(): boolean;
}

/** Splits the protocol channel into lines, holding a partial frame until its newline arrives. */
export class FrameReader {
  private parts: Buffer[] = [];
  private length = 0;

  constructor(
    private readonly max: number,
    private readonly h: FrameHandlers,
  ) {}

  push(chunk: Buffer): void {
    // Once the guest is stopped (a frame broke the protocol, mid-chunk) nothing more is read.
    if (this.h.stopped()) return;
    let start = 0;
    const max = this.max;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      if (this.length + piece.length > max) return this.h.violation(tooLarge(max));
      const line = this.parts.length ? Buffer.concat([...this.parts, piece]).toString('utf8') : piece.toString('utf8');
      this.parts = [];
      this.length = 0;
      this.h.frame(line);
      if (this.h.stopped()) return;
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length) {
      this.length += rest.length;
      if (this.length > max) return this.h.violation(tooLarge(max));
      this.parts.push(Buffer.from(rest));
    }
  }
}

function tooLarge(max: number): string {
  return `a protocol frame over ${formatBytes(max)} (a call_tool argument that large is refused)`;
}

/** The guest's variables frame, checked field by field (it is untrusted input). */
export function normaliseVariables(raw: Unchecked<Extract<GuestFrame, { t: 'vars' }>>): VariablesSummary {
  const list: unknown[] = Array.isArray(raw.variables) ? raw.variables.slice(0, 500) : [];
  const str = (v: unknown, n: number) => (typeof v === 'string' ? v.slice(0, n) : undefined);
  return {
    total: isInt(raw.total) ? raw.total : list.length,
    variables: list
      .filter((v): v is Record<string, unknown> & { name: string } => !!v && typeof (v as { name?: unknown }).name === 'string')
      .map((v) => ({
        name: v.name.slice(0, 200),
        type: str(v.type, 200) ?? '',
        ...(str(v.summary, 300) !== undefined ? { summary: str(v.summary, 300) } : {}),
        ...(Array.isArray(v.shape) && v.shape.every((n: unknown) => isInt(n)) ? { shape: (v.shape as number[]).slice(0, 8) } : {}),
        ...(isInt(v.len) ? { len: v.len } : {}),
      })),
  };
}
