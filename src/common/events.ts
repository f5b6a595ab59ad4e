/**
 * The one event vocabulary that every provider and every runtime is normalised into.
 *
 * Names follow the OpenAI Responses streaming events. The CLI prints exactly these objects with
 * `--json`, the transcript store persists them, and the webview reduces them. This module is pure
 * data: no Node, no `vscode`.
 */
import type { ElicitationForm } from './elicitation';
import type { RuntimeKind, StreamName, DisplayOutput, OutputItem, Usage } from './items';

export * from './items';

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
  /** The run can be sent to the background ("Keep running in background": a local session's run, jobs on). */
  detach?: { session_id: string; max_jobs: number };
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
  /** The session's background job whose `call_tool` asks (`item_id`: the execution that started the job). */
  job?: number;
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
  /** The session's background job whose tool call asks (`item_id`: the execution that started the job). */
  job?: number;
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
 * conversation rebuild the same view. `usage` is the summary request's (absent when none was made or it failed).
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
  /** The summary request's usage: a model request too, counted in the turn's and the conversation's totals. */
  usage?: Usage;
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
 * A background job of a local session (execute_tool_code with `background: true`) started or ended.
 * `item_id`: the execution that started it; `message`: what the model is told of it at its next step.
 */
export interface JobChanged {
  type: 'codeact.job';
  session_id: string;
  job: number;
  state: 'running' | 'done' | 'failed' | 'stopped' | 'timed_out' | 'ended';
  item_id?: string;
  /** How long it ran (an ended job). */
  seconds?: number;
  /** Its output was longer than the cap: the middle was cut (job_output(n) says where). */
  output_cut?: boolean;
  /** When it started (ms since the epoch; a running job's event): the panel's elapsed time. */
  started_at?: number;
  /**
   * What it printed (stdout and stderr as printed), as the host kept it from its live output: whole, or its
   * start and end with a line that says how much was cut between (an ended job; absent when it printed nothing).
   */
  output?: string;
  message: string;
}

/**
 * What a running background job printed since its last piece (the panel's job strip and card). The guest sends
 * a job's start whole, then samples it (at most a few KiB ten times a second); `skipped`: bytes left out just
 * before this piece. Not saved: the job's end (`codeact.job`) carries its kept output.
 */
/** What the model was told before its next request of background jobs that ended (`text`: the note it read). */
export interface JobNotesTold {
  type: 'codeact.job.notes';
  session_id: string;
  jobs: number[];
  text: string;
}

export interface JobOutput {
  type: 'codeact.job.output';
  session_id: string;
  job: number;
  delta: string;
  skipped?: number;
  /** A managed-tool call of the job (`delta` is then empty): when it starts, and when it ends (the job's card lists them). */
  tool?: JobToolCall;
}

/** A background job's call of a managed tool, as its card shows it (a run's are `codeact.tool_call.*` events of its card). */
export interface JobToolCall {
  call_id: string;
  name: string;
  status: 'running' | 'ok' | 'error';
  arguments?: unknown;
  output?: unknown;
  error?: string;
  duration_ms?: number;
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
  | JobChanged
  | JobOutput
  | JobNotesTold
  | UsageSummary
  | ResponseCompleted
  | ErrorEvent;
