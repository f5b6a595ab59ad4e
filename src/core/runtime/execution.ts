/**
 * The parts of an execution that every runtime shares: the opening (events and the checks that refuse a
 * run), capturing stdout and stderr under a byte cap (with the visible truncation marker), the errors a run
 * reports alike (Stop, timeout, the code's own), and building and announcing the finished item.
 */
import { StringDecoder } from 'node:string_decoder';
import type {
  CodeActEvent,
  CodeInterpreterCallItem,
  CodeOutput,
  DisplayOutput,
  ExecutionError,
  FileOutput,
  RuntimeKind,
  SandboxInfo,
  StreamName,
} from '../../common/events';
import { formatBytes, formatDuration } from '../../common/format';
import { MAX_VALUE_DEPTH, measureShape } from '../../common/jsonShape';
import type { ExecuteOptions, ExecuteRequest, RuntimeLimits } from './types';
import { errorCategory } from '../util/errors';
import { newId } from '../util/ids';

/**
 * The opening of every execution, shared by the runtimes: `in_progress` and the code (unless the caller
 * already streamed it), `code.done`, then the checks that refuse a run before anything starts. Returns the
 * error that refuses it, if any; otherwise emits `interpreting`.
 */
export function openExecution(
  emit: (event: CodeActEvent) => void,
  request: ExecuteRequest,
  itemId: string,
  runtime: RuntimeKind,
  limits: RuntimeLimits,
  signal?: AbortSignal,
): ExecutionError | undefined {
  const { code } = request;
  if (!request.announced) {
    emit({ type: 'response.code_interpreter_call.in_progress', item_id: itemId, runtime });
    emit({ type: 'response.code_interpreter_call_code.delta', item_id: itemId, delta: code });
  }
  emit({ type: 'response.code_interpreter_call_code.done', item_id: itemId, code });
  const size = Buffer.byteLength(code, 'utf8');
  if (size > limits.maxSourceBytes) {
    return {
      type: 'SourceTooLarge',
      message: `The code is ${size.toLocaleString('en-US')} bytes; the limit is ${formatBytes(limits.maxSourceBytes)}. Split the work into smaller steps.`,
    };
  }
  if (signal?.aborted) return cancelledError(true);
  emit({ type: 'response.code_interpreter_call.interpreting', item_id: itemId });
  return undefined;
}

/** The events of a run go to the caller's listener; a consumer's bug must not break the run. */
export function safeEmit(onEvent?: (event: CodeActEvent) => void): (event: CodeActEvent) => void {
  return (event) => {
    try {
      onEvent?.(event);
    } catch {
      // A consumer's bug must not break the run.
    }
  };
}

/** How the code ended, as its guest or kernel reported it. */
export type Completion = { ok: true; value: unknown } | { ok: false; error: ExecutionError };

/** Is `value` nested deeper than {@link MAX_VALUE_DEPTH}? (An iterative walk: any depth is safe to ask about.) */
export function tooDeep(value: unknown): boolean {
  return measureShape(value, { maxDepth: MAX_VALUE_DEPTH, maxKeys: Infinity, maxBytes: Infinity }).problem !== undefined;
}

/**
 * The value a guest or kernel reported, as the host accepts it: nested at most {@link MAX_VALUE_DEPTH} levels
 * (the guest libraries check it first; a forged frame is checked here), so nothing downstream (the item's
 * JSON, the transcript, the panel, the CLI) walks a deeper one.
 */
export function valueCompletion(value: unknown): Completion {
  if (!tooDeep(value)) return { ok: true, value };
  return { ok: false, error: { type: 'ReturnValueError', message: DEEP_VALUE_MESSAGE } };
}

/** The guest libraries say the same (codeact_values.py). */
const DEEP_VALUE_MESSAGE =
  `The return value is nested deeper than ${MAX_VALUE_DEPTH} levels (lists and dicts inside one another); the limit is ${MAX_VALUE_DEPTH}. ` +
  'Return a flatter value: a summary, the first levels, or a file path.';

/** The code's own error, when it reported one. */
export function completionError(completion?: Completion): ExecutionError | undefined {
  return completion && !completion.ok ? completion.error : undefined;
}

/** A run stopped by the user (or before it could start). */
export function cancelledError(beforeStart = false): ExecutionError {
  return { type: 'Cancelled', message: beforeStart ? 'The run was stopped before it started.' : 'The run was stopped.' };
}

/** A run stopped at its timeout, with the tool calls it left in flight. */
export function timeoutError(timeoutMs: number, inFlight: number): ExecutionError {
  return {
    type: 'Timeout',
    message:
      `The code ran longer than the ${formatDuration(timeoutMs)} timeout and was stopped` +
      (inFlight ? `, with ${inFlight} tool call(s) still in flight` : '') +
      '. Make it faster, or raise the timeout (CLI: --timeout SECONDS; settings: codeact.timeoutSeconds).',
  };
}

