/**
 * The extension's controller: it composes the parts and runs the turns (core/turn: prompts as chat turns, code as
 * code turns), with stop, the variables view and the one trust gate. Its parts: ./conversations (the open one,
 * history, a document's), ./runtimeCache, ./approvals, ./workspaceTools. VS Code is reached only through the `*.apis.ts` seams.
 */
import { MODES } from '../common/runtimes';
import type { CodeActEvent, CodeInterpreterCallItem, FileOutput, SessionChanged } from '../common/events';
import type { ConversationSummary, HostState } from '../common/protocol';
import type { TranscriptEvent, TurnSource } from '../common/transcript';
import type { AgentResult } from '../core/agent/agent';
import { TranscriptStore, titleFrom, type Conversation } from '../core/agent/transcriptStore';
import { LocalRuntime } from '../core/runtime/local/localRuntime';
import type { ToolSet } from '../core/gateway/toolSet';
import { disposeDefaultMcpPool } from '../core/tools/sources/mcp/pool';
import { isTurnMarker, runChatTurn, runCodeTurn } from '../core/turn/turns';
import { sweepLeftSessions } from '../core/turn/sessionSweep';
import { Approvals, NO_ANSWER, type PendingApprovalInfo } from './approvals';
import { hostStateOf } from './hostState';
import { HostFacts } from './hostStateCache';
import { downloadHostedFile, providerFor } from './providers';
import { RuntimeCache, documentSessionId } from './runtimeCache';
import { ConversationMemory, openedNotice } from './conversationMemory';
import { Reattacher } from './reattach';
import { Conversations, type RunDocument } from './conversations';
import type { CodeActSettings } from './settings';
import { VariablesTracker, type SessionVariables } from './sessionVariables';
import { WorkspaceTools } from './workspaceTools';
import type { CellRunOptions } from './notebook/kernelRunner';
import type { NotebookTurn } from './notebook/agentTarget';
import { UntrustedWorkspaceError } from './untrusted';
import { Emitter, type Unsubscribe } from '../common/emitter';
import { ChatFolder } from './chatFolder';
import { NotebookRuns } from './notebookRuns';
import { RecentOutputs } from './recentOutputs';
import { TurnSlot } from './turnSlot';
import type { CancellationToken, Log, ControllerApis, ControllerDeps } from './controller.apis';
import { forDisplay } from '../common/untrusted';
export { UntrustedWorkspaceError };

/** What a front door adds to a turn: its listener (the vocabulary, no turn markers) and VS Code's cancellation. */
type TurnExtras = { onEvent?: (e: CodeActEvent) => void; token?: CancellationToken };
type RunExtras = TurnExtras & { document?: RunDocument; request?: Parameters<typeof runCodeTurn>[0]['request'] };

export class CodeActController {
  readonly store: TranscriptStore;
  readonly log: Log;
  private readonly events = new Emitter<TranscriptEvent>((err) => this.log.error(`event listener failed: ${(err as Error).message}`));
  private readonly stateChanged = new Emitter<void>((err) => this.log.error(`state listener failed: ${(err as Error).message}`));
  private readonly variables: VariablesTracker;
  private readonly turn = new TurnSlot();
  /** VS Code is closing or reloading: a turn stopped now was interrupted, not stopped by the user. */
  private closing = false;
  readonly memory: ConversationMemory;
  /** The open conversation, the history, a document's conversation (./conversations). */
  private readonly conversations: Conversations;
  private readonly outputs = new RecentOutputs();
  private readonly apis: ControllerApis;
  private readonly secrets: ControllerDeps['secrets'];
  /** Settings and key presence, resolved when they change (./hostStateCache). */
  private readonly facts: HostFacts;
  readonly runtimes: RuntimeCache;
  readonly approvals: Approvals;
  readonly tools: WorkspaceTools;
  private readonly notebookRuns: NotebookRuns;
  /** The workspace folder the chat's turns run in (the conversation's, the picked one, the active editor's). */
  readonly folders: ChatFolder;
  /** The restored conversation reattached to its session when a session host kept it (./reattach). */
  private readonly restored: Promise<unknown>;
  private readonly reattacher: Reattacher;
  /** Set by the panel: can it show approval cards right now? */
  panelVisible: () => boolean = () => false;

