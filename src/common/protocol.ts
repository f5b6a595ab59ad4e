/**
 * The typed message protocol between the extension host and the chat panel webview.
 *
 * Host -> webview: `HostToWebview`. Webview -> host: `WebviewToHost`. Both are plain JSON. The host must
 * treat every incoming message as untrusted and check it with `parseWebviewMessage` before acting on it.
 *
 * Handshake and transcript delivery:
 * 1. The page loads, renders what it kept in `getState()` at once, and posts `ready` with the conversation
 *    id and the `seq` of the last `events` batch it has applied (0 when it has none).
 * 2. The host answers with `init` (host state: providers, models, keys, tools, trust), then either replays
 *    the `events` batches after that `seq` (see `EventBatcher.replaySince`) or, when it cannot, sends `reset`
 *    with the conversation's whole event list.
 * 3. While a turn runs, the host posts `events` batches: append-only, coalesced, at most one per animation
 *    frame (`createEventBatcher`). `seq` grows by one per batch. A page that sees a gap posts `resync`,
 *    and the host answers as for `ready`.
 */
import type { ApprovalDecision, FileOutput, RuntimeKind, StreamName, VariableInfo } from './events';
import type { CheckpointUsage } from './items';
import type { CodeMode } from './runtimes';
import type {
  ChangeMessage,
  ChangesRevertedMessage,
  FileMissingMessage,
  ImageMessage,
  LocalFileMessage,
  RewindMessage,
  RewoundMessage,
  TurnRewindMessage,
} from './outputMessages';
import type { DeclarationProblem, ToolSourceKind } from './tools';
import type { TranscriptEvent } from './transcript';

export const PROTOCOL_VERSION = 1;

// ---- host state -------------------------------------------------------------------------------------

interface ModelInfo {
  id: string;
  label?: string;
  /** Short note shown next to the model in the picker, for example "hosted sandbox". */
  detail?: string;
}

export interface ProviderChoice {
  /** `openai`, `anthropic`, `gemini`, or an OpenAI-compatible endpoint id. */
  id: string;
  label: string;
  models: ModelInfo[];
  /** An API key is available (SecretStorage or environment). */
  hasKey: boolean;
}

export interface ToolSummary {
  name: string;
  description?: string;
  approval?: 'auto' | 'ask' | 'deny';
  source?: ToolSourceKind;
}

/** A `codeact.tools` declaration that is broken and unavailable, and why (the panel can say "3 tools ready, 1 broken"). */
export interface BrokenToolSummary {
  /** Its position in codeact.tools (-1: codeact.tools itself is not a list). */
  index: number;
  name?: string;
  /** Everything wrong with it, as sentences: the field, the bad value, why, and the fix. */
  message: string;
  /** The same, field by field (absent where a source said it in one sentence). */
  problems?: DeclarationProblem[];
}

export interface ConversationSummary {
  id: string;
  title: string;
  /** Epoch milliseconds. */
  updatedAt: number;
  turns: number;
  provider?: string;
  model?: string;
}

export interface HostState {
  providers: ProviderChoice[];
  provider?: string;
  model?: string;
  /** `local` | `jupyter` for client-side execution; a provider kind for its hosted sandbox. */
  runtime?: RuntimeKind;
  /** codeact.mode: whether the code runs on our runtime or in the provider's sandbox (common/runtimes.ts). */
  mode?: CodeMode;
  tools: ToolSummary[];
  /** Declarations of codeact.tools that are broken, with what to fix (absent or empty: none). */
  brokenTools?: BrokenToolSummary[];
  /** Workspace Trust: false disables execution and workspace-declared tools. */
  trusted: boolean;
  /** A turn runs (the host's view; the panel also derives it from the transcript). */
  busy?: boolean;
  conversationId?: string;
  conversationTitle?: string;
  /** Extension version, shown in the empty state. */
  version?: string;
  /** The open notebook a chat turn works in (absent: none is active, or the host has no notebooks). */
  notebook?: NotebookTargetState | null;
  /** The workspace folder the chat's turns run in, in a multi-root workspace (absent or null: one folder or none). */
  workspace?: WorkspaceState | null;
  /** The interpreter that runs the code (absent: not known). */
  python?: { label: string; path: string; source: string };
  /** codeact.outputs.maxImageMegapixels, in pixels: the panel checks each image's header against it before it draws it (absent: the default). */
  maxImagePixels?: number;
}

/** The folder bar: the workspace's folders, and the one the chat's turns run in (`gone`: no longer open). */
export interface WorkspaceState {
  folders: Array<{ name: string; path: string }>;
  folder?: { name: string; path: string; gone?: boolean };
}

/** The notebook the chat's turns work in: the active notebook editor's. */
export interface NotebookTargetState {
  uri: string;
  /** Its file name. */
  name: string;
  /** It runs on the CodeAct kernel (else its variables are not visible to the agent). */
  codeact: boolean;
  /** The person has not switched the target off: turns work in it. */
  on: boolean;
}

