/**
 * Building blocks shared by the adapters: ids, ordered item slots, and per-item emitters that keep
 * the event order of the vocabulary whatever the provider sends (or leaves out).
 *
 * Every emitter mints the id of its item itself: the ids of the events, the history and the panel are
 * ours. The provider's own ids (`call_0`, `toolu_…`, `msg_…`) stay in `call_id` and in the replay data,
 * for the wire, and are never keys: OpenAI-compatible and scripted servers reuse them across turns and
 * even within one response.
 */
import type {
  CodeCallStatus,
  CodeInterpreterCallItem,
  CodeOutput,
  ExecutionError,
  FileOutput,
  FunctionCallItem,
  MessageItem,
  OutputItem,
  RuntimeKind,
  Usage,
} from '../../../common/events';
import type { ConversationItem, EmitFn, FunctionCallRequest, ProviderId, ReplayData } from './types';
import { newId } from '../../util/ids';

/** The item as it goes into events: without replay data. */
export function publicItem(item: ConversationItem): OutputItem {
  if (!('replay' in item)) return item;
  const { replay: _replay, ...rest } = item;
  return rest as OutputItem;
}

/** Items of one turn, kept in the order they started, whatever order they finish in. */
export class TurnItems {
  private readonly slots: (ConversationItem | undefined)[] = [];
  readonly files: FileOutput[] = [];
  readonly functionCalls: FunctionCallRequest[] = [];

  constructor(
    readonly provider: ProviderId,
    readonly turn: string,
  ) {}

  private readonly snapshots = new Map<number, () => ConversationItem | undefined>();

  /** A slot for an item that will finish later; `snapshot` gives its partial state if the turn fails first. */
  reserve(snapshot?: () => ConversationItem | undefined): number {
    this.slots.push(undefined);
    if (snapshot) this.snapshots.set(this.slots.length - 1, snapshot);
    return this.slots.length - 1;
  }

  /** Finished items plus the partial state of unfinished ones (text so far), for a failed turn. */
  partialItems(): ConversationItem[] {
    const out: ConversationItem[] = [];
    this.slots.forEach((item, i) => {
      const v = item ?? this.snapshots.get(i)?.();
      if (v) out.push(v);
    });
    return out;
  }

  fill(slot: number, item: ConversationItem): void {
    this.slots[slot] = item;
  }

  add(item: ConversationItem): void {
    this.fill(this.reserve(), item);
  }

  get items(): ConversationItem[] {
    return this.slots.filter((x): x is ConversationItem => x !== undefined);
  }

  replay(parts: { index: number; data: unknown }[]): ReplayData {
    return { provider: this.provider, turn: this.turn, parts };
  }

  addFile(file: FileOutput): void {
    const key = (f: FileOutput): string => `${f.container_id ?? ''}/${f.file_id ?? f.url ?? f.path ?? f.filename ?? ''}`;
    const k = key(file);
    const existing = this.files.find((f) => key(f) === k);
    if (existing) {
      for (const [name, v] of Object.entries(file)) {
        if (v !== undefined && (existing as unknown as Record<string, unknown>)[name] === undefined) {
          (existing as unknown as Record<string, unknown>)[name] = v;
        }
      }
      return;
    }
    this.files.push({ ...file });
  }
}

/** A streamed text message, or the model's reasoning (`thinking`). */
export class TextStream {
  text = '';
  private finished = false;
  /** Our id of the message (or reasoning) item. */
  readonly id: string;

  constructor(
    private readonly emit: EmitFn,
    readonly thinking = false,
  ) {
    this.id = newId(thinking ? 'rs' : 'msg');
  }

  delta(delta: string): void {
    if (!delta) return;
    this.text += delta;
    this.emit(
      this.thinking ? { type: 'response.reasoning_text.delta', item_id: this.id, delta } : { type: 'response.output_text.delta', item_id: this.id, delta },
    );
  }

  /** The message so far, without emitting anything (the partial item of a failed turn). */
  snapshot(): MessageItem | undefined {
    if (!this.text) return undefined;
    const item: MessageItem = { type: 'message', id: this.id, role: 'assistant', text: this.text };
    if (this.thinking) item.thinking = true;
    return item;
  }