  constructor(private readonly deps: ControllerDeps) {
    this.store = new TranscriptStore(deps.storeDir);
    this.log = deps.log;
    this.apis = deps.apis;
    this.secrets = deps.secrets;
    this.facts = new HostFacts({
      apis: this.apis,
      secrets: this.secrets,
      log: this.log,
      changed: (what) => {
        if (what === 'settings') this.tools.invalidate();
        this.fireState();
      },
    });
    this.folders = new ChatFolder(this.apis, () => this.conversation);
    this.runtimes = new RuntimeCache({
      apis: deps.runtimeApis,
      settings: (f) => this.settingsFor(f),
      jupyterToken: () => this.secrets.jupyterToken(),
      workspaceFolder: () => this.folders.current().folder,
      log: this.log,
      onSessionEvent: (e) => this.onSessionEvent(e),
      onJobEvent: (e) => this.reattacher.onJobEvent(e),
      trusted: () => this.trusted,
      // Kernels left running for conversations not continued within the idle time end (not the open one's).
      built: (rt) => void sweepLeftSessions(this.store, rt, { log: (l) => this.log.info(l), skip: (id) => id === this.conversation?.id }),
    });
    this.approvals = new Approvals({
      apis: deps.approvalsApis,
      emit: (e) => this.emit(e),
      log: this.log,
      panelVisible: () => this.panelVisible(),
      changed: () => this.fireState(),
    });
    this.tools = new WorkspaceTools({
      apis: this.apis,
      lmTools: deps.lmTools,
      settings: (f) => this.settingsFor(f),
      trusted: () => this.trusted,
      workspaceFolder: () => this.folders.current().folder,
      approvals: this.approvals,
      log: this.log,
      pythonFor: (folder, setting) => deps.runtimeApis.pythonEnv?.(folder, setting)?.python,
      switchPython: (folder, python) => deps.approvalsApis.savePythonPath?.(folder, python) ?? Promise.resolve(),
    });
    this.variables = new VariablesTracker(this.runtimes, () => this.conversation);
    this.notebookRuns = new NotebookRuns({
      runtimes: this.runtimes,
      tools: this.tools,
      variables: this.variables,
      requireTrust: (w) => this.requireTrust(w),
      settings: (f) => this.settingsFor(f),
      folderOfUri: (u) => this.apis.folderOfUri?.(u),
      refreshVariables: () => void this.refreshVariables(),
    });
    this.memory = new ConversationMemory(this.store, deps.workspaceState);
    this.conversations = new Conversations({
      store: this.store,
      memory: this.memory,
      folders: this.folders,
      settingsFor: (f) => this.settingsFor(f),
      busy: () => this.turn.busy,
      sessions: (id) => this.runtimes.of(id)?.sessions,
      variables: this.variables,
      changed: () => this.fireState(),
      refreshVariables: () => void this.refreshVariables(),
    });
    this.reattacher = new Reattacher({
      conversation: () => this.conversation,
      conversations: this.conversations,
      trusted: () => this.trusted,
      runtimes: this.runtimes,
      folder: () => this.folders.current().folder,
      log: this.log,
      variables: this.variables,
      refreshVariables: () => this.refreshVariables(),
      notify: (e) => this.notify(e),
      emit: (e) => this.emit(e),
      toolHandler: async () => (await this.tools.gateway(false, this.folders.current().folder)).handler,
      inform: (m) => this.apis.showInformationMessage(m),
    });
    this.restored = this.reattacher.reattach();
  }

  /** After a reattach, once the panel shows the conversation: its jobs as the session host journaled them (./reattach). */
  replayJobs(): Promise<void> {
    // And a run an earlier window let go of, watched to its end (not awaited: it may run long).
    void this.reattacher.watchLeftRun(this.restored);
    return this.reattacher.replayJobs(this.restored);
  }

  /** What the panel says once about the conversation restored at start (after the reattach: gone or not). */
  async restoredNotice(): Promise<string | undefined> {
    await this.restored;
    return this.memory.takeNotice();
  }

  /** The open conversation (./conversations). */
  private get conversation(): Conversation | undefined {
    return this.conversations.current;
  }

  // ---- state ----------------------------------------------------------------------------------

  /** The settings of the chat's folder (./chatFolder). */
  get settings(): CodeActSettings {
    return this.settingsFor(this.folders.current().folder);
  }

  /** The settings of a workspace folder (fs path; undefined: the first). */
  settingsFor(folder: string | undefined): CodeActSettings {
    return this.facts.settings(folder);
  }

  get trusted(): boolean {
    return this.apis.isTrusted();
  }

  get busy(): boolean {
    return this.turn.busy;
  }

  get currentConversation(): Conversation | undefined {
    return this.conversation;
  }

