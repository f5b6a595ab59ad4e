/**
 * The extension's engine service: one place that builds the runtime, the gateway (with approvals) and
 * the agent loop from settings and secrets, owns the current conversation and its transcript, runs
 * prompts and code, and stops them. The chat panel, Run with Tools, the LM tool and the chat
 * participant all go through it, so they stream the same events.
 */
import { createHash } from 'node:crypto';
import * as vscode from 'vscode';
import type { ApprovalDecision, CodeActEvent, CodeInterpreterCallItem, FileOutput, RuntimeKind, SessionChanged, VariablesSummary } from '../common/events';
import type { ConversationSummary, HostState, ProviderInfo, ToolSummary } from '../common/protocol';
import type { TranscriptEvent, TurnSource } from '../common/transcript';
import type { AgentResult } from '../core/agent/agent';
import { providerConfigFrom, runtimeConfigFrom, toolSetFrom } from '../core/config/engine';
import { describeIgnored } from '../core/config/resolve';
import { runChatTurn } from '../core/session/chatTurn';
import { TranscriptStore, titleFrom, type Conversation } from '../core/agent/transcriptStore';
import { ToolGateway, type ApprovalRequest, type ManagedTool } from '../core/gateway/gateway';
import { createProvider } from '../core/providers/factory';
import { PROVIDERS } from '../core/providers/registry';
import type { ProviderId } from '../core/providers/shared/types';
import { createRuntime } from '../core/runtime/factory';
import { LocalRuntime } from '../core/runtime/local/localRuntime';
import type { ExecuteOptions, ExecuteRequest, Runtime } from '../core/runtime/types';
import { formatDeclarationError, type ToolSet } from '../core/tools/declarations';
import { disposeDefaultMcpPool, resolveMcpTools } from '../core/tools/mcp';
import type { ToolDeclaration } from '../common/tools';
import { DEFAULT_MODELS, resolveSettings, workspaceFolder, type CodeActSettings } from './settings';
import type { Secrets } from './secrets';
import { newId } from '../core/util/ids';
import { CodeActError } from '../core/util/errors';

const REOPENED_NOTE =
  'Note: this conversation was reopened from history. Its earlier Python session is gone: variables, imports and files from the code above no longer exist; recreate what you need.';

/** Each provider's label, for pickers and messages (the registry's). */
export const PROVIDER_NAMES: Record<ProviderId, string> = Object.fromEntries(PROVIDERS.map((p) => [p.id, p.label])) as Record<ProviderId, string>;

/** A managed tool backed by a language-model tool another extension registered (`vscode.lm.tools`). */
function lmToolSource(decl: ToolDeclaration, defaultApproval: 'auto' | 'ask' | 'deny'): ManagedTool | string {
  const name = decl.lmTool!;
  const info = vscode.lm?.tools?.find((t) => t.name === name);
  if (!info) {
    const known = (vscode.lm?.tools ?? []).map((t) => t.name).sort();
    return `no language-model tool named "${name}" is registered${known.length ? ` (registered: ${known.slice(0, 20).join(', ')})` : ''}`;
  }
  return {
    name: decl.name,
    description: decl.description ?? info.description,
    inputSchema: (decl.inputSchema ?? info.inputSchema ?? { type: 'object' }) as ManagedTool['inputSchema'],
    outputSchema: decl.outputSchema,
    approval: decl.approval ?? defaultApproval,
    expose: decl.expose ?? 'code',
    source: 'lmTool',
    invoke: async (args, ctx) => {
      const cts = new vscode.CancellationTokenSource();
      const onAbort = () => cts.cancel();
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      try {
        const result = await vscode.lm.invokeTool(name, { input: args, toolInvocationToken: undefined }, cts.token);
        const text = result.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : '')).join('');
        try {
          return JSON.parse(text);
        } catch {
          return text;
        }
      } finally {
        ctx.signal.removeEventListener('abort', onAbort);
        cts.dispose();
      }
    },
  };
}

/** What the panel's variables view shows. */
export interface SessionVariables {
  sessionId?: string;
  /** "This conversation" or the document's name. */
  label?: string;
  summary: VariablesSummary | null;
  /** Why there is nothing to show. */
  note?: string;
}