  /** Emits `output_text.done` and `output_item.done {message}`; `finalText` wins when the provider sent it. */
  finish(extra: { finalText?: string; annotations?: unknown[]; emitItem?: boolean } = {}): MessageItem {
    const text = extra.finalText ?? this.text;
    if (text.startsWith(this.text) && text.length > this.text.length) this.delta(text.slice(this.text.length));
    this.text = text;
    const item: MessageItem = { type: 'message', id: this.id, role: 'assistant', text };
    if (this.thinking) item.thinking = true;
    if (extra.annotations && extra.annotations.length > 0) item.annotations = extra.annotations;
    if (!this.finished) {
      this.finished = true;
      // Reasoning has events of its own, on an item of type `reasoning` (the history keeps the message with its
      // `thinking` flag and replay data, which the provider needs to send it back).
      this.emit(
        this.thinking ? { type: 'response.reasoning_text.done', item_id: this.id, text } : { type: 'response.output_text.done', item_id: this.id, text },
      );
      if (extra.emitItem !== false)
        this.emit({ type: 'response.output_item.done', item: this.thinking ? { type: 'reasoning', id: this.id, text } : { ...item } });
    }
    return item;
  }
}

/** A streamed model function call. */
export class FunctionCallStream {
  args = '';
  private added = false;
  private argsDone = false;
  /** Our id of the function_call item (`callId` is the provider's). */
  readonly id = newId('fc');

  constructor(
    private readonly emit: EmitFn,
    readonly callId: string,
    readonly name: string,
  ) {}

  start(): void {
    if (this.added) return;
    this.added = true;
    this.emit({
      type: 'response.output_item.added',
      item: { type: 'function_call', id: this.id, call_id: this.callId, name: this.name, arguments: '', status: 'in_progress' },
    });
  }

  delta(delta: string): void {
    this.start();
    if (!delta) return;
    this.args += delta;
    this.emit({ type: 'response.function_call_arguments.delta', item_id: this.id, call_id: this.callId, delta });
  }

  /** Emits `arguments.done` and `output_item.done`; empty arguments become `"{}"`. */
  finish(finalArgs?: string): FunctionCallItem {
    this.start();
    let args = finalArgs ?? this.args;
    if (args.startsWith(this.args) && args.length > this.args.length) this.delta(args.slice(this.args.length));
    if (args.trim() === '') args = '{}';
    this.args = args;
    const item: FunctionCallItem = { type: 'function_call', id: this.id, call_id: this.callId, name: this.name, arguments: args, status: 'completed' };
    if (!this.argsDone) {
      this.argsDone = true;
      this.emit({ type: 'response.function_call_arguments.done', item_id: this.id, call_id: this.callId, name: this.name, arguments: args });
      this.emit({ type: 'response.output_item.done', item: { ...item } });
    }
    return item;
  }

  request(): FunctionCallRequest {
    return { call_id: this.callId, name: this.name, arguments: this.args.trim() === '' ? '{}' : this.args, item_id: this.id };
  }
}

type CodeStage = 'new' | 'in_progress' | 'code_done' | 'interpreting' | 'completed' | 'done';
const STAGES: CodeStage[] = ['new', 'in_progress', 'code_done', 'interpreting', 'completed', 'done'];

/**
 * A hosted code execution item. Whatever subset of steps the provider streams, the events come out as
 * in_progress -> code deltas -> code.done -> interpreting -> completed -> output_item.done, and the code
 * deltas always concatenate to the final code.
 */
export class HostedCodeStream {
  code = '';
  private stage: CodeStage = 'new';
  /** Our id of the code item (the provider's is in the replay data). */
  readonly id = newId('exec');

  constructor(
    private readonly emit: EmitFn,
    readonly runtime: RuntimeKind,
    readonly tool?: string,
  ) {}

  private at(s: CodeStage): boolean {
    return STAGES.indexOf(this.stage) >= STAGES.indexOf(s);
  }

  get started(): boolean {
    return this.stage !== 'new';
  }

  start(): void {
    if (this.at('in_progress')) return;
    this.stage = 'in_progress';
    this.emit({ type: 'response.code_interpreter_call.in_progress', item_id: this.id, runtime: this.runtime });
  }

  delta(delta: string): void {
    this.start();
    if (!delta || this.at('code_done')) return;
    this.code += delta;
    this.emit({ type: 'response.code_interpreter_call_code.delta', item_id: this.id, delta });
  }

