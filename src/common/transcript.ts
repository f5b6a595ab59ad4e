/**
 * The transcript reducer: events of the shared vocabulary (plus two turn markers) -> the view model the
 * chat panel renders (turns, messages, execution cards, tool-call timelines, approvals, usage).
 *
 * Pure and DOM-free. For speed the model is a plain, JSON-serialisable object that `applyEvent` updates in
 * place; it returns which turns and items changed so a renderer can update only those (the webview never
 * re-renders the whole transcript). Output panes keep only a bounded tail; the host keeps the full text.
 */
import type {
  CodeActEvent,
  CodeInterpreterCallItem,
  ExecutionError,
  FileOutput,
  FunctionCallItem,
  FunctionCallOutputItem,
  MessageItem,
  OutputItem,
  RuntimeKind,
  SandboxInfo,
  StreamName,
  TextEditorItem,
  Usage,
} from './events';

// ---- turn markers ---------------------------------------------------------------------------------

/** Where a turn came from. */
export type TurnSource = 'chat' | 'run_with_tools' | 'lm_tool' | 'participant' | 'cli';

/** Starts a turn: the user's prompt (or what was run) and the model it goes to. */
export interface TurnStarted {
  type: 'codeact.turn.started';
  turn_id: string;
  /** The user's prompt; for Run with Tools a short description such as `orders.py, lines 3-20`. */
  prompt: string;
  source?: TurnSource;
  provider?: string;
  model?: string;
  runtime?: RuntimeKind;
  /** Epoch milliseconds. */
  started_at?: number;
}

export type TurnEndStatus = 'completed' | 'stopped' | 'failed';

/** Ends a turn. Anything still running in it is shown as stopped. */
export interface TurnEnded {
  type: 'codeact.turn.ended';
  turn_id: string;
  status: TurnEndStatus;
  duration_ms?: number;
  /** Optional one-line explanation, for example why it failed. */
  message?: string;
}

/** What the transcript store persists and the panel reduces: the event vocabulary plus turn markers. */
export type TranscriptEvent = CodeActEvent | TurnStarted | TurnEnded;

// ---- view model -----------------------------------------------------------------------------------

export type TurnStatus = 'running' | 'completed' | 'stopped' | 'failed';

export interface TurnView {
  id: string;
  /** True when the turn was opened by an event that arrived without a `codeact.turn.started`. */
  implicit: boolean;
  prompt?: string;
  source?: TurnSource;
  provider?: string;
  model?: string;
  runtime?: RuntimeKind;
  status: TurnStatus;
  startedAt?: number;
  durationMs?: number;
  message?: string;
  /** Keys into `TranscriptModel.items`, in order of appearance. */
  itemKeys: string[];
  /** Sum over the model responses of the turn. */
  usage?: Usage;
  responses: number;
  rev: number;
}

export interface MessageView {
  kind: 'message';
  key: string;
  turnId: string;
  id: string;
  role: 'assistant' | 'user';
  text: string;
  thinking: boolean;
  done: boolean;
  rev: number;
}

export type ExecStatus = 'writing' | 'running' | 'done' | 'failed' | 'stopped';

export interface OutputChunk {
  stream: StreamName;
  text: string;
  /** Newlines in `text`. */
  lines: number;
}

/** The visible tail of an execution's stdout and stderr, in arrival order. */
export interface OutputTail {
  chunks: OutputChunk[];
  /** Characters and newlines currently held in `chunks`. */
  chars: number;
  lines: number;
  /** Everything ever appended, including what was dropped from the front. */
  totalChars: number;
  totalLines: number;
}

export type ToolCallStatus = 'running' | 'ok' | 'error' | 'stopped';

export interface ToolCallView {
  callId: string;
  name: string;
  arguments: unknown;
  status: ToolCallStatus;
  output?: unknown;
  error?: string;
  durationMs?: number;
  rev: number;
}