/** The session of a Run with Tools document: its own, apart from the chat's. */
export function documentSessionId(uri: string): string {
  return `doc:${uri}`;
}

export class UntrustedWorkspaceError extends CodeActError {
  readonly category = 'config' as const;
  constructor(what: string) {
    super(`${what} is disabled because this workspace is not trusted: its settings could declare tools that run commands. Trust the workspace to allow it.`);
    this.name = 'UntrustedWorkspaceError';
  }
}

interface PendingApproval {
  resolve: (r: { decision: ApprovalDecision; code?: string }) => void;
  tool?: string;
}

export class CodeActService implements vscode.Disposable {
  readonly store: TranscriptStore;
  private conversation?: Conversation;
  private readonly listeners = new Set<(e: TranscriptEvent) => void>();
  private readonly stateListeners = new Set<() => void>();
  private readonly variablesListeners = new Set<(v: SessionVariables) => void>();
  /** The session the variables view shows: the one of the latest run. */
  private variablesSession?: { id: string; label: string };
  /** A reopened conversation whose earlier variables are gone: the model is told on the next turn. */
  private staleSession?: string;
  private running?: { controller: AbortController; label: string };
  private runtime?: { key: string; runtime: Runtime };
  private readonly sessionAllowed = new Set<string>();
  private readonly approvals = new Map<string, PendingApproval>();
  /** Full outputs of recent executions, for "open full output" (the panel keeps only the tail). */
  private readonly outputs = new Map<string, CodeInterpreterCallItem>();
  private readonly disposables: vscode.Disposable[] = [];
  private warnedDeclarations = '';
  /** Set by the panel: can it show approval cards right now? */
  panelVisible: () => boolean = () => false;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly log: vscode.LogOutputChannel,
    readonly secrets: Secrets,
  ) {
    this.store = new TranscriptStore(vscode.Uri.joinPath(context.globalStorageUri, 'conversations').fsPath);
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('codeact')) {
          // The runtime is rebuilt lazily when its own settings changed (getRuntime compares a key), and never
          // under a running turn: saving "Always allow" or picking a model must not kill the code that asked.
          if (e.affectsConfiguration('codeact.tools') && !this.busy) void disposeDefaultMcpPool();
          this.fireState();
        }
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.fireState()),
      secrets.onDidChange(() => this.fireState()),
      secrets,
    );
  }

  // ---- state ----------------------------------------------------------------------------------

  get settings(): CodeActSettings {
    const resolved = resolveSettings();
    const key = JSON.stringify(resolved.ignored);
    if (key !== this.loggedIgnored) {
      this.loggedIgnored = key;
      for (const line of describeIgnored(resolved.ignored)) this.log.warn(line);
    }
    const s = resolved.config;
    if (!s.model) s.model = DEFAULT_MODELS[s.provider]?.[0] ?? '';
    return s;
  }
  private loggedIgnored = '[]';

  get trusted(): boolean {
    return vscode.workspace.isTrusted;
  }

  get busy(): boolean {
    return !!this.running;
  }

  get currentConversation(): Conversation | undefined {
    return this.conversation;
  }

  onEvent(listener: (e: TranscriptEvent) => void): vscode.Disposable {
    this.listeners.add(listener);
    return new vscode.Disposable(() => this.listeners.delete(listener));
  }

  onVariables(listener: (v: SessionVariables) => void): vscode.Disposable {
    this.variablesListeners.add(listener);
    return new vscode.Disposable(() => this.variablesListeners.delete(listener));
  }

  /** Reads the variables of the session the view shows, and tells the listeners. */
  async refreshVariables(): Promise<SessionVariables> {
    const target = this.variablesSession ?? (this.conversation ? { id: this.conversation.id, label: 'This conversation' } : undefined);
    const runtime = this.runtime?.runtime;
    let result: SessionVariables;
    if (!target) result = { summary: null, note: 'No session yet: variables appear after code runs.' };
    else if (!runtime?.variables || !runtime.statePersists) result = { sessionId: target.id, label: target.label, summary: null, note: 'Runs start fresh (codeact.session.policy is "run", or this runtime keeps no session).' };
    else {
      const summary = await runtime.variables(target.id).catch(() => null);
      result = { sessionId: target.id, label: target.label, summary, ...(summary ? {} : { note: runtime.hasSession?.(target.id) ? 'The session is busy.' : 'No live session: variables appear after code runs.' }) };
    }
    for (const l of this.variablesListeners) {
      try {
        l(result);
      } catch {}
    }
    return result;
  }

  /** Restarts a session: the conversation's (default) or a document's. Returns whether one was alive. */
  async restartSession(sessionId?: string): Promise<boolean> {
    const id = sessionId ?? this.conversation?.id;
    const runtime = this.runtime?.runtime;
    if (!id || !runtime?.restartSession) return false;
    if (this.running) this.stop();
    const had = (await runtime.restartSession(id)) !== false;
    this.log.info(`session ${id} restarted`);
    void this.refreshVariables();
    return had;
  }

  /** The live session ids the Restart command can offer: the conversation's and the documents'. */
  liveSessions(): Array<{ id: string; label: string }> {
    const runtime = this.runtime?.runtime;
    const out: Array<{ id: string; label: string }> = [];
    if (!runtime?.hasSession) return out;
    if (this.conversation && runtime.hasSession(this.conversation.id)) out.push({ id: this.conversation.id, label: `Chat: ${this.conversation.meta.title}` });
    for (const [id, label] of this.documentSessions) if (runtime.hasSession(id)) out.push({ id, label });
    return out;
  }
  private readonly documentSessions = new Map<string, string>();

  /** A session started fresh or ended: said in the conversation it belongs to (the open one), and logged. */
  private onSessionEvent(e: SessionChanged): void {
    this.log.info(`session ${e.session_id}: ${e.state}${e.reason ? ` (${e.reason})` : ''} ${e.message}`);
    if (e.state === 'ended' && (e.session_id === this.conversation?.id || this.documentSessions.has(e.session_id))) {
      this.emit(e);
    }
    if (e.session_id === this.variablesSession?.id || e.session_id === this.conversation?.id) void this.refreshVariables();
  }

  onState(listener: () => void): vscode.Disposable {
    this.stateListeners.add(listener);
    return new vscode.Disposable(() => this.stateListeners.delete(listener));
  }

  fireState(): void {
    void vscode.commands.executeCommand('setContext', 'codeact.running', this.busy);
    for (const l of this.stateListeners) l();
  }

  toolSet(): ToolSet {
    const s = this.settings;
    const ws = workspaceFolder();
    // In an untrusted workspace VS Code already hides workspace values of restricted settings; without
    // trust no tool runs at all.
    if (!this.trusted || !ws) return { tools: [], errors: [] };
    const set = toolSetFrom(s, ws, { resolveExternal: (decl, source) => (source === 'lmTool' ? lmToolSource(decl, s.defaultApproval) : `"${source}" tools are not available here`) });
    const key = JSON.stringify(set.errors);
    if (set.errors.length && key !== this.warnedDeclarations) {
      this.warnedDeclarations = key;
      for (const e of set.errors) this.log.warn(formatDeclarationError(e));
      void vscode.window
        .showWarningMessage(`CodeAct: ${set.errors.length} tool declaration(s) in codeact.tools are invalid and unavailable: ${formatDeclarationError(set.errors[0])}`, 'Open Settings', 'Show Log')
        .then((a) => {
          if (a === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openWorkspaceSettingsFile');
          if (a === 'Show Log') this.log.show();
        });
    }
    return set;
  }

  async hostState(): Promise<HostState> {
    const s = this.settings;
    const providers: ProviderInfo[] = await Promise.all(
      PROVIDERS.map((p) => p.id).map(async (id) => ({
        id,
        label: PROVIDER_NAMES[id],
        hasKey: await this.secrets.hasKey(id),
        models: [...new Set([...(id === s.provider && s.model ? [s.model] : []), ...DEFAULT_MODELS[id]])].map((m) => ({ id: m })),
      })),
    );
    const tools: ToolSummary[] = this.toolSet().tools.map((t) => ({ name: t.name, description: t.description, approval: t.approval, source: t.source as ToolSummary['source'] }));
    const runtime: RuntimeKind = s.mode === 'hosted' ? (s.provider === 'openai-compatible' ? 'local' : (s.provider as RuntimeKind)) : s.runtime;
    return {
      providers,
      provider: s.provider,
      model: s.model,
      runtime,
      mode: s.mode === 'hosted' ? 'hosted' : 'local',
      tools,
      trusted: this.trusted,
      busy: this.busy,
      conversationId: this.conversation?.id,
      conversationTitle: this.conversation?.meta.title,
      version: String(this.context.extension.packageJSON.version ?? ''),
    };
  }

  // ---- conversations --------------------------------------------------------------------------

  /** Saves an event in the open conversation and tells the listeners. */
  private emit(e: TranscriptEvent): void {
    this.conversation?.appendEvent(e);
    this.notify(e);
  }

  /** Tells the listeners (the panel, the participant) about an event already saved. */
  private notify(e: TranscriptEvent): void {
    if (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') {
      this.outputs.set(e.item.id, e.item);
      if (this.outputs.size > 200) this.outputs.delete(this.outputs.keys().next().value!);
    }
    for (const l of this.listeners) {
      try {
        l(e);
      } catch (err) {
        this.log.error(`event listener failed: ${(err as Error).message}`);
      }
    }
  }

  private ensureConversation(title: string): Conversation {
    if (!this.conversation) {
      const s = this.settings;
      this.conversation = this.store.create({ title: titleFrom(title), provider: s.provider, model: s.model, mode: s.mode, workspace: workspaceFolder() });
      this.fireState();
    }
    return this.conversation;
  }

  /** A running turn writes into its conversation; switching under it would send its events elsewhere. */
  private leaveConversation(): void {
    if (this.running) throw new Error('Stop the running turn before switching conversations (CodeAct: Stop).');
    const old = this.conversation;
    old?.flush();
    // A conversation's Jupyter kernel goes when the conversation is left.
    if (old) void this.runtime?.runtime.closeSession?.(old.id);
    this.variablesSession = undefined;
    this.staleSession = undefined;
  }

  newConversation(): void {
    this.leaveConversation();
    this.conversation = undefined;
    this.fireState();
  }

  /**
   * Opens a conversation from history. A conversation whose code ran in a session that is gone says so
   * (the returned `notice`), and the model is told on the next turn, so neither relies on variables that
   * no longer exist.
   */
  openConversation(id: string): { conversation: Conversation; notice?: string } {
    this.leaveConversation();
    const conversation = this.store.open(id);
    this.conversation = conversation;
    this.variablesSession = undefined;
    const ranCode = conversation.events.some((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' && (e.item.runtime === 'local' || e.item.runtime === 'jupyter'));
    let notice: string | undefined;
    if (ranCode && !this.runtime?.runtime.hasSession?.(id)) {
      this.staleSession = id;
      notice = 'This conversation was reopened: its earlier Python session is gone, so variables from earlier runs are not defined. Code you run now starts a new session.';
    }
    this.fireState();
    void this.refreshVariables();
    return { conversation, notice };
  }

  listConversations(): ConversationSummary[] {
    return this.store.list().map((c) => ({ id: c.id, title: c.title, updatedAt: c.updatedAt, turns: c.turns, provider: c.provider, model: c.model }));
  }

  deleteConversation(id: string): void {
    if (this.conversation?.id === id) {
      this.leaveConversation();
      this.conversation = undefined;
    }
    this.store.delete(id);
    this.fireState();
  }

  clearHistory(): void {
    this.leaveConversation();
    this.conversation = undefined;
    this.store.clear();
    this.fireState();
  }

  fullOutput(itemId: string): CodeInterpreterCallItem | undefined {
    return this.outputs.get(itemId) ?? (this.conversation?.events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' && e.item.id === itemId) as { item: CodeInterpreterCallItem } | undefined)?.item;
  }

  /** Downloads a file the provider's hosted sandbox produced (OpenAI container files, Anthropic Files API). */
  async downloadHostedFile(file: FileOutput): Promise<{ bytes: Uint8Array; filename: string }> {
    const s = this.settings;
    const provider = await createProvider({ provider: s.provider, apiKey: await this.secrets.apiKey(s.provider), baseURL: s.baseUrl });
    if (!provider.downloadFile) throw new Error(`${PROVIDER_NAMES[s.provider]} has no downloadable sandbox files; switch to the provider that made this file.`);
    const got = await provider.downloadFile(file);
    const filename = (got.filename ?? file.filename ?? file.file_id ?? 'download').split(/[\\/]/).pop()!;
    return { bytes: got.bytes, filename };
  }

  // ---- runtime, gateway, approvals --------------------------------------------------------------

  private async getRuntime(): Promise<Runtime> {
    const s = this.settings;
    const token = s.runtime === 'jupyter' ? await this.secrets.jupyterToken() : undefined;
    // The token is part of the key (hashed), so a new token takes effect on the next run.
    const tokenHash = token ? createHash('sha256').update(token).digest('hex').slice(0, 16) : '';
    const key = JSON.stringify([s.runtime, s.python, s.preload, s.sessionPolicy, s.sessionIdleMs, s.sessionMaxAlive, s.sandbox, s.sandboxNetwork, s.mountWorkspace, s.limits, s.jupyterUrl, s.jupyterKernel, s.jupyterSessionPolicy, tokenHash]);
    if (this.runtime?.key === key) return this.runtime.runtime;
    void this.disposeRuntime();
    // A warm zygote forks each session's guest, and the next one is started ahead of need.
    const runtime = await createRuntime(
      runtimeConfigFrom(s, {
        workspace: workspaceFolder(),
        jupyterToken: token,
        longLived: true,
        onSessionEvent: (e) => this.onSessionEvent(e),
        log: (l) => this.log.info(l),
        onWarning: (m) => {
          this.log.warn(m);
          void vscode.window.showWarningMessage(`CodeAct: ${m}`);
        },
      }),
    );
    this.runtime = { key, runtime };
    return runtime;
  }

  private async disposeRuntime(): Promise<void> {
    const r = this.runtime?.runtime;
    this.runtime = undefined;
    await r?.dispose();
  }

  /** The managed tools with MCP servers' descriptions and schemas filled in (cached per codeact.tools value). */
  private async resolvedTools(): Promise<ToolSet> {
    const set = this.toolSet();
    if (!set.tools.some((t) => t.source === 'mcp')) return set;
    const key = JSON.stringify(this.settings.tools);
    if (this.mcpResolved?.key !== key) this.mcpResolved = { key, set: resolveMcpTools(set) };
    return this.mcpResolved.set;
  }
  private mcpResolved?: { key: string; set: Promise<ToolSet> };

  async gateway(): Promise<ToolGateway> {
    const s = this.settings;
    return new ToolGateway((await this.resolvedTools()).tools, {
      approver: (req) => this.approveTool(req),
      policyOverride: (tool: ManagedTool) => (s.alwaysAllow.includes(tool.name) || this.sessionAllowed.has(tool.name) ? 'auto' : undefined),
      log: (line) => this.log.info(line),
    });
  }

  private async approveTool(req: ApprovalRequest): Promise<boolean> {
    const { decision } = await this.requestApproval({ kind: 'tool', name: req.tool.name, arguments: req.arguments, itemId: req.itemId }, req.signal);
    if (decision === 'allow_session') this.sessionAllowed.add(req.tool.name);
    if (decision === 'allow_always') {
      const c = vscode.workspace.getConfiguration('codeact');
      const list = c.get<string[]>('approval.alwaysAllow', []);
      if (!list.includes(req.tool.name)) await c.update('approval.alwaysAllow', [...list, req.tool.name], vscode.ConfigurationTarget.Global);
    }
    return decision !== 'deny';
  }

  /** Asks the user: a card in the panel when it is visible, a modal dialog otherwise. Every decision is logged. */
  private async requestApproval(
    what: { kind: 'tool' | 'code'; name?: string; arguments?: unknown; code?: string; itemId?: string },
    signal?: AbortSignal,
  ): Promise<{ decision: ApprovalDecision; code?: string }> {
    const approvalId = newId('appr');
    this.emit({ type: 'codeact.approval.requested', approval_id: approvalId, item_id: what.itemId, kind: what.kind, name: what.name, arguments: what.arguments, code: what.code });
    let result: { decision: ApprovalDecision; code?: string };
    if (this.panelVisible()) {
      const onAbort = () => this.approvals.get(approvalId)?.resolve({ decision: 'deny' });
      signal?.addEventListener('abort', onAbort, { once: true });
      result = signal?.aborted ? { decision: 'deny' } : await new Promise((resolve) => this.approvals.set(approvalId, { resolve, tool: what.name }));
      signal?.removeEventListener('abort', onAbort);
      this.approvals.delete(approvalId);
    } else {
      result = await this.modalApproval(what);
    }
    this.emit({ type: 'codeact.approval.resolved', approval_id: approvalId, decision: result.decision });
    this.log.info(`approval ${approvalId}: ${what.kind === 'tool' ? `tool ${what.name}` : 'code review'} -> ${result.decision}`);
    return result;
  }

  private async modalApproval(what: { kind: 'tool' | 'code'; name?: string; arguments?: unknown; code?: string }): Promise<{ decision: ApprovalDecision; code?: string }> {
    if (what.kind === 'code') {
      const pick = await vscode.window.showWarningMessage('CodeAct: run this code?', { modal: true, detail: (what.code ?? '').slice(0, 2000) }, 'Run');
      return { decision: pick === 'Run' ? 'allow_once' : 'deny' };
    }
    const args = JSON.stringify(what.arguments ?? {}, null, 2);
    const pick = await vscode.window.showWarningMessage(
      `CodeAct: allow the tool "${what.name}"?`,
      { modal: true, detail: `Arguments:\n${args.length > 1500 ? args.slice(0, 1500) + '…' : args}` },
      'Allow Once',
      'Allow for This Session',
      'Always Allow',
    );
    return { decision: pick === 'Allow Once' ? 'allow_once' : pick === 'Allow for This Session' ? 'allow_session' : pick === 'Always Allow' ? 'allow_always' : 'deny' };
  }

  /** The panel answered an approval card. */
  resolveApproval(approvalId: string, decision: ApprovalDecision, code?: string): void {
    this.approvals.get(approvalId)?.resolve({ decision, code });
  }

  /** Wraps the runtime so that, with codeact.approval.reviewCode, the user sees the code first (Run, Edit, Deny). */
  private reviewing(runtime: Runtime): Runtime {
    if (!this.settings.reviewCode) return runtime;
    return {
      kind: runtime.kind,
      statePersists: runtime.statePersists,
      dispose: () => runtime.dispose(),
      closeSession: runtime.closeSession?.bind(runtime),
      restartSession: runtime.restartSession?.bind(runtime),
      variables: runtime.variables?.bind(runtime),
      hasSession: runtime.hasSession?.bind(runtime),
      execute: async (request: ExecuteRequest, options?: ExecuteOptions) => {
        const r = await this.requestApproval({ kind: 'code', code: request.code, itemId: request.itemId }, options?.signal);
        if (r.decision === 'deny') {
          const item: CodeInterpreterCallItem = {
            type: 'code_interpreter_call',
            id: request.itemId ?? newId('exec'),
            status: 'failed',
            code: request.code,
            runtime: runtime.kind,
            outputs: [],
            exit_code: null,
            error: { type: 'Denied', message: 'The user declined to run this code.' },
          };
          options?.onEvent?.({ type: 'response.code_interpreter_call.completed', item_id: item.id });
          options?.onEvent?.({ type: 'response.output_item.done', item });
          return item;
        }
        return runtime.execute({ ...request, code: r.code ?? request.code }, options);
      },
    };
  }

  // ---- running ----------------------------------------------------------------------------------

  private begin(label: string): AbortController {
    if (this.running) throw new Error(`CodeAct is already running "${this.running.label}". Stop it first (CodeAct: Stop).`);
    const controller = new AbortController();
    this.running = { controller, label };
    this.fireState();
    return controller;
  }

  private end(): void {
    this.running = undefined;
    this.conversation?.flush();
    this.fireState();
    void this.refreshVariables();
  }

  stop(): void {
    if (!this.running) return;
    this.log.info(`stop requested: ${this.running.label}`);
    this.running.controller.abort();
    for (const [, p] of this.approvals) p.resolve({ decision: 'deny' });
  }

  requireTrust(what: string): void {
    if (!this.trusted) throw new UntrustedWorkspaceError(what);
  }

  /** Sends a prompt to the agent. Events stream to the listeners (panel, participant). */
  async send(prompt: string, source: TurnSource = 'chat', extra?: { onEvent?: (e: CodeActEvent) => void; token?: vscode.CancellationToken }): Promise<AgentResult | undefined> {
    const s = this.settings;
    if (s.mode !== 'hosted') this.requireTrust('Running code');
    const controller = this.begin(titleFrom(prompt));
    const cancel = extra?.token?.onCancellationRequested(() => controller.abort());
    const convo = this.ensureConversation(prompt);
    try {
      const turn = await runChatTurn({
        conversation: convo,
        prompt,
        source,
        config: s,
        provider: async () => createProvider(providerConfigFrom(s, await this.secrets.apiKey(s.provider))),
        // Hosted mode runs code in the provider's sandbox; the local runtime object is never started there.
        runtime: async () => (s.mode === 'hosted' ? new LocalRuntime() : this.reviewing(await this.getRuntime())),
        gateway: await this.gateway(),
        ...(this.staleSession === convo.id ? { sessionNote: REOPENED_NOTE } : {}),
        signal: controller.signal,
        onEvent: (e) => {
          this.notify(e);
          if (e.type !== 'codeact.turn.started' && e.type !== 'codeact.turn.ended') extra?.onEvent?.(e);
        },
      });
      const result = turn.result;
      if (result) {
        if (this.staleSession === convo.id) this.staleSession = undefined;
        this.variablesSession = { id: convo.id, label: 'This conversation' };
        if (result.error && result.status !== 'cancelled') this.log.warn(`turn failed: ${result.error.code}: ${result.error.message}`);
      } else if (turn.error) {
        this.log.error(`turn failed: ${turn.error.message}`);
        if (turn.error.code === 'auth') {
          void vscode.window.showErrorMessage(`CodeAct: ${turn.error.message}`, 'Set API Key…').then((a) => a && vscode.commands.executeCommand('codeact.setApiKey'));
        }
      }
      return result;
    } finally {
      cancel?.dispose();
      this.end();
    }
  }

  /** Runs code in the configured runtime with the managed tools (Run with Tools, Run again, the LM tool). */
  async runCode(
    code: string,
    label: string,
    source: TurnSource = 'run_with_tools',
    extra?: { token?: vscode.CancellationToken; onEvent?: (e: CodeActEvent) => void; document?: { uri: string; name: string } },
  ): Promise<CodeInterpreterCallItem> {
    this.requireTrust('Running code');
    const controller = this.begin(label);
    const cancel = extra?.token?.onCancellationRequested(() => controller.abort());
    const convo = this.ensureConversation(label);
    const s = this.settings;
    const turnId = newId('turn');
    const started = Date.now();
    // A document's runs share the document's own session (# %% cells build on one another); the rest, the chat's.
    const sessionId = extra?.document ? documentSessionId(extra.document.uri) : convo.id;
    if (extra?.document) this.documentSessions.set(sessionId, extra.document.name);
    this.variablesSession = { id: sessionId, label: extra?.document ? extra.document.name : 'This conversation' };
    try {
      const runtime = this.reviewing(await this.getRuntime());
      this.emit({ type: 'codeact.turn.started', turn_id: turnId, prompt: label, source, runtime: runtime.kind, started_at: started });
      const item = await runtime.execute(
        { code, timeoutMs: s.timeoutMs, sessionId },
        {
          signal: controller.signal,
          onToolCall: (await this.gateway()).handler,
          onEvent: (e) => {
            this.emit(e);
            extra?.onEvent?.(e);
          },
        },
      );
      this.emit({ type: 'codeact.turn.ended', turn_id: turnId, status: item.status === 'completed' ? 'completed' : item.error?.type === 'Cancelled' ? 'stopped' : 'failed', duration_ms: Date.now() - started });
      this.log.info(`run "${label}": ${item.status}${item.error ? ` (${item.error.type}: ${item.error.message.split('\n')[0]})` : ''} in ${item.duration_ms} ms`);
      return item;
    } finally {
      cancel?.dispose();
      this.end();
    }
  }

  /** Stops what runs, saves the transcript, and shuts kernels and MCP servers down (awaited by deactivate). */
  async shutdown(): Promise<void> {
    this.stop();
    this.conversation?.flush();
    await Promise.allSettled([this.disposeRuntime(), disposeDefaultMcpPool()]);
  }

  dispose(): void {
    void this.shutdown();
    for (const d of this.disposables) d.dispose();
  }
}