  /** Said to the model once, at conversation `id`'s next turn (default: the open one's; a rewind the person did in the panel). */
  noteForModel(note: string, id = this.conversation?.id): void {
    if (id) this.conversations.noteForNextTurn(id, note);
  }

  onEvent(listener: (e: TranscriptEvent) => void): Unsubscribe {
    return this.events.on(listener);
  }

  onVariables(listener: (v: SessionVariables) => void): Unsubscribe {
    return this.variables.onVariables(listener);
  }

  /** Reads the variables of the session the view shows, and tells the listeners. */
  refreshVariables(): Promise<SessionVariables> {
    return this.variables.refresh();
  }

  /** Restarts a session: the conversation's (default) or a document's. Returns whether one was alive. */
  async restartSession(sessionId?: string): Promise<boolean> {
    const id = sessionId ?? this.conversation?.id;
    const runtime = this.runtimes.of(id);
    if (!id || !runtime) return false;
    if (this.turn.busy) this.stop();
    const had = await runtime.sessions.restart(id);
    this.log.info(`session ${id} restarted`);
    void this.refreshVariables();
    return had;
  }

  /** The live session ids the Restart command can offer: the conversation's and the documents'. */
  liveSessions(): Array<{ id: string; label: string }> {
    return this.variables.liveSessions();
  }

  /** A session started fresh or ended: said in the conversation it belongs to (the open one), and logged. */
  private onSessionEvent(e: SessionChanged): void {
    this.log.info(`session ${e.session_id}: ${e.state}${e.reason ? ` (${e.reason})` : ''} ${e.message}`);
    if (e.state === 'ended' && (e.session_id === this.conversation?.id || this.runtimes.documentSessions.has(e.session_id))) this.emit(e);
    if (e.session_id === this.variables.shown?.id || e.session_id === this.conversation?.id) void this.refreshVariables();
  }

  /** Stops a running background job of a session (the panel's Stop), or sends a running execution to the background (detachRun: its job number); rejects with why not. */
  stopJob(sessionId: string, job: number): Promise<void> {
    return this.reattacher.stopJob(sessionId, job);
  }
  detachRun = (sessionId: string, itemId: string): Promise<number> => this.reattacher.detach(sessionId, itemId);

  onState(listener: () => void): Unsubscribe {
    return this.stateChanged.on(listener);
  }

  fireState(): void {
    void this.apis.executeCommand('setContext', 'codeact.running', this.busy);
    void this.apis.executeCommand('setContext', 'codeact.awaitingApproval', this.pendingApprovals().length > 0);
    this.stateChanged.fire();
  }

  toolSet(): ToolSet {
    return this.tools.toolSet();
  }

  async hostState(): Promise<HostState> {
    const state = await hostStateOf({
      settings: this.settings,
      hasKey: (id) => this.facts.hasKey(id),
      toolSet: this.toolSet(),
      trusted: this.trusted,
      busy: this.busy,
      conversation: this.conversation,
      version: this.deps.version,
    });
    return { ...state, workspace: this.folders.state() ?? null, ...this.deps.hostExtras?.() };
  }

  /** A workspace folder was removed: its runtime goes. */
  folderRemoved(folder: string): void {
    void this.runtimes.disposeFolder(folder);
  }

  /** The person picked a folder in the panel's bar: the chat's turns run there (a fresh session: the model is told). */
  pickFolder(folder: string): void {
    if (this.turn.busy) throw new Error('Stop the running turn before changing its folder (CodeAct: Stop).');
    if (this.folders.pick(folder)) this.conversations.sessionMoved();
    this.fireState();
  }

  // ---- conversations --------------------------------------------------------------------------

  /** Saves an event in the open conversation and tells the listeners. */
  private emit(e: TranscriptEvent): void {
    this.conversation?.appendEvent(e);
    this.notify(e);
  }

  /** A turn's listener: every saved event to the listeners, and the vocabulary (no turn markers) to the caller's. */
  private relay(onEvent?: (e: CodeActEvent) => void): (e: TranscriptEvent) => void {
    return (e) => {
      this.notify(e);
      if (!isTurnMarker(e)) onEvent?.(e);
    };
  }

  /** Tells the listeners (the panel, the participant) about an event already saved. */
  private notify(e: TranscriptEvent): void {
    this.outputs.note(e);
    this.events.fire(e);
  }

  newConversation(): void {
    this.conversations.startNew();
  }

