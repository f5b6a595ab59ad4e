/**
 * The `Runtime` contract: something that executes Python code, streams what happens as events of the
 * shared vocabulary, routes the code's `call_tool` requests to a host handler, and returns one
 * finished `code_interpreter_call` item.
 *
 * The local Python guest and a remote Jupyter kernel both implement it. Both keep state between the
 * executions of one session (`sessionId`) unless configured to start fresh each time.
 */
import type { CodeActEvent, CodeInterpreterCallItem, ExecutionError, JobChanged, JobOutput, RuntimeKind, VariablesSummary } from '../../common/events';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../../common/imageHeader';
import type { FilesChanged } from '../../common/rewind';

/** What the runtime asks of the host when the code calls `await call_tool(name, **args)`. */
export interface ToolCallRequest {
  /** The execution item the call belongs to. */
  itemId: string;
  /** Unique per call within the execution. */
  callId: string;
  name: string;
  arguments: unknown;
  /**
   * Stops the run's clock (its timeout) and this call's duration until the returned function is called. The
   * gateway calls it while the person decides an approval: a person's time is not the code's.
   */
  pause?: () => () => void;
  /** The execution's event stream (the output an install streams into the card). */
  emit?: (event: CodeActEvent) => void;
  /** The background job of the session that makes the call (local/jobTools), when not the execution itself. */
  job?: number;
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
  /** Runs the code as a background job of the session (a fork of it): the item returns at once with its handle. */
  background?: boolean;
  /**
   * The conversation's number of this execution, as the model is told ("execution": 3). A session that
   * keeps outputs (RuntimeSessions.keepsOutputs) files the run's whole output under it, for `output_of(3)`.
   */
  execution?: number;
}

/**
 * What a hook that sees the code first decides (code review): the code to run (the person may have edited
 * it), or why it does not run (the card closes as never run, with this error).
 */
type BeforeRunVerdict = { code: string } | { error: ExecutionError };

/** Sees each execution's code before it runs (codeact.approval.reviewCode); the signal is the run's. */
export type BeforeRun = (request: ExecuteRequest, signal?: AbortSignal) => Promise<BeforeRunVerdict>;

export interface ExecuteOptions {
  signal?: AbortSignal;
  onEvent?: (event: CodeActEvent) => void;
  onToolCall?: ToolCallHandler;
  /** Runs before the code does, and may edit or refuse it (every runtime applies it: execution.ts `afterReview`). */
  beforeRun?: BeforeRun;
}

/**
 * A runtime's sessions: executions with the same sessionId that share state. A runtime without sessions
 * uses {@link noSessions}.
 */
export interface RuntimeSessions {
  /** Executions with the same sessionId share state (a local session, a Jupyter kernel per conversation). */
  readonly persist: boolean;
  /**
   * A session keeps each run's whole stdout and stderr (as the host captured them) for the session's later
   * runs to read: `output_of(n)` and `last_output()` in the guest (see guest/codeact_outputs.py).
   */
  readonly keepsOutputs: boolean;
  /** Its variables can be read between runs ({@link variables}); a Jupyter kernel's are not. */
  readonly readsVariables: boolean;
  /**
   * The sessions live in a session host that outlives this client (core/sessionHost): disposing the runtime
   * leaves them alive, and a client that ends should not close them.
   */
  readonly outlivesClient?: boolean;
  /** True while the session holds live state. */
  has(sessionId: string): boolean;
  /** The session's variables, read without running user code (null when it has none, or while it runs). */
  variables(sessionId: string): Promise<VariablesSummary | null>;
  /** Releases what a session holds (a process tree, a kernel). */
  close(sessionId: string): Promise<void>;
  /** Drops the session's state now (its process tree or kernel restarts); the next run starts fresh. Resolves whether one was alive. */
  restart(sessionId: string): Promise<boolean>;
  /**
   * Sessions that outlive this process (a Jupyter kernel): the id a conversation remembers, taking one back
   * in a new process, and letting go of them all, left running, when this process goes (a reload, the CLI's
   * exit). Absent: a session ends with the runtime.
   */
  readonly handover?: SessionHandover;
  /**
   * The background jobs of the session that ended since the last call, each once (what the model is told at
   * its next step). Absent: the runtime runs no jobs.
   */
  takeJobNotes?(sessionId: string): Promise<JobChanged[]>;
  /**
   * Stops a running background job of the session (the panel's Stop): its whole process tree is killed, and its
   * end comes as a `codeact.job` event (stopped). Rejects with a message that says why not. Absent: no jobs.
   */
  stopJob?(sessionId: string, job: number): Promise<void>;
  /**
   * The session's background jobs as a session host journaled them (each running job's output whole and in order,
   * the starts and ends of the last ones), for a client that attaches later. Absent: the sessions live here.
   */
  jobEvents?(sessionId: string): Promise<Array<JobChanged | JobOutput>>;
  /**
   * "Keep running in background": the session's running execution `itemId` goes on as a background job (its
   * execute() resolves now, saying so); resolves with the job's number, rejects with why not. Absent: not possible.
   */
  detach?(sessionId: string, itemId: string): Promise<number>;
}