// ---- host -> webview ----------------------------------------------------------------------------

/** Full host state; sent after `ready` and whenever something the panel shows changes. */
interface InitMessage {
  type: 'init';
  protocol: number;
  state: HostState;
}

/** Part of the host state changed (picker selection, keys, tools, trust, busy). */
interface StateMessage {
  type: 'state';
  state: Partial<HostState>;
}

/** One batch of append-only transcript events for the current conversation. */
export interface EventsMessage {
  type: 'events';
  conversationId?: string;
  /** 1 for the first batch of a conversation, then +1 per batch. */
  seq: number;
  events: TranscriptEvent[];
}

/** Replace the transcript: a conversation was reopened or created, or the page asked to resync. */
export interface ResetMessage {
  type: 'reset';
  conversationId?: string;
  title?: string;
  /** The seq of the last batch these events include; the next `events` message has seq + 1. */
  seq: number;
  events: TranscriptEvent[];
  /** Where the page last said it was scrolled in this conversation (a reload comes back there). */
  scroll?: TranscriptScroll;
  /** Show its end, wherever the page was (the conversation was rewound: the place it was at may be gone). */
  toEnd?: boolean;
  /** The host's numbering of `seq` (see `EventBatcherOptions.epoch`): the page says it back in `ready` and `resync`. */
  epoch?: string;
}

/** A transcript's scroll position: following the bottom, or a turn at the top of the view and how far into it. */
export interface TranscriptScroll {
  stuck: boolean;
  turnId?: string;
  offset?: number;
}

/** The conversation list for the history view. */
interface HistoryMessage {
  type: 'history';
  conversations: ConversationSummary[];
}

/** Put text into the input box (for example "Ask Agent with Tools…" with the selection). */
interface SetInputMessage {
  type: 'setInput';
  text: string;
  /** Send it at once instead of leaving it for editing. */
  send?: boolean;
}

interface FocusInputMessage {
  type: 'focusInput';
}

type NoticeAction = { label: string; command: HostCommand };

/** A message the host wants the user to see in the panel (for example "this workspace is not trusted"). */
export interface NoticeMessage {
  type: 'notice';
  level: 'info' | 'warning' | 'error';
  message: string;
  actions?: NoticeAction[];
}

/** The variables view: the session of the latest run (the conversation's, or a Run with Tools document's). */
export interface VariablesMessage {
  type: 'variables';
  sessionId?: string;
  /** "This conversation" or the document's name. */
  label?: string;
  variables: VariableInfo[];
  /** How many the session has in all (the list is capped). */
  total: number;
  /** Why the list is empty (no session yet, runs start fresh, busy). */
  note?: string;
  /** What the session's rewind checkpoints hold (a local session that keeps them). */
  checkpoints?: CheckpointUsage;
}

export type HostToWebview =
  | VariablesMessage
  | FileMissingMessage
  | ChangesRevertedMessage
  | RewoundMessage
  | InitMessage
  | StateMessage
  | EventsMessage
  | ResetMessage
  | HistoryMessage
  | SetInputMessage
  | FocusInputMessage
  | NoticeMessage
  | RevealJobMessage;

/** Scroll a background job's card into view (the notification's "Show"). */
interface RevealJobMessage {
  type: 'revealJob';
  sessionId: string;
  job: number;
}

// ---- webview -> host ----------------------------------------------------------------------------

/**
 * Host commands the panel may ask for. The host maps each to its own action; the panel never names
 * arbitrary VS Code commands.
 */
export const HOST_COMMANDS = ['setApiKey', 'selectModel', 'declareTools', 'openSettings', 'showLog', 'manageTrust', 'openWalkthrough'] as const;
export type HostCommand = (typeof HOST_COMMANDS)[number];

interface ReadyMessage {
  type: 'ready';
  protocol: number;
  conversationId?: string;
  /** The seq of the last `events` batch the page has applied; 0 for none. */
  seq: number;
  /** The page kept a partial transcript (its saved state left out large displays): send it all (`reset`). */
  full?: boolean;
  /** The epoch of the host numbering `seq` is from (the last `reset`'s); another host's or none gets a `reset`. */
  epoch?: string;
}

/** The page saw a gap in `seq` (or could not apply a batch): send the transcript again. */
interface ResyncMessage {
  type: 'resync';
  conversationId?: string;
  seq: number;
  epoch?: string;
}

interface SendMessage {
  type: 'send';
  text: string;
}

interface StopMessage {
  type: 'stop';
}

interface SelectModelMessage {
  type: 'selectModel';
  provider: string;
  model: string;
}

interface CommandMessage {
  type: 'command';
  command: HostCommand;
  /** For `openSettings`: the setting to open the Settings editor at (a `codeact.*` id). */
  setting?: string;
}

