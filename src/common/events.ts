/**
 * The one event vocabulary that every provider and every runtime is normalised into.
 *
 * Names follow the OpenAI Responses streaming events. The CLI prints exactly these objects with
 * `--json`, the transcript store persists them, and the webview reduces them. This module is pure
 * data: no Node, no `vscode`.
 */
import type { ElicitationForm } from './elicitation';

export type RuntimeKind = 'local' | 'jupyter' | 'openai' | 'anthropic' | 'gemini';

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
 * last expression of the code when it is not JSON. `data` maps MIME types to their content: text types
 * (`text/plain`, `text/html`, `text/markdown`, `text/latex`, `image/svg+xml`) as strings, binary types
 * (`image/png`, `image/jpeg`, `image/gif`, `image/webp`) as base64 without a `data:` prefix, JSON types
 * (`application/json`, `*+json`) as JSON values. Readers pick the richest type they can show safely
 * (src/common/displays.ts).
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

// ---- events ---------------------------------------------------------------------------------

/**
 * The answer's text. (`thinking` marked reasoning in transcripts saved before reasoning had events of its
 * own; readers still accept it. Nothing emits it any more.)
 */
interface OutputTextDelta {
  type: 'response.output_text.delta';
  item_id: string;
  delta: string;
  thinking?: boolean;
}
interface OutputTextDone {
  type: 'response.output_text.done';
  item_id: string;
  text: string;
  thinking?: boolean;
}

/** The model's reasoning, on an item of type `reasoning`: a consumer that reads only `output_text` sees the answer alone. */
interface ReasoningTextDelta {
  type: 'response.reasoning_text.delta';
  item_id: string;
  delta: string;
}
interface ReasoningTextDone {
  type: 'response.reasoning_text.done';
  item_id: string;
  text: string;
}

interface CodeCallInProgress {
  type: 'response.code_interpreter_call.in_progress';
  item_id: string;
  runtime?: RuntimeKind;
}
interface CodeDelta {
  type: 'response.code_interpreter_call_code.delta';
  item_id: string;
  delta: string;
}
interface CodeDone {
  type: 'response.code_interpreter_call_code.done';
  item_id: string;
  code: string;
}
interface CodeInterpreting {
  type: 'response.code_interpreter_call.interpreting';
  item_id: string;
}
interface CodeCompleted {
  type: 'response.code_interpreter_call.completed';
  item_id: string;
}

interface OutputItemAdded {
  type: 'response.output_item.added';
  item: OutputItem;
}
interface OutputItemDone {
  type: 'response.output_item.done';
  item: OutputItem;
}

interface FunctionArgsDelta {
  type: 'response.function_call_arguments.delta';
  item_id: string;
  call_id?: string;
  delta: string;
}
interface FunctionArgsDone {
  type: 'response.function_call_arguments.done';
  item_id: string;
  call_id?: string;
  name?: string;
  arguments: string;
}

interface OutputDelta {
  type: 'codeact.output.delta';
  item_id: string;
  stream: StreamName;
  delta: string;
}

/**
 * A rich output of a running local or Jupyter execution, in order with its `codeact.output.delta` text
 * (print, plot, print arrive in that order). `update`: it replaces the earlier display of the execution with
 * the same `display_id` (IPython's `update_display_data`), where it stands.
 */
interface OutputDisplay {
  type: 'codeact.output.display';
  item_id: string;
  output: DisplayOutput;
  update?: boolean;
}

/**
 * `kind: "discovery"` marks the guest's tool-discovery calls (`search_tools`, `describe_tool`, under the
 * reserved names `codeact.*`): they read the tool list, run no tool, and can be shown quietly.
 */
type ToolCallKind = 'discovery';
interface ToolCallStarted {
  type: 'codeact.tool_call.started';
  item_id: string;
  call_id: string;
  name: string;
  arguments: unknown;
  kind?: ToolCallKind;
}
export interface ToolCallCompleted {
  type: 'codeact.tool_call.completed';
  item_id: string;
  call_id: string;
  name: string;
  output?: unknown;
  error?: string;
  duration_ms: number;
  kind?: ToolCallKind;
}

export type ApprovalDecision = 'allow_once' | 'allow_session' | 'allow_always' | 'deny';
interface ApprovalRequested {
  type: 'codeact.approval.requested';
  approval_id: string;
  item_id?: string;
  kind: 'tool' | 'code' | 'install';
  name?: string;
  arguments?: unknown;
  code?: string;
  /** For `kind: "install"` (the code's install_packages): everything the person approves, shown in full. */
  install?: InstallRequestInfo;
}

/** What an install_packages approval shows: the exact specs, where they go, and the pip arguments. */
export interface InstallRequestInfo {
  packages: string[];
  /** The interpreter installed for. */
  python: string;
  /** "Python 3.11.2, virtual environment /w/.venv". */
  environment: string;
  /** A virtual environment made first (the session's Python is a system one), and why. */
  create_venv?: string;
  refused?: string;
  tool: 'pip' | 'uv';
  install_args: string[];
}
/**
 * How an approval ended: the person's decision, or `expired` when nobody answered before the run ended (Stop,
 * the conversation closed); `reason` then says what happened. An unanswered approval is never a `deny`.
 */