  /** Opens a conversation from history, or `from` another store (`notice`: what the panel says); a session a running session host kept for it is reattached, not said gone. */
  async openConversation(id: string, from?: { store: TranscriptStore; replace: boolean }): Promise<{ conversation: Conversation; notice?: string }> {
    const opened = from ? this.conversations.continueFrom(from.store, id, from.replace) : this.conversations.reopen(id);
    if (!(await this.reattacher.reattach())) return opened;
    return { conversation: opened.conversation, notice: openedNotice(opened.conversation, false) };
  }

  listConversations(): ConversationSummary[] {
    return this.conversations.list();
  }

  deleteConversation(id: string): void {
    this.conversations.delete(id);
  }

  clearHistory(): void {
    this.conversations.clear();
  }

  fullOutput(itemId: string): CodeInterpreterCallItem | undefined {
    return this.outputs.find(itemId, this.conversation?.events);
  }

  /** Downloads a file the provider's hosted sandbox produced (OpenAI container files, Anthropic Files API). */
  downloadHostedFile(file: FileOutput): Promise<{ bytes: Uint8Array; filename: string }> {
    return downloadHostedFile(this.settings, (p) => this.secrets.apiKey(p), file);
  }

  // ---- approvals --------------------------------------------------------------------------------

  /** The approvals waiting for the person, oldest first (Run with Tools and the status bar say so). */
  pendingApprovals(): PendingApprovalInfo[] {
    return this.approvals.pendingList();
  }

  /** "Show Pending Approval": its card in the panel, or a modal dialog when the panel is hidden. */
  showPendingApproval(): void {
    const first = this.pendingApprovals()[0];
    if (!first) return;
    if (this.panelVisible()) void this.apis.executeCommand('codeact.openChat');
    else this.approvals.askInModal(first.id);
  }

  // ---- running ----------------------------------------------------------------------------------

  /** A turn starts (one at a time): its signal aborts on stop and on VS Code's cancellation of the request. */
  private begin(label: string, token?: CancellationToken): AbortSignal {
    const signal = this.turn.begin(label, token);
    this.fireState();
    return signal;
  }

  private end(): void {
    this.turn.end();
    this.conversation?.flush();
    this.fireState();
    void this.refreshVariables();
  }

  stop(): void {
    if (!this.turn.busy) return;
    this.log.info(`stop requested: ${this.turn.label}`);
    // Before the abort reaches them: an approval left open was not answered, and says why.
    this.approvals.expirePending(NO_ANSWER.stopped);
    this.turn.abort();
  }

  /** The one trust gate (the doors render its refusal): code runs only in a trusted workspace, a prompt too unless hosted mode runs it. Undefined: allowed. */
  trustGate(what: string, turn: 'code' | 'prompt' = 'code', folder = this.folders.current().folder): UntrustedWorkspaceError | undefined {
    if (this.trusted || (turn === 'prompt' && !MODES[this.settingsFor(folder).mode].ourRuntime)) return undefined;
    return new UntrustedWorkspaceError(what);
  }

  requireTrust(what: string, turn: 'code' | 'prompt' = 'code', folder?: string): void {
    const refused = this.trustGate(what, turn, folder);
    if (refused) throw refused;
  }

  /** Sends a prompt to the agent. Events stream to the listeners (panel, participant). */
  async send(prompt: string, source: TurnSource = 'chat', extra?: TurnExtras & { notebook?: NotebookTurn }): Promise<AgentResult | undefined> {
    const folder = this.folders.require();
    this.requireTrust('Running code', 'prompt', folder);
    const s = this.settingsFor(folder);
    const signal = this.begin(titleFrom(prompt), extra?.token);
    const convo = this.conversations.ensure(prompt);
    try {
      const turn = await runChatTurn({
        conversation: convo,
        prompt,
        source,
        config: s,
        provider: () => providerFor(s, (p) => this.secrets.apiKey(p)),
        interrupted: () => this.closing,
        // Hosted mode runs code in the provider's sandbox; the local runtime object is never started there.
        runtime: async () =>
          !MODES[s.mode].ourRuntime ? new LocalRuntime() : (extra?.notebook?.wrap ?? ((r) => r))(await this.runtimes.get(folder, convo.id)),
        agent: { beforeRun: !MODES[s.mode].ourRuntime ? undefined : this.approvals.beforeRun(this.settingsFor(folder).reviewCode) },
        gateway: await this.tools.gateway(false, folder),
        sessionNote: [this.conversations.sessionNote(convo.id) ?? '', extra?.notebook?.note ?? ''].filter(Boolean).join('\n') || undefined,
        signal,
        onEvent: this.relay(extra?.onEvent),
      });
      const result = turn.result;
      if (result) {
        this.conversations.ran(convo.id);
        this.variables.ranChat(convo);
        if (extra?.notebook?.session) this.variables.shown = extra.notebook.session;
        if (result.error && result.status !== 'cancelled') this.log.warn(`turn failed: ${result.error.code}: ${result.error.message}`);
      } else if (turn.error) {
        this.log.error(`turn failed: ${turn.error.message}`);
        // The panel's error card says it once; a toast only where no card shows it (VS Code cannot take a toast back).
        const toast = `CodeAct: ${forDisplay(turn.error.message)}`;
        if (turn.error.code === 'auth' && (source !== 'chat' || !this.panelVisible()))
          void this.apis.showErrorMessage(toast, 'Set API Key…').then((a) => a && this.apis.executeCommand('codeact.setApiKey'));
      }
      return result;
    } finally {
      this.end();
    }
  }