/**
 * The category of a run's error when what was thrown says the host's setup failed, not the code: a setting
 * (`config`) or the machine (`environment`). Spread into the ExecutionError.
 */
export function setupCategory(err: unknown): Pick<ExecutionError, 'category'> {
  const category = errorCategory(err);
  return category === 'config' || category === 'environment' ? { category } : {};
}

/** The code's own error as the guest or kernel sent it, checked field by field (it is untrusted input). */
export function normaliseError(raw: unknown, cleanTraceback: (text: string) => string = (text) => text): ExecutionError {
  const r = raw as { type?: unknown; message?: unknown; traceback?: unknown; line?: unknown } | null;
  if (!r || typeof r !== 'object') return { type: 'Error', message: 'The code failed.' };
  return {
    type: typeof r.type === 'string' ? r.type : 'Error',
    message: typeof r.message === 'string' ? r.message : String(r.message ?? ''),
    ...(typeof r.traceback === 'string' && r.traceback ? { traceback: cleanTraceback(r.traceback) } : {}),
    ...(Number.isSafeInteger(r.line) ? { line: r.line as number } : {}),
  };
}

const TRUNCATION_MARKER = (stream: string, cap: number): string => `\n…[codeact: ${stream} truncated after ${formatBytes(cap)}; the rest was discarded]\n`;

interface StreamState {
  decoder: StringDecoder;
  bytes: number;
  text: string[];
  truncated: boolean;
}

/** Stdout and stderr of one run, each kept up to `cap` bytes; what comes after is counted out and dropped. */
export class OutputCapture {
  private readonly streams: Record<StreamName, StreamState> = {
    stdout: { decoder: new StringDecoder('utf8'), bytes: 0, text: [], truncated: false },
    stderr: { decoder: new StringDecoder('utf8'), bytes: 0, text: [], truncated: false },
  };

  constructor(private readonly cap: number) {}

  /** Raw bytes from a pipe (UTF-8 split anywhere). Returns the text to show now ('' when nothing). */
  pushBytes(stream: StreamName, chunk: Buffer): string {
    const s = this.streams[stream];
    if (s.truncated) return '';
    const room = this.cap - s.bytes;
    let part = chunk;
    if (chunk.length > room) {
      part = chunk.subarray(0, room);
      s.truncated = true;
    }
    s.bytes += part.length;
    let text = s.decoder.write(part);
    if (s.truncated) text += s.decoder.end() + TRUNCATION_MARKER(stream, this.cap);
    if (text) s.text.push(text);
    return text;
  }

  /** Text that arrived already decoded (kernel messages). Returns the text to show now. */
  pushText(stream: StreamName, text: string): string {
    const s = this.streams[stream];
    if (s.truncated || !text) return '';
    const bytes = Buffer.byteLength(text, 'utf8');
    let part = text;
    if (bytes > this.cap - s.bytes) {
      part =
        Buffer.from(text, 'utf8')
          .subarray(0, this.cap - s.bytes)
          .toString('utf8')
          .replace(/\uFFFD$/, '') + TRUNCATION_MARKER(stream, this.cap);
      s.truncated = true;
      s.bytes = this.cap;
    } else {
      s.bytes += bytes;
    }
    s.text.push(part);
    return part;
  }

  /** Flushes a partial UTF-8 sequence left at the end of a byte stream. */
  end(stream: StreamName): string {
    const s = this.streams[stream];
    if (s.truncated) return '';
    const tail = s.decoder.end();
    if (tail) s.text.push(tail);
    return tail;
  }

  text(stream: StreamName): string {
    return this.streams[stream].text.join('');
  }

  get truncated(): boolean {
    return this.streams.stdout.truncated || this.streams.stderr.truncated;
  }

  /** Displays in the order they came, each where the text stood when it came. */
  private readonly cuts: { stdout: number; stderr: number; display: DisplayOutput }[] = [];
  private readonly files: FileOutput[] = [];

  /**
   * A display after the text so far. With `update`, it replaces the earlier display with the same
   * `display_id` where that one stands (IPython's update_display_data); true when it found one.
   */
  pushDisplay(display: DisplayOutput, update = false): boolean {
    if (update && display.display_id !== undefined) {
      const at = this.cuts.find((c) => c.display.display_id === display.display_id);
      if (at) {
        at.display = display;
        return true;
      }
      return false;
    }
    this.cuts.push({ stdout: this.streams.stdout.text.length, stderr: this.streams.stderr.text.length, display });
    return true;
  }

