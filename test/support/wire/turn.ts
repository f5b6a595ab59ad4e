/**
 * Provider-neutral scripted model turns for the loopback wire servers. A test says what the model
 * does, each server renders it in its provider's exact streaming format:
 *
 *   server.push(turn().call('execute_tool_code', { code: 'print(1)' }));
 *   server.push(turn().text('The answer is 1.'));
 *
 * Faults are queued the same way (`fault.status(429, {retryAfter: 1})`, `fault.cut(turn, 3)`…).
 */

export interface TextStep {
  kind: 'text';
  text: string;
  thinking?: boolean;
  /** Exact delta pieces (default: `chunkSize` pieces, default 4 UTF-16 units). */
  chunks?: string[];
  chunkSize?: number;
  /** OpenAI: container_file_citation annotations on this message. */
  citations?: { file_id: string; filename: string; container_id?: string; start_index?: number; end_index?: number }[];
  /** Gemini: a thoughtSignature on the first part. Anthropic thinking: the signature. */
  signature?: string;
}

export interface CallStep {
  kind: 'call';
  name: string;
  /** The arguments JSON text. */
  args: string;
  id?: string;
  chunks?: string[];
  chunkSize?: number;
  /** Gemini: thoughtSignature on the functionCall part. */
  signature?: string;
}

export interface CodeStep {
  kind: 'code';
  code: string;
  stdout?: string;
  stderr?: string;
  exitCode?: number;
  /** Base64 PNG data of images the code produced. */
  images?: string[];
  /** Files the code produced (Anthropic output file ids; OpenAI `files` outputs). */
  files?: { id: string; filename?: string; mime_type?: string }[];
  id?: string;
  /** Pieces of the code (OpenAI) or of the input JSON text (Anthropic `partial_json`). */
  chunks?: string[];
  chunkSize?: number;
  /** Anthropic: a tool error code instead of a result (`execution_time_exceeded`…). */
  toolError?: string;
  /** Gemini: outcome (default from exitCode: 0 -> OUTCOME_OK, otherwise OUTCOME_FAILED). */
  outcome?: string;
  /** Gemini: the parts are thinking-phase parts. */
  thought?: boolean;
  signature?: string;
}

export interface EditorStep {
  kind: 'editor';
  /** `view` | `create` | `str_replace`. */
  command: string;
  path: string;
  input?: Record<string, unknown>;
  /** The result block content (without `type`). */
  result?: Record<string, unknown>;
  error?: { code: string; message?: string | null };
  id?: string;
}

export interface RawPartStep {
  kind: 'raw';
  /** A provider-specific payload (Anthropic content block, Gemini part, OpenAI output item). */
  data: Record<string, unknown>;
}

export type Step = TextStep | CallStep | CodeStep | EditorStep | RawPartStep;

export interface TurnOptions {
  /** `cached`: of the input, read from the prompt cache (each provider's own field). */
  usage?: { input: number; output: number; cached?: number };
  /** Provider stop reason to send (default derived from the steps). */
  stop?: string;
  /** Response id (OpenAI `resp_…`, Anthropic `msg_…`, Gemini `responseId`). */
  id?: string;
  /** Container id to report (OpenAI container_id, Anthropic message_delta.container). */
  container?: string;
  /** Anthropic: pad the data JSON with spaces like the real API. */
  pad?: boolean;
  /** Gemini: also put finishReason STOP on an early chunk (the real API does). */
  midStreamStop?: boolean;
  /** Write the body in pieces of this many bytes (splits UTF-8 sequences and events). */
  chunkBytes?: number;
  model?: string;
}

export class ScriptTurn {
  readonly kind = 'turn' as const;
  readonly steps: Step[] = [];
  readonly opts: TurnOptions = {};

  text(text: string, o: Omit<TextStep, 'kind' | 'text'> = {}): this {
    this.steps.push({ kind: 'text', text, ...o });
    return this;
  }

  thinking(text: string, o: Omit<TextStep, 'kind' | 'text' | 'thinking'> = {}): this {
    this.steps.push({ kind: 'text', text, thinking: true, ...o });
    return this;
  }

  call(name: string, args: unknown, o: Omit<CallStep, 'kind' | 'name' | 'args'> = {}): this {
    this.steps.push({ kind: 'call', name, args: typeof args === 'string' ? args : JSON.stringify(args), ...o });
    return this;
  }

  code(o: Omit<CodeStep, 'kind'>): this {
    this.steps.push({ kind: 'code', ...o });
    return this;
  }

  editor(o: Omit<EditorStep, 'kind'>): this {
    this.steps.push({ kind: 'editor', ...o });
    return this;
  }

  raw(data: Record<string, unknown>): this {
    this.steps.push({ kind: 'raw', data });
    return this;
  }

  with(o: TurnOptions): this {
    Object.assign(this.opts, o);
    return this;
  }
}

export function turn(): ScriptTurn {
  return new ScriptTurn();
}

// ---- faults and raw responses -------------------------------------------------------------------

export interface StatusFault {
  kind: 'status';
  status: number;
  message?: string;
  /** Provider error type/code (`rate_limit_error`, `invalid_api_key`…); defaults per status. */
  code?: string;
  /** Seconds, sent as `retry-after`. */
  retryAfter?: number;
}

