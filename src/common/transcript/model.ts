/**
 * The view model the chat panel renders (turns, messages, execution cards, tool-call timelines,
 * approvals, usage): a plain, JSON-serialisable object that the reducer updates in place.
 */
import type {
  ContextCompacted,
  JobChanged,
  DisplayOutput,
  ExecutionError,
  FileOutput,
  InstallRequestInfo,
  RuntimeKind,
  SandboxInfo,
  StreamName,
  TextEditorItem,
  Usage,
} from '../events';
import type { UsageTotals } from '../usage';
import type { TurnSource } from './events';
import type { ElicitationForm } from '../elicitation';
import type { FilesChanged } from '../rewind';

// ---- view model -----------------------------------------------------------------------------------

type TurnStatus = 'running' | 'completed' | 'stopped' | 'failed';

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
  /** Cut off by a reload or by VS Code closing (see `TurnEnded.interrupted`). */
  interrupted?: boolean;
  /** Keys into `TranscriptModel.items`, in order of appearance. */
  itemKeys: string[];
  /** Sum over the model responses of the turn (cached tokens and cost in states saved since they existed). */
  usage?: Usage & Partial<UsageTotals>;
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

type ExecStatus = 'writing' | 'running' | 'done' | 'failed' | 'stopped';

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

/**
 * A rich output of an execution (a plot, a table, `display()`), where it stands in the text: after the first
 * `at` characters of the execution's output (`OutputTail.totalChars` when it arrived). Print, plot, print is
 * text, this display, text.
 */
export interface DisplayView {
  at: number;
  output: DisplayOutput;
  /** Bumped when an update (`update_display_data`, same `display_id`) replaced `output`. */
  rev: number;
}

type ToolCallStatus = 'running' | 'ok' | 'error' | 'stopped';

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
  /** Rich outputs in order with the text, at most `MAX_DISPLAYS` (absent in states saved before they existed). */
  displays?: DisplayView[];
  /** Displays past `MAX_DISPLAYS`, not kept ("N more outputs not shown"). */
  displaysDropped?: number;
  /** The displays came (live events, or the finished item): a finished item's are not added again. */
  displaysKnown?: boolean;
  files: FileOutput[];
  hasValue: boolean;
  value?: unknown;
  error?: ExecutionError;
  exitCode?: number | null;
  durationMs?: number;
  /** The runtime cut stdout or stderr at its cap. */
  truncated: boolean;
  /** What its code changed in the workspace ("N files changed"). */
  changes?: FilesChanged;
  /** It ran in a local Python session, which keeps checkpoints: the card offers "Rewind to here" (the host says if it is gone). */
  rewindable?: boolean;
  tools: ToolCallView[];
  /** Pending approvals that refer to this execution. */
  awaiting: number;
  /** It ran as a cell of this notebook (`codeact.notebook.cell`): the card links to the cell. */
  notebook?: { uri: string; name: string };
  /** Forms its tools' MCP servers asked the person to fill in (`codeact.elicitation.*`). */
  elicitations?: ElicitationView[];
  /** While it runs, the person may send it to the background as a job of this session (at most `maxJobs` running). */
  detach?: { sessionId: string; maxJobs: number; /** The session runs `maxJobs` jobs now: no room for one more. */ full?: boolean };
  rev: number;
}