  pushFile(file: FileOutput): void {
    this.files.push(file);
  }

  /** A place for a file whose copy is still being written (files keep the order they came in). */
  reserveFile(): number {
    this.files.push({ type: 'file' });
    return this.files.length - 1;
  }

  setFile(index: number, file: FileOutput): void {
    this.files[index] = file;
  }

  /**
   * The outputs in order: the text up to each display (stdout, then stderr apart, as one `logs` output each),
   * the display, the text after the last one, then the files the code wrote.
   */
  outputs(): CodeOutput[] {
    const out: CodeOutput[] = [];
    const from = { stdout: 0, stderr: 0 };
    const text = (stream: StreamName, to: number) => {
      const parts = this.streams[stream].text;
      const t = parts.slice(from[stream], to).join('');
      from[stream] = to;
      if (t) out.push(stream === 'stderr' ? { type: 'logs', logs: t, stream: 'stderr' } : { type: 'logs', logs: t });
    };
    for (const cut of this.cuts) {
      text('stdout', cut.stdout);
      text('stderr', cut.stderr);
      out.push(cut.display);
    }
    text('stdout', this.streams.stdout.text.length);
    text('stderr', this.streams.stderr.text.length);
    for (const f of this.files) if (f.filename || f.path || f.file_id) out.push(f);
    return out;
  }
}

interface FinishedExecution {
  itemId: string;
  code: string;
  runtime: RuntimeKind;
  containerId?: string | null;
  outputs: CodeOutput[];
  error?: ExecutionError;
  /** How the code ended; its value is used only when there is no error. */
  completion?: Completion;
  startedAt: number;
  truncated?: boolean;
  sandbox?: SandboxInfo;
}

/** Builds the finished `code_interpreter_call` item. A stopped run is `incomplete`, not `failed`. */
export function executionItem(f: FinishedExecution): CodeInterpreterCallItem {
  const ok = !f.error;
  return {
    type: 'code_interpreter_call',
    id: f.itemId,
    status: ok ? 'completed' : f.error?.type === 'Cancelled' ? 'incomplete' : 'failed',
    code: f.code,
    runtime: f.runtime,
    container_id: f.containerId ?? null,
    outputs: f.outputs,
    exit_code: ok ? 0 : 1,
    error: f.error ?? null,
    value: ok && f.completion?.ok ? (f.completion.value ?? null) : null,
    duration_ms: Math.round((performance.now() - f.startedAt) * 100) / 100,
    ...(f.sandbox ? { sandbox: f.sandbox } : {}),
    ...(f.truncated ? { truncated: true } : {}),
  };
}

/**
 * Closes the card of an execution that never ran (its code cut off, refused before it started, denied or
 * left unanswered at review), with the same events everywhere: the code, `completed`, then the item with
 * why. A stop is `incomplete`, anything else `failed`.
 */
export function notRunItem(
  emit: (e: CodeActEvent) => void,
  run: { itemId: string; code: string; runtime: RuntimeKind; error: ExecutionError },
): CodeInterpreterCallItem {
  emit({ type: 'response.code_interpreter_call_code.done', item_id: run.itemId, code: run.code });
  return announceDone(emit, {
    type: 'code_interpreter_call',
    id: run.itemId,
    status: run.error.type === 'Cancelled' ? 'incomplete' : 'failed',
    code: run.code,
    runtime: run.runtime,
    outputs: [],
    exit_code: null,
    error: run.error,
  });
}

/**
 * Applies the caller's `beforeRun` (code review) and runs what it allows, the edited code if it was edited;
 * refused code never reaches `run` and its card closes as never run. `run` gets the options without the hook.
 */
export async function afterReview(
  runtime: RuntimeKind,
  request: ExecuteRequest,
  options: ExecuteOptions,
  run: (request: ExecuteRequest, options: ExecuteOptions) => Promise<CodeInterpreterCallItem>,
): Promise<CodeInterpreterCallItem> {
  const { beforeRun, ...rest } = options;
  if (!beforeRun) return run(request, rest);
  const verdict = await beforeRun(request, options.signal);
  if ('error' in verdict)
    return notRunItem(safeEmit(options.onEvent), { itemId: request.itemId ?? newId('exec'), code: request.code, runtime, error: verdict.error });
  return run({ ...request, code: verdict.code }, rest);
}

/** Announces the end of an execution: `completed`, then `output_item.done` with the item. */
export function announceDone(emit: (e: CodeActEvent) => void, item: CodeInterpreterCallItem): CodeInterpreterCallItem {
  emit({ type: 'response.code_interpreter_call.completed', item_id: item.id });
  emit({ type: 'response.output_item.done', item });
  return item;
}