export interface ExecView {
  kind: 'exec';
  key: string;
  turnId: string;
  id: string;
  status: ExecStatus;
  runtime?: RuntimeKind;
  sandbox?: SandboxInfo;
  /** Provider sub-tool, for example Anthropic's `bash_code_execution`. */
  tool?: string;
  containerId?: string | null;
  code: string;
  codeDone: boolean;
  output: OutputTail;
  /** True once live `codeact.output.delta` events arrived; the final item's logs are then not added again. */
  liveOutput: boolean;
  images: string[];
  files: FileOutput[];
  hasValue: boolean;
  value?: unknown;
  error?: ExecutionError;
  exitCode?: number | null;
  durationMs?: number;
  /** The runtime cut stdout or stderr at its cap. */
  truncated: boolean;
  tools: ToolCallView[];
  /** Pending approvals that refer to this execution. */
  awaiting: number;
  rev: number;
}

export interface FunctionView {
  kind: 'function';
  key: string;
  turnId: string;
  callId: string;
  name: string;
  arguments: string;
  status: 'in_progress' | 'completed';
  output?: string;
  isError?: boolean;
  rev: number;
}

export interface EditorView {
  kind: 'editor';
  key: string;
  turnId: string;
  id: string;
  item: TextEditorItem;
  rev: number;
}

export type ApprovalStatus = 'pending' | 'resolved' | 'expired';

export interface ApprovalView {
  kind: 'approval';
  key: string;
  turnId: string;
  id: string;
  approvalKind: 'tool' | 'code';
  itemId?: string;
  name?: string;
  arguments?: unknown;
  code?: string;
  status: ApprovalStatus;
  decision?: 'allow_once' | 'allow_session' | 'allow_always' | 'deny';
  reason?: string;
  rev: number;
}

export interface ErrorView {
  kind: 'error';
  key: string;
  turnId: string;
  message: string;
  code?: string;
  rev: number;
}

export interface NoticeView {
  kind: 'notice';
  key: string;
  turnId: string;
  level: 'info' | 'warning';
  text: string;
  rev: number;
}

export type ItemView = MessageView | ExecView | FunctionView | EditorView | ApprovalView | ErrorView | NoticeView;

export interface TranscriptModel {
  turns: TurnView[];
  items: Record<string, ItemView>;
  /** Other ids an item is known by (a function call's item id -> its key). */
  aliases: Record<string, string>;
  /** Events applied so far. */
  events: number;
  /** Counter for generated ids (implicit turns, errors, notices). */
  serial: number;
}

export type TranscriptChange =
  | { kind: 'turn'; id: string; added: boolean }
  | { kind: 'item'; key: string; turnId: string; added: boolean };

/** Caps of the visible output tail (per execution). The full output stays with the host. */
export const OUTPUT_TAIL_MAX_LINES = 2000;
export const OUTPUT_TAIL_MAX_CHARS = 256 * 1024;

/** Names of the model-facing tools whose calls are shown as execution cards, not as function calls. */
export const CODE_TOOL_NAMES: readonly string[] = ['execute_tool_code', 'execute_code'];

export function createTranscript(): TranscriptModel {
  return { turns: [], items: {}, aliases: {}, events: 0, serial: 0 };
}

/** Reduces a whole event list into a fresh model. */
export function buildTranscript(events: readonly TranscriptEvent[]): TranscriptModel {
  const model = createTranscript();
  for (const event of events) applyEvent(model, event);
  return model;
}

export function messageKey(itemId: string): string {
  return `m:${itemId}`;
}
export function execKey(itemId: string): string {
  return `x:${itemId}`;
}
export function functionKey(callId: string): string {
  return `f:${callId}`;
}
export function approvalKey(approvalId: string): string {
  return `a:${approvalId}`;
}

/** The running turn (the last one, if it still runs). */
export function currentTurn(model: TranscriptModel): TurnView | undefined {
  const last = model.turns[model.turns.length - 1];
  return last && last.status === 'running' ? last : undefined;
}