interface SessionHandover {
  /** The id to remember for a session (its kernel's), if it has one now or one waits to be taken back. */
  idOf(sessionId: string): string | undefined;
  /** The session's next run takes back the one with this id, if it is still there (else it says so and starts anew). */
  adopt(sessionId: string, id: string): void;
  /** Lets go of the sessions whose id was handed out (idOf), left running for a later process to adopt; the rest end with the runtime's dispose. */
  release(): Promise<void>;
  /** How long a left session may sit unused before it is ended (0: never); a record older than this is swept (core/turn/sessionSweep). */
  readonly idleMs: number;
  /**
   * Ends a session an earlier process left running (by the id a conversation remembers) if it is still there, is
   * this runtime's kind of session, and is idle (never a busy one): 'ended', 'gone' (nothing to end: forget the id),
   * or 'kept' (busy, or another kind: remember it still). Rejects when the server cannot be asked.
   */
  endLeft(id: string): Promise<'ended' | 'gone' | 'kept'>;
}

/** The sessions of a runtime that keeps none: every run starts fresh. */
export const noSessions: RuntimeSessions = {
  persist: false,
  keepsOutputs: false,
  readsVariables: false,
  has: () => false,
  variables: async () => null,
  close: async () => {},
  restart: async () => false,
};

export interface Runtime {
  readonly kind: RuntimeKind;
  /** Its sessions (shared state between executions), or {@link noSessions}. */
  readonly sessions: RuntimeSessions;
  /**
   * Runs the code to completion. Never rejects for failures of the code itself (those come back as
   * an item with `status: "failed"` and an `error`); rejects only for misuse of the API.
   */
  execute(request: ExecuteRequest, options?: ExecuteOptions): Promise<CodeInterpreterCallItem>;
  /**
   * A runtime whose runs outlive their client (a session host): what a session's current run printed so far, in
   * order, then its live rest, until it ends (or its last finished run's events); resolves with its item (null: no run).
   */
  watch?(sessionId: string, o?: WatchOptions): Promise<WatchedRun>;
  /**
   * Puts the workspace files execution `itemId` changed (its item's `changes`; `paths` of them, or all) back as
   * they were before it ran; what was done, path by path. Rejects with why not (a run going on, the execution
   * too old, no changes tracked here).
   */
  revertChanges?(itemId: string, paths?: readonly string[]): Promise<RevertOutcome>;
  /**
   * "Rewind to here": the session's Python state and the workspace files the code changed go back to how they
   * were before execution `point` (a run's item id, or a redo point an earlier rewind returned). Rejects when
   * neither can be.
   */
  rewind?(point: string): Promise<RewindOutcome>;
  /** Review mode (codeact.sandbox.reviewWrites): the code's writes staged for the person, kept or discarded. */
  readonly staged?: StagedChanges;
  dispose(): Promise<void>;
}

/**
 * Review mode: the changes staged in the code's view of the workspace (`list`), put into the workspace as they are
 * there (`keep`), or put back as the workspace has them (`discard`); `paths` default to all of them.
 */
export interface StagedChanges {
  list(): Promise<FilesChanged>;
  keep(paths?: readonly string[]): Promise<RevertOutcome>;
  discard(paths?: readonly string[]): Promise<RevertOutcome>;
}

