/**
 * The items of the event vocabulary (./events): what a turn produces — code executions with their outputs,
 * messages, function calls and their results — and the usage they cost. Pure data: no Node, no `vscode`.
 */
import type { RuntimeKind } from './runtimes';
import type { FilesChanged } from './rewind';

/** Where a code item ran; its facts are in ./runtimes. */
export type { RuntimeKind };

export type StreamName = 'stdout' | 'stderr';

interface LogsOutput {
  type: 'logs';
  logs: string;
  /** Absent for stdout; `"stderr"` for stderr. */
  stream?: 'stderr';
}

/** An image a hosted sandbox (OpenAI, Anthropic, Gemini) produced. Our own runtimes send `display` outputs. */
export interface ImageOutput {
  type: 'image';
  /** A data URL (`data:image/png;base64,…`) or a URL the provider gave. */
  url: string;
}

/**
 * A rich output of our own runtimes (the local guest and Jupyter): one display of the IPython display
 * protocol, as Jupyter's `display_data` and `execute_result` messages carry it: `display()`, a plot, the
 * last expression of the code when it is not JSON. `data` maps MIME types to their content as the MIME
 * catalogue (./mimeTypes) says: text types (`text/plain`, `text/html`, `image/svg+xml`, …) as strings, binary
 * types (`image/png`, …) as base64 without a `data:` prefix, JSON types (`application/json`, `*+json`) as
 * JSON values. Readers pick the richest type their place ranks (`bestFor`, ./mimeTypes; ./displays).
 */
export interface DisplayOutput {
  type: 'display';
  data: Record<string, unknown>;
  /** Jupyter's metadata of the display, for example `{"image/png": {"width": 640, "height": 480}}`. */
  metadata?: Record<string, unknown>;
  /** The last expression of the code (Jupyter's `execute_result`); absent for `display()` and plots. */
  result?: boolean;
  /** IPython's display id: a later display with the same id and `update` replaces this one. */
  display_id?: string;
  /**
   * Compact text for the model where the bundle's own text would not do: a table's shape, columns and head
   * as markdown (never its HTML).
   */
  summary?: string;
}

export interface FileOutput {
  type: 'file';
  file_id?: string;
  filename?: string;
  container_id?: string;
  path?: string;
  mime_type?: string;
  url?: string;
  bytes?: number;
  /** Why the file could not be copied out of the code's working directory (then there is no `path`). */
  note?: string;
}

export type CodeOutput = LogsOutput | DisplayOutput | ImageOutput | FileOutput;

export interface ExecutionError {
  /** The exception type, for example `ZeroDivisionError`, or a host category such as `Timeout`. */
  type: string;
  message: string;
  /** The formatted traceback, with the user's own line numbers, when there is one. */
  traceback?: string;
  /** The 1-based line of the user's code where the error was raised, when known. */
  line?: number;
  /**
   * Set when the host's setup failed, not the code: `config` (a setting: a URL, a kernel name, a token) or
   * `environment` (something the machine lacks: Python, bubblewrap, a reachable server). The CLI exits 2.
   */
  category?: 'config' | 'environment';
}

export type CodeCallStatus = 'in_progress' | 'interpreting' | 'completed' | 'failed' | 'incomplete';

export interface SandboxInfo {
  kind: 'bubblewrap' | 'none' | 'sandbox-exec';
  network?: boolean;
  limits?: Record<string, string | number>;
  /** bubblewrap: the seccomp deny-list is installed (false where this architecture has none). */
  seccomp?: boolean;
  /** bubblewrap: how the workspace is mounted (`readwrite` can fall back to `readonly`, with a warning). */
  workspace?: 'none' | 'readonly' | 'readwrite';
  /** Review mode: the code's writes to the workspace are staged, and reach it only when kept. */
  staged?: boolean;
}

/** The session an execution ran in (local sessions keep their globals from one execution to the next). */
export interface SessionInfo {
  id: string;
  /** The how-many-th execution of the session this was (1 = a fresh session). */
  execution: number;
  /** The session ended during this execution: its variables are gone. */
  state_lost?: boolean;
}

/** One variable of a session, as the variables view shows it (read without running user code). */
export interface VariableInfo {
  name: string;
  type: string;
  /** A short repr of builtin values, a module's name, a function's parameters, an array's shape and dtype. */
  summary?: string;
  shape?: number[];
  len?: number;
}