export function isBusy(model: TranscriptModel): boolean {
  return model.turns.some((t) => t.status === 'running' && !t.implicit);
}

export function findTurn(model: TranscriptModel, id: string): TurnView | undefined {
  for (let i = model.turns.length - 1; i >= 0; i--) if (model.turns[i].id === id) return model.turns[i];
  return undefined;
}

// ---- the reducer ----------------------------------------------------------------------------------

/**
 * Applies one event to the model, in place, and returns what changed. Unknown event types are ignored,
 * so newer hosts can talk to older panels.
 */
export function applyEvent(model: TranscriptModel, event: TranscriptEvent): TranscriptChange[] {
  const ctx = new Ctx(model);
  model.events++;
  switch (event.type) {
    case 'codeact.turn.started': {
      const existing = findTurn(model, event.turn_id);
      if (existing) {
        existing.status = 'running';
        ctx.turnChanged(existing);
        break;
      }
      // A turn left open by an implicit start is closed when a real one begins.
      const open = currentTurn(model);
      if (open && open.implicit) {
        open.status = 'completed';
        ctx.turnChanged(open);
      }
      const turn: TurnView = {
        id: event.turn_id,
        implicit: false,
        prompt: event.prompt,
        source: event.source,
        provider: event.provider,
        model: event.model,
        runtime: event.runtime,
        status: 'running',
        startedAt: event.started_at,
        itemKeys: [],
        responses: 0,
        rev: 1,
      };
      model.turns.push(turn);
      ctx.changes.push({ kind: 'turn', id: turn.id, added: true });
      break;
    }
    case 'codeact.turn.ended': {
      const turn = findTurn(model, event.turn_id);
      if (!turn) break;
      turn.status = event.status;
      if (event.duration_ms !== undefined) turn.durationMs = event.duration_ms;
      if (event.message) turn.message = event.message;
      ctx.settleTurn(turn, event.status === 'completed' ? 'completed' : 'stopped');
      ctx.turnChanged(turn);
      break;
    }
    case 'response.output_text.delta':
    case 'response.reasoning_text.delta': {
      // (`thinking` on output_text: reasoning in transcripts saved before it had events of its own.)
      const msg = ctx.message(event.item_id, event.type === 'response.reasoning_text.delta' || event.thinking === true);
      msg.text += event.delta;
      ctx.itemChanged(msg);
      break;
    }
    case 'response.output_text.done':
    case 'response.reasoning_text.done': {
      const msg = ctx.message(event.item_id, event.type === 'response.reasoning_text.done' || event.thinking === true);
      msg.text = event.text;
      msg.done = true;
      ctx.itemChanged(msg);
      break;
    }
    case 'response.code_interpreter_call.in_progress': {
      const exec = ctx.exec(event.item_id);
      if (event.runtime) exec.runtime = event.runtime;
      ctx.itemChanged(exec);
      break;
    }
    case 'response.code_interpreter_call_code.delta': {
      const exec = ctx.exec(event.item_id);
      exec.code += event.delta;
      ctx.itemChanged(exec);
      break;
    }
    case 'response.code_interpreter_call_code.done': {
      const exec = ctx.exec(event.item_id);
      exec.code = event.code;
      exec.codeDone = true;
      ctx.itemChanged(exec);
      break;
    }
    case 'response.code_interpreter_call.interpreting': {
      const exec = ctx.exec(event.item_id);
      exec.codeDone = true;
      if (exec.status === 'writing') exec.status = 'running';
      ctx.itemChanged(exec);
      break;
    }
    case 'response.code_interpreter_call.completed': {
      const exec = ctx.exec(event.item_id);
      exec.codeDone = true;
      if (exec.status === 'writing' || exec.status === 'running') exec.status = exec.error ? 'failed' : 'done';
      ctx.itemChanged(exec);
      break;
    }
    case 'codeact.output.delta': {
      const exec = ctx.exec(event.item_id);
      exec.liveOutput = true;
      exec.codeDone = true;
      if (exec.status === 'writing') exec.status = 'running';
      appendOutput(exec.output, event.stream, event.delta);
      ctx.itemChanged(exec);
      break;
    }
    case 'codeact.tool_call.started': {
      const exec = ctx.exec(event.item_id);
      if (exec.status === 'writing') exec.status = 'running';
      exec.codeDone = true;
      let call = exec.tools.find((c) => c.callId === event.call_id);
      if (!call) {
        call = { callId: event.call_id, name: event.name, arguments: event.arguments, status: 'running', rev: 0 };
        exec.tools.push(call);
      }
      call.rev++;
      ctx.itemChanged(exec);
      break;
    }
    case 'codeact.tool_call.completed': {
      const exec = ctx.exec(event.item_id);
      let call = exec.tools.find((c) => c.callId === event.call_id);
      if (!call) {
        call = { callId: event.call_id, name: event.name, arguments: undefined, status: 'running', rev: 0 };
        exec.tools.push(call);
      }
      call.status = event.error !== undefined ? 'error' : 'ok';
      call.error = event.error;
      call.output = event.output;
      call.durationMs = event.duration_ms;
      call.rev++;
      ctx.itemChanged(exec);
      break;
    }
    case 'response.output_item.added':
    case 'response.output_item.done':
      ctx.outputItem(event.item, event.type === 'response.output_item.done');
      break;
    case 'response.function_call_arguments.delta': {
      const fn = ctx.functionCall(event.call_id ?? event.item_id, event.item_id);
      if (fn) {
        fn.arguments += event.delta;
        ctx.itemChanged(fn);
      }
      break;
    }
    case 'response.function_call_arguments.done': {
      const fn = ctx.functionCall(event.call_id ?? event.item_id, event.item_id, event.name);
      if (fn) {
        fn.arguments = event.arguments;
        if (event.name) fn.name = event.name;
        ctx.itemChanged(fn);
      }
      break;
    }
    case 'codeact.approval.requested': {
      const turn = ctx.turnForNewItem();
      const key = approvalKey(event.approval_id);
      if (model.items[key]) break;
      const view: ApprovalView = {
        kind: 'approval',
        key,
        turnId: turn.id,
        id: event.approval_id,
        approvalKind: event.kind,
        itemId: event.item_id,
        name: event.name,
        arguments: event.arguments,
        code: event.code,
        status: 'pending',
        rev: 1,
      };
      ctx.addItem(turn, view);
      const exec = event.item_id ? (model.items[execKey(event.item_id)] as ExecView | undefined) : undefined;
      if (exec && exec.kind === 'exec') {
        exec.awaiting++;
        ctx.itemChanged(exec);
      }
      break;
    }
    case 'codeact.approval.resolved': {
      const view = model.items[approvalKey(event.approval_id)];
      if (!view || view.kind !== 'approval') break;
      const wasPending = view.status === 'pending';
      view.status = 'resolved';
      view.decision = event.decision;
      view.reason = event.reason;
      ctx.itemChanged(view);
      if (wasPending) ctx.releaseApproval(view);
      break;
    }
    case 'codeact.retry': {
      const turn = ctx.turnForNewItem();
      const seconds = Math.max(1, Math.round(event.delay_ms / 1000));
      const status = event.status ? ` (HTTP ${event.status})` : '';
      const view: NoticeView = {
        kind: 'notice',
        key: `n:${++model.serial}`,
        turnId: turn.id,
        level: 'warning',
        text: `${event.message}${status}. Retrying in ${seconds} s (attempt ${event.attempt}).`,
        rev: 1,
      };
      ctx.addItem(turn, view);
      break;
    }
    case 'codeact.session': {
      // A session that ended (idle, evicted, restarted, crashed) or a reopened conversation: said where
      // the conversation is, not as a turn of its own.
      if (event.state !== 'ended') break;
      const turn = currentTurn(model) ?? model.turns[model.turns.length - 1] ?? ctx.turnForNewItem();
      const view: NoticeView = { kind: 'notice', key: `n:${++model.serial}`, turnId: turn.id, level: 'warning', text: event.message, rev: 1 };
      ctx.addItem(turn, view);
      break;
    }
    case 'response.completed': {
      const turn = ctx.turnForNewItem();
      turn.responses++;
      const usage = event.response.usage;
      if (usage) {
        const sum = turn.usage ?? { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
        sum.input_tokens += usage.input_tokens || 0;
        sum.output_tokens += usage.output_tokens || 0;
        sum.total_tokens = (sum.total_tokens ?? 0) + (usage.total_tokens ?? (usage.input_tokens || 0) + (usage.output_tokens || 0));
        turn.usage = sum;
      }
      for (const key of turn.itemKeys) {
        const item = model.items[key];
        if (item && item.kind === 'message' && !item.done) {
          item.done = true;
          ctx.itemChanged(item);
        }
      }
      if (turn.implicit) {
        turn.status = 'completed';
        ctx.settleTurn(turn, 'completed');
      }
      ctx.turnChanged(turn);
      break;
    }
    case 'error': {
      // Stopping is not an error: the turn's end marker shows it as stopped.
      if (event.code === 'cancelled') break;
      const turn = ctx.turnForNewItem();
      const view: ErrorView = { kind: 'error', key: `e:${++model.serial}`, turnId: turn.id, message: event.message, code: event.code, rev: 1 };
      ctx.addItem(turn, view);
      if (turn.implicit) {
        turn.status = 'failed';
        ctx.settleTurn(turn, 'stopped');
        ctx.turnChanged(turn);
      }
      break;
    }
    default:
      break;
  }
  return ctx.changes;
}

/** Appends text to a bounded output tail (drops whole lines from the front beyond the caps). */
export function appendOutput(
  tail: OutputTail,
  stream: StreamName,
  text: string,
  maxLines = OUTPUT_TAIL_MAX_LINES,
  maxChars = OUTPUT_TAIL_MAX_CHARS,
): void {
  if (!text) return;
  const lines = countNewlines(text);
  tail.totalChars += text.length;
  tail.totalLines += lines;
  const last = tail.chunks[tail.chunks.length - 1];
  if (last && last.stream === stream && last.text.length + text.length <= 16 * 1024) {
    last.text += text;
    last.lines += lines;
  } else {
    tail.chunks.push({ stream, text, lines });
  }
  tail.chars += text.length;
  tail.lines += lines;
  trimTail(tail, maxLines, maxChars);
}

function trimTail(tail: OutputTail, maxLines: number, maxChars: number): void {
  let drop = 0;
  while (drop < tail.chunks.length && (tail.lines > maxLines || tail.chars > maxChars)) {
    const first = tail.chunks[drop];
    const excessLines = tail.lines - maxLines;
    const excessChars = tail.chars - maxChars;
    if (first.lines <= excessLines || first.text.length <= excessChars) {
      tail.lines -= first.lines;
      tail.chars -= first.text.length;
      drop++;
      continue;
    }
    // Cut inside the first chunk: after the excess-th newline, and at least excessChars in.
    let cut = 0;
    if (excessLines > 0) cut = indexAfterNthNewline(first.text, excessLines);
    if (excessChars > cut) {
      const nl = first.text.indexOf('\n', excessChars);
      cut = nl >= 0 ? nl + 1 : excessChars;
    }
    const removed = first.text.slice(0, cut);
    const removedLines = countNewlines(removed);
    first.text = first.text.slice(cut);
    first.lines -= removedLines;
    tail.lines -= removedLines;
    tail.chars -= removed.length;
    break;
  }
  if (drop) tail.chunks.splice(0, drop);
}

function indexAfterNthNewline(text: string, n: number): number {
  let idx = -1;
  for (let i = 0; i < n; i++) {
    idx = text.indexOf('\n', idx + 1);
    if (idx < 0) return text.length;
  }
  return idx + 1;
}

export function countNewlines(text: string): number {
  let n = 0;
  let i = text.indexOf('\n');
  while (i >= 0) {
    n++;
    i = text.indexOf('\n', i + 1);
  }
  return n;
}

/** The last `n` characters of the tail, as chunks (used by renderers to append what they have not shown). */
export function tailSlice(tail: OutputTail, n: number): OutputChunk[] {
  const out: OutputChunk[] = [];
  let need = n;
  for (let i = tail.chunks.length - 1; i >= 0 && need > 0; i--) {
    const c = tail.chunks[i];
    if (c.text.length <= need) {
      out.push(c);
      need -= c.text.length;
    } else {
      const text = c.text.slice(c.text.length - need);
      out.push({ stream: c.stream, text, lines: countNewlines(text) });
      need = 0;
    }
  }
  return out.reverse();
}

export function outputText(tail: OutputTail, stream?: StreamName): string {
  return tail.chunks.filter((c) => !stream || c.stream === stream).map((c) => c.text).join('');
}

function emptyTail(): OutputTail {
  return { chunks: [], chars: 0, lines: 0, totalChars: 0, totalLines: 0 };
}

class Ctx {
  readonly changes: TranscriptChange[] = [];
  constructor(private readonly model: TranscriptModel) {}

  turnChanged(turn: TurnView): void {
    turn.rev++;
    if (!this.changes.some((c) => c.kind === 'turn' && c.id === turn.id)) this.changes.push({ kind: 'turn', id: turn.id, added: false });
  }

  itemChanged(item: ItemView): void {
    item.rev++;
    if (!this.changes.some((c) => c.kind === 'item' && c.key === item.key))
      this.changes.push({ kind: 'item', key: item.key, turnId: item.turnId, added: false });
  }

  addItem(turn: TurnView, item: ItemView): void {
    this.model.items[item.key] = item;
    turn.itemKeys.push(item.key);
    this.changes.push({ kind: 'item', key: item.key, turnId: turn.id, added: true });
  }

  /** The turn new items go to: the running turn, else an implicit one (reopened if it was the last). */
  turnForNewItem(): TurnView {
    const model = this.model;
    const last = model.turns[model.turns.length - 1];
    if (last && last.status === 'running') return last;
    if (last && last.implicit) {
      last.status = 'running';
      this.turnChanged(last);
      return last;
    }
    const turn: TurnView = { id: `t:${++model.serial}`, implicit: true, status: 'running', itemKeys: [], responses: 0, rev: 1 };
    model.turns.push(turn);
    this.changes.push({ kind: 'turn', id: turn.id, added: true });
    return turn;
  }

  message(itemId: string, thinking: boolean): MessageView {
    const key = messageKey(itemId);
    const existing = this.model.items[key];
    if (existing && existing.kind === 'message') return existing;
    const turn = this.turnForNewItem();
    const view: MessageView = { kind: 'message', key, turnId: turn.id, id: itemId, role: 'assistant', text: '', thinking, done: false, rev: 0 };
    this.addItem(turn, view);
    return view;
  }

  exec(itemId: string): ExecView {
    const key = execKey(itemId);
    const existing = this.model.items[key];
    if (existing && existing.kind === 'exec') return existing;
    const turn = this.turnForNewItem();
    const view: ExecView = {
      kind: 'exec',
      key,
      turnId: turn.id,
      id: itemId,
      status: 'writing',
      runtime: turn.runtime,
      code: '',
      codeDone: false,
      output: emptyTail(),
      liveOutput: false,
      images: [],
      files: [],
      hasValue: false,
      truncated: false,
      tools: [],
      awaiting: 0,
      rev: 0,
    };
    this.addItem(turn, view);
    return view;
  }

  /** The function-call view for a call id (or item id); undefined for the code tools, shown as cards. */
  functionCall(callId: string, itemId?: string, name?: string): FunctionView | undefined {
    const items = this.model.items;
    const direct = items[functionKey(callId)];
    if (direct && direct.kind === 'function') return direct;
    if (itemId) {
      const byItem = items[functionKey(itemId)];
      if (byItem && byItem.kind === 'function') return byItem;
      const aliasKey = this.model.aliases[itemId];
      const alias = aliasKey ? items[aliasKey] : undefined;
      if (alias && alias.kind === 'function') return alias;
    }
    if (name && CODE_TOOL_NAMES.includes(name)) return undefined;
    if (!name) return undefined;
    return this.addFunction({ type: 'function_call', call_id: callId, id: itemId, name, status: 'in_progress' });
  }

  addFunction(item: FunctionCallItem): FunctionView | undefined {
    if (CODE_TOOL_NAMES.includes(item.name)) return undefined;
    const turn = this.turnForNewItem();
    const view: FunctionView = {
      kind: 'function',
      key: functionKey(item.call_id),
      turnId: turn.id,
      callId: item.call_id,
      name: item.name,
      arguments: item.arguments ?? '',
      status: item.status === 'completed' ? 'completed' : 'in_progress',
      rev: 1,
    };
    this.addItem(turn, view);
    // Argument deltas name the item id, not the call id: remember the alias.
    if (item.id && item.id !== item.call_id) this.model.aliases[item.id] = view.key;
    return view;
  }

  outputItem(item: OutputItem, done: boolean): void {
    switch (item.type) {
      case 'message':
        this.messageItem(item, done);
        break;
      case 'reasoning':
        this.messageItem({ type: 'message', id: item.id, role: 'assistant', text: item.text, thinking: true }, done);
        break;
      case 'code_interpreter_call':
        this.codeItem(item, done);
        break;
      case 'function_call':
        this.functionItem(item, done);
        break;
      case 'function_call_output':
        this.functionOutput(item);
        break;
      case 'text_editor_call':
        this.editorItem(item);
        break;
      default:
        break;
    }
  }

  private messageItem(item: MessageItem, done: boolean): void {
    const msg = this.message(item.id, item.thinking === true);
    msg.role = item.role;
    if (done || item.text) msg.text = item.text;
    if (done) msg.done = true;
    this.itemChanged(msg);
  }

  private codeItem(item: CodeInterpreterCallItem, done: boolean): void {
    const exec = this.exec(item.id);
    exec.runtime = item.runtime ?? exec.runtime;
    if (item.sandbox) exec.sandbox = item.sandbox;
    if (item.tool) exec.tool = item.tool;
    if (item.container_id !== undefined) exec.containerId = item.container_id;
    if (item.code && (done || item.code.length >= exec.code.length)) exec.code = item.code;
    if (!done) {
      if (item.status === 'interpreting') exec.status = 'running';
      this.itemChanged(exec);
      return;
    }
    exec.codeDone = true;
    exec.exitCode = item.exit_code;
    if (item.duration_ms !== undefined) exec.durationMs = item.duration_ms;
    if (item.truncated) exec.truncated = true;
    // A stopped run (status "incomplete") is shown as stopped, not as an error with a null result.
    if (item.error && item.status !== 'incomplete') exec.error = item.error;
    if (item.value !== undefined && item.status === 'completed') {
      exec.hasValue = true;
      exec.value = item.value;
    }
    for (const out of item.outputs ?? []) {
      if (out.type === 'logs') {
        if (!exec.liveOutput) appendOutput(exec.output, out.stream === 'stderr' ? 'stderr' : 'stdout', out.logs);
      } else if (out.type === 'image') {
        if (!exec.images.includes(out.url)) exec.images.push(out.url);
      } else if (out.type === 'file') {
        if (!exec.files.some((f) => sameFile(f, out))) exec.files.push(out);
      }
    }
    exec.status = item.status === 'incomplete' ? 'stopped' : item.status === 'failed' || item.error ? 'failed' : 'done';
    for (const call of exec.tools) {
      if (call.status === 'running') {
        call.status = 'stopped';
        call.rev++;
      }
    }
    this.itemChanged(exec);
  }

  private functionItem(item: FunctionCallItem, done: boolean): void {
    let fn = this.functionCall(item.call_id, item.id);
    if (!fn) fn = this.addFunction(item);
    if (!fn) return;
    if (item.arguments !== undefined && (done || item.arguments.length >= fn.arguments.length)) fn.arguments = item.arguments;
    if (done || item.status === 'completed') fn.status = 'completed';
    this.itemChanged(fn);
  }

  private functionOutput(item: FunctionCallOutputItem): void {
    const fn = this.functionCall(item.call_id);
    if (!fn) return;
    fn.output = item.output;
    fn.isError = item.is_error;
    fn.status = 'completed';
    this.itemChanged(fn);
  }

  private editorItem(item: TextEditorItem): void {
    const key = `t:${item.id}`;
    const existing = this.model.items[key];
    if (existing && existing.kind === 'editor') {
      existing.item = item;
      this.itemChanged(existing);
      return;
    }
    const turn = this.turnForNewItem();
    this.addItem(turn, { kind: 'editor', key, turnId: turn.id, id: item.id, item, rev: 1 });
  }

  releaseApproval(view: ApprovalView): void {
    if (!view.itemId) return;
    const exec = this.model.items[execKey(view.itemId)];
    if (exec && exec.kind === 'exec' && exec.awaiting > 0) {
      exec.awaiting--;
      this.itemChanged(exec);
    }
  }

  /** Marks what still runs in a finished turn as stopped, and pending approvals as expired. */
  settleTurn(turn: TurnView, how: 'completed' | 'stopped'): void {
    for (const key of turn.itemKeys) {
      const item = this.model.items[key];
      if (!item) continue;
      if (item.kind === 'exec') {
        let changed = false;
        if (item.status === 'writing' || item.status === 'running') {
          // A turn that completed normally with an execution still "running" lost its final item: call it done.
          item.status = how === 'completed' && item.status === 'running' && !item.error ? 'done' : 'stopped';
          changed = true;
        }
        for (const call of item.tools) {
          if (call.status === 'running') {
            call.status = 'stopped';
            call.rev++;
            changed = true;
          }
        }
        if (item.awaiting) {
          item.awaiting = 0;
          changed = true;
        }
        if (changed) this.itemChanged(item);
      } else if (item.kind === 'message' && !item.done) {
        item.done = true;
        this.itemChanged(item);
      } else if (item.kind === 'approval' && item.status === 'pending') {
        item.status = 'expired';
        this.itemChanged(item);
      } else if (item.kind === 'function' && item.status === 'in_progress') {
        item.status = 'completed';
        this.itemChanged(item);
      }
    }
  }
}

function sameFile(a: FileOutput, b: FileOutput): boolean {
  return (
    (a.file_id !== undefined && a.file_id === b.file_id) ||
    (a.path !== undefined && a.path === b.path && a.container_id === b.container_id) ||
    (a.url !== undefined && a.url === b.url)
  );
}

/** Turns, messages and executions as plain text, for "copy conversation" and tests. */
export function summarize(model: TranscriptModel): string {
  const out: string[] = [];
  for (const turn of model.turns) {
    if (turn.prompt) out.push(`> ${turn.prompt}`);
    for (const key of turn.itemKeys) {
      const item = model.items[key];
      if (!item) continue;
      if (item.kind === 'message') out.push(item.text);
      else if (item.kind === 'exec') out.push('```python\n' + item.code + '\n```');
      else if (item.kind === 'error') out.push(`Error: ${item.message}`);
    }
  }
  return out.join('\n\n');
}