/** Serves the turn's frames up to `afterFrames`, then half of the next frame, then destroys the socket. */
export interface CutFault {
  kind: 'cut';
  turn: ScriptTurn;
  afterFrames: number;
}

/** Serves the turn with frame `atFrame` replaced by one whose JSON is broken. */
export interface MalformedFault {
  kind: 'malformed';
  turn: ScriptTurn;
  atFrame: number;
}

/** Starts a text answer and keeps streaming deltas until the client goes away. */
export interface EndlessFault {
  kind: 'endless';
  intervalMs: number;
}

/** A mid-stream error event in the provider's format (Anthropic `event: error`, OpenAI `error`/`response.failed`). */
export interface StreamErrorFault {
  kind: 'stream_error';
  turn: ScriptTurn;
  afterFrames: number;
  errorType: string;
  message: string;
}

/**
 * A server that goes silent and keeps the connection open until the client goes away: with `headers`,
 * after the status line, the headers and the turn's first `afterFrames` frames; without, before sending
 * anything at all (not even the status line).
 */
export interface StallFault {
  kind: 'stall';
  headers: boolean;
  turn?: ScriptTurn;
  afterFrames: number;
  /** A raw body prefix (part of a recorded body) sent instead of the turn's frames, with the recording's headers. */
  raw?: { body: string; headers: Record<string, string> };
}

/** Serves the turn's first `afterFrames` frames and ends the body cleanly: a stream without its final event(s). */
export interface EndEarlyFault {
  kind: 'end_early';
  turn: ScriptTurn;
  afterFrames: number;
}

/**
 * Serves the turn with a pause of `ms` after frame `afterFrames`, during which `keepAlive` (a ping event,
 * an SSE comment) is sent every `everyMs` when given.
 */
export interface PauseStep {
  kind: 'pause';
  turn: ScriptTurn;
  afterFrames: number;
  ms: number;
  keepAlive?: { frame: string; everyMs: number };
}

/** A body served as-is (a recorded cassette body). */
export interface RawResponse {
  kind: 'replay';
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
  chunkBytes?: number;
}

export type WireStep =
  ScriptTurn | StatusFault | CutFault | MalformedFault | EndlessFault | StreamErrorFault | StallFault | EndEarlyFault | PauseStep | RawResponse;

export const fault = {
  status(status: number, o: Omit<StatusFault, 'kind' | 'status'> = {}): StatusFault {
    return { kind: 'status', status, ...o };
  },
  cut(t: ScriptTurn, afterFrames: number): CutFault {
    return { kind: 'cut', turn: t, afterFrames };
  },
  malformed(t: ScriptTurn, atFrame: number): MalformedFault {
    return { kind: 'malformed', turn: t, atFrame };
  },
  endless(intervalMs = 20): EndlessFault {
    return { kind: 'endless', intervalMs };
  },
  streamError(t: ScriptTurn, afterFrames: number, errorType: string, message: string): StreamErrorFault {
    return { kind: 'stream_error', turn: t, afterFrames, errorType, message };
  },
  /** No response at all: the request is read, then nothing is sent. */
  noResponse(): StallFault {
    return { kind: 'stall', headers: false, afterFrames: 0 };
  },
  /** The status line and headers, then silence (`t`'s first `afterFrames` frames before it, when given). */
  silence(t?: ScriptTurn, afterFrames = 0): StallFault {
    return { kind: 'stall', headers: true, turn: t, afterFrames };
  },
  /** A recorded body's first `bytes` bytes with its headers, then silence. */
  silenceAfterRaw(r: RawResponse, bytes: number): StallFault {
    const body = typeof r.body === 'string' ? r.body : r.body.toString('utf8');
    return { kind: 'stall', headers: true, afterFrames: 0, raw: { body: body.slice(0, bytes), headers: r.headers } };
  },
  endEarly(t: ScriptTurn, afterFrames: number): EndEarlyFault {
    return { kind: 'end_early', turn: t, afterFrames };
  },
  pause(t: ScriptTurn, afterFrames: number, ms: number, keepAlive?: { frame: string; everyMs: number }): PauseStep {
    return { kind: 'pause', turn: t, afterFrames, ms, keepAlive };
  },
};

export function replay(body: string | Buffer, o: { status?: number; headers?: Record<string, string>; chunkBytes?: number } = {}): RawResponse {
  return { kind: 'replay', status: o.status ?? 200, headers: o.headers ?? {}, body, chunkBytes: o.chunkBytes };
}

/** Splits text into pieces of `size` UTF-16 units (may split surrogate pairs on purpose). */
export function splitText(text: string, size = 4): string[] {
  if (text === '') return [];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

export function piecesOf(text: string, step: { chunks?: string[]; chunkSize?: number }): string[] {
  if (step.chunks) {
    if (step.chunks.join('') !== text) throw new Error(`scripted chunks do not add up to the text: ${JSON.stringify(step.chunks)}`);
    return step.chunks;
  }
  return splitText(text, step.chunkSize ?? 4);
}

let counter = 0;
/** Deterministic-looking ids for scripted turns. */
export function fakeId(prefix: string, len = 24): string {
  counter++;
  const base = `${counter.toString(36)}${'x7k2m9q4w8z1c5v3b6n0p'.repeat(3)}`;
  return `${prefix}${base.slice(0, len)}`;
}