export interface VariablesSummary {
  variables: VariableInfo[];
  /** How many there are in all (the list is capped). */
  total: number;
  /** What the session's checkpoints hold (a local session that keeps them: issue 35), against their budgets. */
  checkpoints?: CheckpointUsage;
}

/** How many checkpoints a session holds and their unshared memory, against codeact.rewind.maxCheckpoints and memoryMB. */
export interface CheckpointUsage {
  count: number;
  bytes: number;
  max: number;
  budgetBytes: number;
}

export interface CodeInterpreterCallItem {
  type: 'code_interpreter_call';
  id: string;
  status: CodeCallStatus;
  code: string;
  runtime: RuntimeKind;
  container_id?: string | null;
  outputs: CodeOutput[];
  exit_code?: number | null;
  error?: ExecutionError | null;
  /** The JSON value the code returned (local and Jupyter runtimes). */
  value?: unknown;
  duration_ms?: number;
  sandbox?: SandboxInfo;
  /** Provider sub-tool, for example Anthropic's `bash_code_execution`. */
  tool?: string;
  /** Set when stdout or stderr went over its cap. */
  truncated?: boolean;
  session?: SessionInfo;
  /** What the code changed in the workspace (local runtime, workspace mounted `readwrite`): the card's "N files changed". */
  changes?: FilesChanged;
}

export interface TextEditorItem {
  type: 'text_editor_call';
  id: string;
  status: 'completed' | 'failed';
  runtime: RuntimeKind;
  command: string;
  path?: string;
  input: Record<string, unknown>;
  result?: unknown;
  error?: { code: string; message?: string | null } | null;
}

/**
 * A model function call. `id` is ours (minted for every call); `call_id` is the provider's, kept to answer
 * the call on the wire and never used as a key: OpenAI-compatible and scripted servers reuse ids such as
 * `call_0` from one turn to the next, and even within one response.
 */
export interface FunctionCallItem {
  type: 'function_call';
  /** Our id (absent only in transcripts saved before ids were ours). */
  id?: string;
  call_id: string;
  name: string;
  arguments?: string;
  status?: 'in_progress' | 'completed';
}

export interface FunctionCallOutputItem {
  type: 'function_call_output';
  /** Our id of this output. */
  id?: string;
  /** Our id (`FunctionCallItem.id`) of the call this answers; absent in transcripts saved before ids were ours. */
  item_id?: string;
  /** The provider's id of the call, for the wire. */
  call_id: string;
  name?: string;
  output: string;
  is_error?: boolean;
  /**
   * Images the execution showed, for a model that can see them. Each adapter sends them in its provider's
   * own shape with the result; which ones go in a request (and which become a short text stand-in) is
   * decided per request (src/core/providers/shared/history.ts).
   */
  images?: AttachedImage[];
}

/** An image an execution showed, kept with the function call's output for the model. */
export interface AttachedImage {
  /** `image/png`, `image/jpeg`, `image/gif` or `image/webp`. */
  mime_type: string;
  /** Base64, without a `data:` prefix. */
  data: string;
  width?: number;
  height?: number;
  /** Where it came from, for the stand-in once it is no longer attached: "execution 3". */
  source: string;
}

export interface MessageItem {
  type: 'message';
  id: string;
  role: 'assistant' | 'user';
  text: string;
  /** Thinking text the model produced; never shown as the answer. */
  thinking?: boolean;
  annotations?: unknown[];
}

/** The model's reasoning (Anthropic thinking, Gemini thought parts, `reasoning_content` of local servers). Never the answer. */
interface ReasoningItem {
  type: 'reasoning';
  id: string;
  text: string;
}

export type OutputItem = CodeInterpreterCallItem | TextEditorItem | FunctionCallItem | FunctionCallOutputItem | MessageItem | ReasoningItem;

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens?: number;
  /** Of `input_tokens`, how many the provider read from its prompt cache (included in `input_tokens`). */
  cached_tokens?: number;
}

/** The text an item's `logs` outputs hold: its stdout (the default), its stderr, or both as they were printed. */
export function logsOf(item: { readonly outputs: readonly CodeOutput[] }, stream: StreamName | 'both' = 'stdout'): string {
  return item.outputs
    .filter((o): o is LogsOutput => o.type === 'logs' && (stream === 'both' || (stream === 'stderr') === (o.stream === 'stderr')))
    .map((o) => o.logs)
    .join('');
}