/** What {@link Runtime.revertChanges} did: files written back, files removed (the run had made them), and those it could not. */
export interface RevertOutcome {
  written: string[];
  removed: string[];
  failed: { path: string; why: string }[];
}

/** What {@link Runtime.rewind} did: each part restored, or why not; `redo` gives back the state before the rewind. */
export interface RewindOutcome {
  python: { restored: true } | { restored: false; why: string };
  files: RevertOutcome | { why: string };
  redo?: string;
}

/** Who watches a run ({@link Runtime.watch}); `signal` stops the run itself, not only the watching. */
export interface WatchOptions {
  onEvent?: (e: CodeActEvent) => void;
  onToolCall?: ToolCallHandler;
  signal?: AbortSignal;
}

/** How a watched run ended: its item, and how many of its oldest events its journal had dropped. */
export interface WatchedRun {
  item: CodeInterpreterCallItem | null;
  dropped: number;
  error?: string;
}

/** Limits shared by the runtimes, with the defaults of the engine. */
export interface RuntimeLimits {
  maxSourceBytes: number;
  maxOutputBytes: number;
  timeoutMs: number;
  maxConcurrentToolCalls: number;
  /** Most tool calls one execution may make (codeact.toolCalls.maxPerRun), however the code sends them. */
  maxToolCallsPerRun: number;
  /** Largest returned value, as JSON (the local guest also keeps it under its frame limit). */
  maxValueBytes: number;
  /** Rich outputs: the largest display (bytes of its bundle), all displays of one execution, and how many. */
  maxDisplayBytes: number;
  maxDisplayTotalBytes: number;
  maxDisplays: number;
  /** Files the code wrote, copied out after each execution: the largest, all of one execution, and how many. */
  maxFileBytes: number;
  maxFilesTotalBytes: number;
  maxFiles: number;
  /** Plots at twice the pixel density (shown at the same size). */
  hidpi: boolean;
  /** Largest image a display may show, in pixels from its header (codeact.outputs.maxImageMegapixels). */
  maxImagePixels: number;
  /** Background jobs running at once in one session (codeact.jobs.maxPerSession; 0: none). */
  maxJobs: number;
  /** Total time of one background job, after which it is stopped (codeact.jobs.maxMinutes). */
  maxJobMs: number;
}

/** Largest protocol frame a guest or kernel may send the host (a call_tool's arguments), unless configured. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** The kernel and the session policy without a setting (`jupyter.kernelName`, `jupyter.sessionPolicy` read them: ../config/keys.ts). */
export const DEFAULT_JUPYTER_SETTINGS = { kernelName: 'python3', sessionPolicy: 'conversation' } as const;

/** The sandbox's resource limits unless configured: the default of codeact.sandbox.limits (config/keys.ts reads it here). */
export const DEFAULT_SANDBOX_LIMITS = {
  memory: '2g',
  cpuSeconds: 300,
  processes: 256,
  fileSize: '256m',
  openFiles: 1024,
} as const;

/** The limits of a run unless configured; the defaults of codeact.timeoutSeconds, toolCalls.maxPerRun, outputs.max*MB, plots.highDPI and jobs.* (config/keys.ts reads them here). */
/** What the rewind store keeps of a writable workspace unless settings say otherwise (../runtime/rewind). */
export const DEFAULT_REWIND_BUDGETS = { storeBytes: 2048 * 1024 * 1024, maxFileBytes: 100 * 1024 * 1024, maxFiles: 20_000 } as const;

export const DEFAULT_LIMITS: RuntimeLimits = {
  maxSourceBytes: 64 * 1024,
  maxOutputBytes: 1024 * 1024,
  timeoutMs: 120_000,
  maxConcurrentToolCalls: 8,
  maxToolCallsPerRun: 10_000,
  maxValueBytes: 4 * 1024 * 1024,
  maxDisplayBytes: 2 * 1024 * 1024,
  maxDisplayTotalBytes: 12 * 1024 * 1024,
  maxDisplays: 200,
  maxFileBytes: 10 * 1024 * 1024,
  maxFilesTotalBytes: 20 * 1024 * 1024,
  maxFiles: 50,
  hidpi: false,
  maxImagePixels: DEFAULT_MAX_IMAGE_PIXELS,
  maxJobs: 4,
  maxJobMs: 60 * 60_000,
};
