/**
 * The `Runtime` contract: something that executes Python code, streams what happens as events of the
 * shared vocabulary, routes the code's `call_tool` requests to a host handler, and returns one
 * finished `code_interpreter_call` item.
 *
 * The local Python guest and a remote Jupyter kernel both implement it. Both keep state between the
 * executions of one session (`sessionId`) unless configured to start fresh each time.
 */
import type { CodeActEvent, CodeInterpreterCallItem, ExecutionError, RuntimeKind, VariablesSummary } from '../../common/events';
import { formatBytes } from '../../common/format';

/** What the runtime asks of the host when the code calls `await call_tool(name, **args)`. */
export interface ToolCallRequest {
  /** The execution item the call belongs to. */
  itemId: string;
  /** Unique per call within the execution. */
  callId: string;
  name: string;
  arguments: unknown;
}

/**
 * Handles one tool call. Resolves with the tool's JSON result, or rejects with an Error whose message
 * becomes the `RuntimeError` raised in the guest. The signal fires when the run is stopped or times out.
 */
export type ToolCallHandler = (request: ToolCallRequest, signal: AbortSignal) => Promise<unknown>;

export interface ExecuteRequest {
  code: string;
  /** The item id to use; generated when absent. */
  itemId?: string;
  /** Whole-run timeout, covering tool calls in flight. */
  timeoutMs?: number;
  /** Groups executions that may share state (a conversation). */
  sessionId?: string;
  /** When false, `call_tool` is not defined in the guest (plain `execute_code`). */
  tools?: boolean;
  /**
   * The caller already emitted `response.code_interpreter_call.in_progress` and the code deltas for this
   * item (the agent loop streams the code while the model writes it); the runtime starts at `code.done`.
   */
  announced?: boolean;
}

export interface ExecuteOptions {
  signal?: AbortSignal;
  onEvent?: (event: CodeActEvent) => void;
  onToolCall?: ToolCallHandler;
}

export interface Runtime {
  readonly kind: RuntimeKind;
  /** Executions with the same sessionId share state (a local session, a Jupyter kernel per conversation). */
  readonly statePersists?: boolean;
  /**
   * Runs the code to completion. Never rejects for failures of the code itself (those come back as
   * an item with `status: "failed"` and an `error`); rejects only for misuse of the API.
   */
  execute(request: ExecuteRequest, options?: ExecuteOptions): Promise<CodeInterpreterCallItem>;
  /** Releases what a session holds (a kernel, for instance). */
  closeSession?(sessionId: string): Promise<void>;
  /** Drops the session's state now (its process tree or kernel restarts); the next run starts fresh. */
  restartSession?(sessionId: string): Promise<unknown>;
  /** The session's variables, read without running user code (null when it has none, or while it runs). */
  variables?(sessionId: string): Promise<VariablesSummary | null>;
  /** True while the session holds live state. */
  hasSession?(sessionId: string): boolean;
  dispose(): Promise<void>;
}

/** Limits shared by the runtimes, with the defaults of the engine. */
export interface RuntimeLimits {
  maxSourceBytes: number;
  maxOutputBytes: number;
  timeoutMs: number;
  maxConcurrentToolCalls: number;
  /** Largest returned value, as JSON (the local guest also keeps it under its frame limit). */
  maxValueBytes: number;
}

export const DEFAULT_LIMITS: RuntimeLimits = {
  maxSourceBytes: 64 * 1024,
  maxOutputBytes: 1024 * 1024,
  timeoutMs: 120_000,
  maxConcurrentToolCalls: 8,
  maxValueBytes: 4 * 1024 * 1024,
};

export const TRUNCATION_MARKER = (stream: string, cap: number): string =>
  `\n…[codeact: ${stream} truncated after ${formatBytes(cap)}; the rest was discarded]\n`;


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
  if (signal?.aborted) return { type: 'Cancelled', message: 'The run was stopped before it started.' };
  emit({ type: 'response.code_interpreter_call.interpreting', item_id: itemId });
  return undefined;
}