  /** Runs code in the configured runtime with the managed tools (Run with Tools, Run again, the LM tool). */
  async runCode(code: string, label: string, source: TurnSource = 'run_with_tools', extra?: RunExtras): Promise<CodeInterpreterCallItem> {
    this.requireTrust('Running code');
    // A document runs in its own folder (with that folder's settings and tools); other code in the chat's.
    const folder = extra?.document?.folder ?? this.folders.require();
    // A document's runs go to its own conversation (switched to before the run starts: never under a running one).
    const docConvo = extra?.document && !this.turn.busy ? this.conversations.ofDocument(extra.document) : undefined;
    const signal = this.begin(label, extra?.token);
    const convo = docConvo ?? this.conversations.ensure(label);
    const s = this.settingsFor(folder);
    // A document's runs share the document's own session (# %% cells build on one another); the rest, the chat's.
    const sessionId = extra?.document ? documentSessionId(extra.document.uri) : convo.id;
    if (extra?.document) this.runtimes.documentSessions.set(sessionId, extra.document.name);
    if (extra?.document) this.variables.shown = { id: sessionId, label: extra.document.name };
    else this.variables.ranChat(convo);
    try {
      const { item } = await runCodeTurn({
        conversation: convo,
        code,
        label,
        source,
        runtime: () => this.runtimes.get(folder, sessionId),
        beforeRun: this.approvals.beforeRun(this.settingsFor(folder).reviewCode),
        gateway: () => this.tools.gateway(false, folder),
        timeoutMs: s.timeoutMs,
        sessionId,
        signal,
        interrupted: () => this.closing,
        onEvent: this.relay(extra?.onEvent),
        request: extra?.request,
      });
      const why = item.error ? ` (${item.error.type}: ${item.error.message.split('\n')[0]})` : '';
      this.log.info(`run "${label}": ${item.status}${why} in ${item.duration_ms} ms`);
      return item;
    } finally {
      this.end();
    }
  }

  /** A notebook cell's code in the notebook's session (./notebookRuns): trust, its folder's runtime and tools; approvals in a dialog. */
  runNotebookCode(code: string, o: CellRunOptions): Promise<CodeInterpreterCallItem> {
    return this.notebookRuns.run(code, o, () => this.folders.current().folder);
  }

  /** Restarts or ends a notebook's session, whatever turn runs elsewhere. Resolves with whether it was alive. */
  endNotebookSession(sessionId: string, how: 'restart' | 'close'): Promise<boolean> {
    return this.notebookRuns.end(sessionId, how);
  }

  /**
   * Lets go of the session hosts (their sessions and a run going on stay for the next window), stops what runs
   * here, saves the transcript, leaves the conversations' Jupyter kernels running for the next window (they take
   * them back) and shuts the rest and MCP servers down (awaited by deactivate).
   */
  async shutdown(): Promise<void> {
    this.approvals.expirePending(NO_ANSWER.closed);
    this.closing = true;
    const running = this.turn.done;
    // A run in a session host is let go of, not stopped: it goes on there, and the next window finds its session.
    await this.runtimes.releaseHosted().catch((e: Error) => this.log.warn(`letting go of the session host failed: ${e.message}`));
    this.stop();
    // The stopped turn saves its end (as interrupted) first; VS Code gives deactivate a few seconds in all.
    if (running) await Promise.race([running, new Promise<void>((resolve) => setTimeout(resolve, 1500).unref())]);
    this.conversation?.flush();
    this.facts.dispose();
    await Promise.allSettled([this.runtimes.release(), disposeDefaultMcpPool()]);
  }
}