/** A form an MCP server asked for during a tool call: open until the person (or the call ending) answers. */
export interface ElicitationView {
  id: string;
  tool?: string;
  callId?: string;
  /** The background job whose tool call asks. */
  job?: number;
  form: ElicitationForm;
  /** What was wrong with the last answer, per field key ('' for the whole form). */
  problems?: Record<string, string>;
  status: 'open' | 'accept' | 'decline' | 'cancel';
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

type ApprovalStatus = 'pending' | 'resolved' | 'expired';

export interface ApprovalView {
  kind: 'approval';
  key: string;
  turnId: string;
  id: string;
  approvalKind: 'tool' | 'code' | 'install';
  itemId?: string;
  name?: string;
  arguments?: unknown;
  code?: string;
  install?: InstallRequestInfo;
  /** A background job's call asks: its number, and the first line of the code that started it (when that card is known). */
  job?: number;
  jobCode?: string;
  /** `expired`: nobody answered before the run or turn ended (`reason` says what happened, when known). */
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
  /** A retry notice: one per turn, updated by each retry, gone once a response arrives or the turn ends. */
  retry?: boolean;
  /** No longer shown. */
  done?: boolean;
  rev: number;
}

/**
 * The compaction boundary (`codeact.context.compacted`): "Earlier turns summarised", with the token counts
 * before and after and the summary. Nothing before it is removed from the transcript.
 */
export interface CompactionView {
  kind: 'compaction';
  key: string;
  turnId: string;
  beforeTokens: number;
  afterTokens: number;
  /** At most `MAX_SUMMARY_CHARS` (the saved conversation keeps the whole event). */
  summary: string;
  keptTurns: number;
  method: ContextCompacted['method'];
  rev: number;
}

/**
 * A background job (`codeact.job`, `codeact.job.output`): the card in the turn whose execution started it, and
 * a row of the job strip while it runs.
 */
export interface JobView {
  kind: 'job';
  key: string;
  turnId: string;
  sessionId: string;
  job: number;
  /** The execution that started it. */
  itemId?: string;
  /** What started it, as the person reads it: the first line of that execution's code (absent when unknown). */
  what?: string;
  status: JobChanged['state'];
  /** When it started (ms since the epoch), when known. */
  startedAt?: number;
  /** How long it ran (an ended job). */
  seconds?: number;
  /** Its live output (a bounded tail; an ended job's is the output the host kept). */
  output: OutputTail;
  /** Bytes the guest left out of the live output (it printed faster than it is sent), or the host cut. */
  skipped: number;
  /** Its calls of managed tools while it runs (the last ones; not saved: a reopened conversation's card has none). */
  tools?: ToolCallView[];
  /** What the model is told of its end. */
  message?: string;
  rev: number;
}

/** What the model was told of jobs that ended (`codeact.job.notes`): a card of its own, not a message of the person. */
export interface JobNotesView {
  kind: 'jobNotes';
  key: string;
  turnId: string;
  jobs: number[];
  text: string;
  rev: number;
}

/** The longest compaction summary the view model keeps. */
export const MAX_SUMMARY_CHARS = 64 * 1024;

export type ItemView = MessageView | ExecView | FunctionView | EditorView | ApprovalView | ErrorView | NoticeView | CompactionView | JobView | JobNotesView;

/** How full the context window was at the latest model request (`codeact.context.usage`). */
interface ContextState {
  used_tokens: number;
  window_tokens: number;
  compact_at_tokens: number;
}

export interface TranscriptModel {
  turns: TurnView[];
  items: Record<string, ItemView>;
  /**
   * Redirects: an item key that a later turn reused (transcripts saved before ids were ours) -> that turn's
   * view; `c:<provider call id>` -> the latest function call with that call id (for outputs saved without our id).
   */
  aliases: Record<string, string>;
  /** Usage summed over every turn (absent until a response reported usage). */
  usage?: UsageTotals;
  /** The window at the latest model request (absent until the host reports one). */
  context?: ContextState;
  /** Background jobs' cards in the order they started (keys into `items`; the strip shows the running ones). */
  jobs?: string[];
  /** Events applied so far. */
  events: number;
  /** Counter for generated ids (implicit turns, errors, notices). */
  serial: number;
}

export type TranscriptChange = { kind: 'turn'; id: string; added: boolean } | { kind: 'item'; key: string; turnId: string; added: boolean };

/** Caps of the visible output tail (per execution). The full output stays with the host. */
export const OUTPUT_TAIL_MAX_LINES = 2000;
export const OUTPUT_TAIL_MAX_CHARS = 256 * 1024;

/** Rich outputs the view model keeps per execution; the rest are counted. */
export const MAX_DISPLAYS = 200;

/** Names of the model-facing tools whose calls are shown as execution cards, not as function calls. */
export const CODE_TOOL_NAMES: readonly string[] = ['execute_tool_code', 'execute_code'];

export function createTranscript(): TranscriptModel {
  return { turns: [], items: {}, aliases: {}, events: 0, serial: 0 };
}

/** An item's key in `items`: a letter for its kind, then its id. */
const keyOf =
  <Id extends string | number>(kind: string) =>
  (id: Id): string =>
    `${kind}:${id}`;
/** A message's key, by its item id. */
export const messageKey = keyOf<string>('m');
/** An execution's key, by its item id. */
export const execKey = keyOf<string>('x');
/** A function call's key, by our item id. */
export const functionKey = keyOf<string>('f');
/** The alias of the latest function call with a provider's call id (outputs saved before ids were ours). */
export const callAliasKey = keyOf<string>('c');
/** A compaction's key, by its serial. */
export const compactionKey = keyOf<number>('k');
/** A background job's card, by its session, number and a serial (a restarted session numbers its jobs from 1 again). */
export const jobKey = keyOf<string>('j');

/** An approval's key, by its approval id. */
export const approvalKey = keyOf<string>('a');

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