/** Settings the panel may open the Settings editor at: CodeAct's own. */
export const SETTING_ID = /^codeact\.[A-Za-z][A-Za-z0-9.]{0,80}$/;

/** A decision on a `codeact.approval.requested`. For `kind: "code"`, `code` carries the edited code (Edit, then Run). */
interface ApprovalReplyMessage {
  type: 'approval';
  approvalId: string;
  decision: ApprovalDecision;
  code?: string;
}

/** An answer to a `codeact.elicitation.requested` form; `content` (accept only): the field values as typed, checked by the host. */
export interface ElicitationReplyMessage {
  type: 'elicitation';
  elicitationId: string;
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | number | boolean | string[]>;
}

interface CopyMessage {
  type: 'copy';
  text: string;
}

interface InsertCodeMessage {
  type: 'insertCode';
  code: string;
}

/** "Run again with tools": run this code in the configured runtime with the managed tools. */
interface RunCodeMessage {
  type: 'runCode';
  code: string;
  /** The execution it came from. */
  itemId?: string;
}

/** Open an execution's full stdout/stderr in an editor (the panel only shows the tail). */
interface OpenFullOutputMessage {
  type: 'openFullOutput';
  itemId: string;
  stream?: StreamName;
}

interface OpenFileMessage {
  type: 'openFile';
  itemId: string;
  file: FileOutput;
}

interface OpenLinkMessage {
  type: 'openLink';
  href: string;
}

interface NewConversationMessage {
  type: 'newConversation';
}

interface HistoryListMessage {
  type: 'history.list';
}

interface HistoryOpenMessage {
  type: 'history.open';
  conversationId: string;
}

interface HistoryDeleteMessage {
  type: 'history.delete';
  conversationId: string;
}

interface HistoryClearMessage {
  type: 'history.clear';
}

/** Continue a conversation of `codeact chat` or an ACP editor (the host's picker: CodeAct: Continue a Conversation from the CLI or ACP…). */
interface HistoryFromCliMessage {
  type: 'history.fromCli';
}

/** Export a conversation (the current one when absent) as a Jupyter notebook; the host asks where to save. */
interface ExportNotebookMessage {
  type: 'exportNotebook';
  conversationId?: string;
}

/** Restart a session (the one the variables view shows, or the conversation's when absent). */
interface RestartSessionMessage {
  type: 'restartSession';
  sessionId?: string;
}

/** Stop a running background job of a session (the job strip's or card's Stop). */
interface StopJobMessage {
  type: 'stopJob';
  sessionId: string;
  job: number;
}

/** "Keep running in background": the running execution `itemId` of the session goes on as a background job. */
interface DetachRunMessage {
  type: 'detachRun';
  sessionId: string;
  itemId: string;
}

/** Read the variables view again. */
interface VariablesRefreshMessage {
  type: 'variables.refresh';
}

/** The transcript stopped scrolling here (the host remembers it for a reload that loses the page's state). */
interface ScrolledMessage {
  type: 'scrolled';
  conversationId: string;
  scroll: TranscriptScroll;
}

/**
 * The notebook target: `on` switches the chat's turns into the notebook or out of it; `useKernel` selects the
 * CodeAct kernel for it; `reveal` shows the cell an execution ran in.
 */
type NotebookMessage =
  | { type: 'notebook.target'; uri: string; on: boolean }
  | { type: 'notebook.useKernel'; uri: string }
  | { type: 'notebook.reveal'; uri: string; itemId: string };

/** The folder bar: run the chat's turns in this workspace folder (an fs path); pick the Python environment. */
type WorkspaceMessage = { type: 'workspace.folder'; path: string } | { type: 'python.select' };

/** An error inside the page, for the host's log. */
interface WebviewErrorMessage {
  type: 'webviewError';
  message: string;
}

export type WebviewToHost =
  | ReadyMessage
  | ResyncMessage
  | SendMessage
  | StopMessage
  | SelectModelMessage
  | CommandMessage
  | ApprovalReplyMessage
  | ElicitationReplyMessage
  | CopyMessage
  | InsertCodeMessage
  | RunCodeMessage
  | OpenFullOutputMessage
  | OpenFileMessage
  | ImageMessage
  | LocalFileMessage
  | ChangeMessage
  | RewindMessage
  | TurnRewindMessage
  | OpenLinkMessage
  | NewConversationMessage
  | HistoryListMessage
  | HistoryOpenMessage
  | HistoryDeleteMessage
  | HistoryClearMessage
  | HistoryFromCliMessage
  | ExportNotebookMessage
  | RestartSessionMessage
  | StopJobMessage
  | DetachRunMessage
  | VariablesRefreshMessage
  | ScrolledMessage
  | NotebookMessage
  | WorkspaceMessage
  | WebviewErrorMessage;