  codeDone(finalCode?: string): void {
    this.start();
    if (this.at('code_done')) return;
    if (finalCode !== undefined && finalCode !== this.code) {
      if (finalCode.startsWith(this.code)) this.delta(finalCode.slice(this.code.length));
      this.code = finalCode;
    }
    this.stage = 'code_done';
    this.emit({ type: 'response.code_interpreter_call_code.done', item_id: this.id, code: this.code });
  }

  interpreting(): void {
    this.codeDone();
    if (this.at('interpreting')) return;
    this.stage = 'interpreting';
    this.emit({ type: 'response.code_interpreter_call.interpreting', item_id: this.id });
  }

  completed(): void {
    this.interpreting();
    if (this.at('completed')) return;
    this.stage = 'completed';
    this.emit({ type: 'response.code_interpreter_call.completed', item_id: this.id });
  }

  finish(result: {
    status: CodeCallStatus;
    outputs: CodeOutput[];
    container_id?: string | null;
    exit_code?: number | null;
    error?: ExecutionError | null;
  }): CodeInterpreterCallItem {
    this.completed();
    const item: CodeInterpreterCallItem = {
      type: 'code_interpreter_call',
      id: this.id,
      status: result.status,
      code: this.code,
      runtime: this.runtime,
      container_id: result.container_id ?? null,
      outputs: result.outputs,
      exit_code: result.exit_code ?? null,
      error: result.error ?? null,
    };
    if (this.tool) item.tool = this.tool;
    if (this.stage !== 'done') {
      this.stage = 'done';
      this.emit({ type: 'response.output_item.done', item: structuredClone(item) });
    }
    return item;
  }
}

/** Parses the last line of a Python traceback (`ZeroDivisionError: division by zero`). */
export function errorFromTraceback(text: string): ExecutionError | null {
  if (!text) return null;
  const lines = text.replace(/\s+$/, '').split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0 && i >= lines.length - 5; i--) {
    const m = /^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration))(?::\s?(.*))?$/.exec(lines[i]);
    if (m) {
      const err: ExecutionError = { type: m[1].split('.').pop() as string, message: m[2] ?? '' };
      if (/Traceback \(most recent call last\)/.test(text)) err.traceback = text;
      const lineMatch = [...text.matchAll(/File "<[^>]*>", line (\d+)/g)].pop() ?? [...text.matchAll(/line (\d+)/g)].pop();
      if (lineMatch) err.line = Number(lineMatch[1]);
      return err;
    }
  }
  return null;
}

/** An item kept only so that its raw parts are sent back (an empty thinking message). */
export function replayOnlyItem(replay: ReplayData): ConversationItem {
  return { type: 'message', id: newId('item'), role: 'assistant', text: '', thinking: true, replay };
}

/** Token usage; the total is the provider's when it sent one. */
/** `cached`: of `input`, the tokens read from the provider's prompt cache (kept only when a count above 0). */
export function tokenUsage(input: number, output: number, total?: number, cached?: unknown): Usage {
  const usage: Usage = { input_tokens: input, output_tokens: output, total_tokens: total ?? input + output };
  if (typeof cached === 'number' && Number.isFinite(cached) && cached > 0) usage.cached_tokens = Math.min(Math.round(cached), input);
  return usage;
}

/** A JSON object an SDK or a server sent (or one we send): each field is unknown until read through the helpers below. */
export type JsonObject = Record<string, unknown>;

export function asString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function asNumber(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

/** The value as a JSON object (not an array, not null), or undefined. */
export function asObject(v: unknown): JsonObject | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as JsonObject) : undefined;
}

/** The objects of an array value, in order (anything else in it, or a value that is no array: none). */
export function objectsOf(v: unknown): JsonObject[] {
  const out: JsonObject[] = [];
  if (Array.isArray(v)) for (const x of v as unknown[]) if (asObject(x)) out.push(x as JsonObject);
  return out;
}

/** The object at a path of fields (`at(chunk, 'usage', 'prompt_tokens_details')`), or undefined. */
export function at(v: unknown, ...path: string[]): JsonObject | undefined {
  let o = asObject(v);
  for (const key of path) o = asObject(o?.[key]);
  return o;
}