export type ApprovalResolution = ApprovalDecision | 'expired';
interface ApprovalResolved {
  type: 'codeact.approval.resolved';
  approval_id: string;
  decision: ApprovalResolution;
  /** Why: for `expired`, what ended the wait ("no answer: the run was stopped"). */
  reason?: string;
}

/**
 * An MCP server asks the person to fill in a form (elicitation) during a tool call of the execution
 * `item_id`: its card is in that execution's card. Sent again with the same id and `problems` when an
 * answer did not pass the requested schema. What the person typed is never in an event.
 */
interface ElicitationRequested {
  type: 'codeact.elicitation.requested';
  elicitation_id: string;
  item_id: string;
  call_id?: string;
  tool?: string;
  form: ElicitationForm;
  problems?: Record<string, string>;
}
interface ElicitationResolved {
  type: 'codeact.elicitation.resolved';
  elicitation_id: string;
  item_id: string;
  /** `cancel` also when the call ended first. */
  action: 'accept' | 'decline' | 'cancel';
}

interface Retrying {
  type: 'codeact.retry';
  attempt: number;
  delay_ms: number;
  status?: number;
  message: string;
}

/**
 * The context budget of one model request, emitted before it is sent: the tokens it is estimated to use
 * (the provider's reported usage of the last response plus an estimate of what is new, never less than
 * an estimate of the whole request), the model's context window less the room kept for the answer, and
 * the point where compaction starts (codeact.context.compactAt of it).
 */
export interface ContextUsage {
  type: 'codeact.context.usage';
  used_tokens: number;
  window_tokens: number;
  compact_at_tokens: number;
}

/**
 * Older turns were compacted before a request (at most once per request): `stand-ins` replaced old tool
 * results by short notes, `summary` replaced the older turns by a summary the model wrote, `fallback` by a
 * deterministic one (the summary request failed). The saved conversation keeps every item: this event is
 * the boundary. `summary` is the text the model now reads in place of the older turns ('' for stand-ins);
 * `kept_turns` how many recent steps stay verbatim. `keep_from`/`stand_ins_to` (item ids) let a reopened
 * conversation rebuild the same view.
 */
export interface ContextCompacted {
  type: 'codeact.context.compacted';
  turn_id: string;
  before_tokens: number;
  after_tokens: number;
  summary: string;
  kept_turns: number;
  method: 'stand-ins' | 'summary' | 'fallback';
  /** The first item after the summary (absent: no summary yet). */
  keep_from?: string;
  /** Tool results before this item are stand-ins. */
  stand_ins_to?: string;
}

/** A session of the local runtime started fresh or ended (idle, evicted, restarted, crashed, closed). */
export interface SessionChanged {
  type: 'codeact.session';
  session_id: string;
  state: 'started' | 'ended';
  reason?: 'idle' | 'evicted' | 'restarted' | 'crashed' | 'closed' | 'interrupt';
  message: string;
}

/**
 * Tokens and cost of the turn and of the whole conversation, and the window at the last request: what
 * `codeact chat --json` prints as its last line (the extension never emits it). Costs only where a price is
 * known (src/common/prices.ts, dated `prices_as_of`); `unpriced` counts the requests left out of `cost_usd`.
 */
export interface UsageSummary {
  type: 'codeact.usage.summary';
  conversation_id: string;
  turn: UsageTotalsShape;
  conversation: UsageTotalsShape;
  context?: { used_tokens: number; window_tokens: number; compact_at_tokens: number };
  prices_as_of?: string;
}

/** Usage summed over model requests (src/common/usage.ts). */
export interface UsageTotalsShape {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  total_tokens: number;
  cost_usd?: number;
  unpriced: number;
}

interface ResponseCompleted {
  type: 'response.completed';
  response: { id: string; usage?: Usage; container_id?: string | null };
}
interface ErrorEvent {
  type: 'error';
  message: string;
  code?: string;
}

/**
 * The execution runs as a cell of an open notebook (the agent works in the notebook, on its session):
 * `notebook` is the notebook's URI, `name` what to call it; the card links to the cell (found by `item_id` in
 * the cell's metadata, wherever edits moved it).
 */
interface NotebookCell {
  type: 'codeact.notebook.cell';
  item_id: string;
  notebook: string;
  name: string;
}

export type CodeActEvent =
  | ContextUsage
  | NotebookCell
  | ContextCompacted
  | OutputTextDelta
  | OutputTextDone
  | ReasoningTextDelta
  | ReasoningTextDone
  | CodeCallInProgress
  | CodeDelta
  | CodeDone
  | CodeInterpreting
  | CodeCompleted
  | OutputItemAdded
  | OutputItemDone
  | FunctionArgsDelta
  | FunctionArgsDone
  | OutputDelta
  | OutputDisplay
  | ToolCallStarted
  | ToolCallCompleted
  | ApprovalRequested
  | ApprovalResolved
  | ElicitationRequested
  | ElicitationResolved
  | Retrying
  | SessionChanged
  | UsageSummary
  | ResponseCompleted
  | ErrorEvent;

/** The text an item's `logs` outputs hold: its stdout (the default), its stderr, or both as they were printed. */
export function logsOf(item: { readonly outputs: readonly CodeOutput[] }, stream: StreamName | 'both' = 'stdout'): string {
  return item.outputs
    .filter((o): o is LogsOutput => o.type === 'logs' && (stream === 'both' || (stream === 'stderr') === (o.stream === 'stderr')))
    .map((o) => o.logs)
    .join('');
}
