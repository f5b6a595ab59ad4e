/**
 * The chat panel application: layout (header, transcript, composer), the host protocol, persistence across
 * reloads (getState/setState), and the frame loop that applies transcript changes to the DOM.
 */
import {
  PROTOCOL_VERSION,
  isHostMessage,
  type ConversationSummary,
  type HostCommand,
  type HostState,
  type HostToWebview,
  type NoticeMessage,
  type WebviewToHost,
} from '../common/protocol';
import {
  applyEvent,
  buildTranscript,
  createTranscript,
  currentTurn,
  findTurn,
  isBusy,
  type ExecView,
  type TranscriptEvent,
  type TranscriptModel,
} from '../common/transcript';
import { h, relativeTime, setText, toggle } from './dom';
import { icon, type IconName } from './icons';
import { TranscriptView, type ViewContext } from './transcriptView';
import { VariablesView } from './variablesView';
import type { HostApi } from './vscodeApi';

export interface PanelState {
  v: 1;
  conversationId?: string;
  title?: string;
  seq: number;
  model: TranscriptModel;
  host?: HostState;
  draft: string;
  inputHistory: string[];
  conversations?: ConversationSummary[];
}

const MAX_INPUT_HISTORY = 100;

function button(label: string, iconName: IconName | null, onClick: () => void, cls = 'button secondary', title?: string): HTMLButtonElement {
  const b = h('button', { class: cls, type: 'button', title: title ?? label, onclick: () => onClick() });
  if (iconName) b.append(icon(iconName));
  b.append(h('span', { text: label }));
  return b;
}

function toolbarButton(iconName: IconName, label: string, onClick: () => void): HTMLButtonElement {
  const b = h('button', { class: 'icon-button', type: 'button', title: label, 'aria-label': label, onclick: () => onClick() });
  b.append(icon(iconName));
  return b;
}

export class App {
  private model: TranscriptModel;
  private seq: number;
  private conversationId?: string;
  private title?: string;
  private host?: HostState;
  private inputHistory: string[];
  private conversations?: ConversationSummary[];
  private historyIndex = -1;
  private historyDraft = '';

  private readonly view: TranscriptView;
  private readonly dirtyItems = new Set<string>();
  private readonly dirtyTurns = new Set<string>();
  private frameHandle = 0;
  private frameTimer: ReturnType<typeof setTimeout> | undefined;
  private saveTimer: ReturnType<typeof setTimeout> | undefined;
  private stick = true;
  private afterFrame: (() => void)[] = [];

  // layout
  private readonly titleEl: HTMLElement;
  private readonly noticeArea: HTMLElement;
  private readonly scroller: HTMLElement;
  private readonly transcriptEl: HTMLElement;
  private readonly emptyEl: HTMLElement;
  private readonly jumpButton: HTMLButtonElement;
  private readonly statusEl: HTMLElement;
  private readonly liveRegion: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly providerSelect: HTMLSelectElement;
  private readonly modelSelect: HTMLSelectElement;
  private readonly toolsButton: HTMLButtonElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly historyPanel: HTMLElement;
  private readonly historyList: HTMLElement;
  private readonly historyButton: HTMLButtonElement;
  private readonly variables: VariablesView;
  private readonly exportButton: HTMLButtonElement;
  private lastStatus = '';

  constructor(
    private readonly root: HTMLElement,
    private readonly api: HostApi<PanelState>,
    initialHost?: HostState,
  ) {
    const saved = api.getState();
    const valid = saved && saved.v === 1 && saved.model && Array.isArray(saved.model.turns);
    this.model = valid ? saved.model : createTranscript();
    if (!this.model.aliases) this.model.aliases = {};
    this.seq = valid ? saved.seq : 0;
    this.conversationId = valid ? saved.conversationId : undefined;
    this.title = valid ? saved.title : undefined;
    this.host = initialHost ?? (valid ? saved.host : undefined);
    this.inputHistory = valid && Array.isArray(saved.inputHistory) ? saved.inputHistory : [];
    this.conversations = valid ? saved.conversations : undefined;

    const ctx: ViewContext = { post: (m) => this.post(m), announce: (t) => this.announce(t), afterFrame: (fn) => this.afterFrame.push(fn) };

    // header
    this.variables = new VariablesView((m) => this.post(m));
    this.titleEl = h('span', { class: 'conv-title' });
    this.historyButton = toolbarButton('history', 'Conversation history', () => this.openHistory());
    this.exportButton = toolbarButton('notebook', 'Export as notebook (.ipynb)', () => this.post({ type: 'exportNotebook', ...(this.conversationId ? { conversationId: this.conversationId } : {}) }));
    const header = h(
      'header',
      { class: 'panel-header' },
      h('span', { class: 'brand', 'aria-hidden': 'true' }, icon('sparkle')),
      this.titleEl,
      h('span', { class: 'spacer' }),
      h(
        'div',
        { class: 'header-actions', role: 'toolbar', 'aria-label': 'Conversation' },
        this.variables.toggle,
        toolbarButton('add', 'New conversation', () => this.post({ type: 'newConversation' })),
        this.historyButton,
        this.exportButton,
      ),
    );

    this.noticeArea = h('div', { class: 'notices' });

    // transcript
    this.transcriptEl = h('div', { class: 'transcript', role: 'log', 'aria-label': 'Conversation', 'aria-live': 'off' });
    this.emptyEl = h('div', { class: 'empty-state', role: 'region', 'aria-label': 'Get started' });
    this.scroller = h('main', { class: 'scroller' }, this.emptyEl, this.transcriptEl);
    this.scroller.addEventListener('scroll', () => this.onScroll(), { passive: true });
    this.scroller.addEventListener('click', (e) => this.onTranscriptClick(e));
    this.jumpButton = h('button', { class: 'jump-latest', type: 'button', hidden: true, 'aria-label': 'Jump to the latest message', onclick: () => this.jumpToLatest() }, icon('arrowDown'), h('span', { text: 'Latest' }));
    this.view = new TranscriptView(this.transcriptEl, ctx);

    // composer
    this.statusEl = h('div', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
    this.liveRegion = h('div', { class: 'sr-only', 'aria-live': 'assertive', role: 'alert' });
    this.input = h('textarea', {
      class: 'prompt-input',
      rows: '1',
      placeholder: 'Ask CodeAct to do something with your tools…',
      'aria-label': 'Message CodeAct. Enter sends, Shift+Enter adds a line, Up and Down recall earlier messages.',
      spellcheck: 'true',
    });
    this.input.value = valid ? saved.draft ?? '' : '';
    this.input.addEventListener('keydown', (e) => this.onKeyDown(e));
    this.input.addEventListener('input', () => {
      this.autosize();
      this.historyIndex = -1;
      this.scheduleSave();
    });
    this.providerSelect = h('select', { class: 'select', 'aria-label': 'Provider' });
    this.modelSelect = h('select', { class: 'select model', 'aria-label': 'Model' });
    this.providerSelect.addEventListener('change', () => this.onProviderChange());
    this.modelSelect.addEventListener('change', () => this.onModelChange());
    this.toolsButton = h('button', { class: 'chip-button', type: 'button', onclick: () => this.post({ type: 'command', command: 'declareTools' }) });
    this.sendButton = h('button', { class: 'send-button', type: 'button', title: 'Send (Enter)', 'aria-label': 'Send', onclick: () => this.send() }, icon('send'));
    this.stopButton = h('button', { class: 'stop-button', type: 'button', title: 'Stop', 'aria-label': 'Stop the running turn', hidden: true, onclick: () => this.stop() }, icon('stop'), h('span', { text: 'Stop' }));
    const composer = h(
      'footer',
      { class: 'composer' },
      this.statusEl,
      h(
        'div',
        { class: 'input-box' },
        this.input,
        h('div', { class: 'input-row' }, this.providerSelect, this.modelSelect, this.toolsButton, h('span', { class: 'spacer' }), this.stopButton, this.sendButton),
      ),
    );

    // history
    this.historyList = h('ul', { class: 'history-list', 'aria-label': 'Saved conversations' });
    this.historyPanel = h(
      'aside',
      { class: 'history-panel', role: 'dialog', 'aria-label': 'Conversation history', hidden: true },
      h('header', { class: 'history-head' }, icon('history'), h('span', { class: 'history-title', text: 'Conversations' }), h('span', { class: 'spacer' }), toolbarButton('close', 'Close history', () => this.closeHistory())),
      this.historyList,
      h('div', { class: 'history-foot' }),
    );
    this.historyPanel.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        this.closeHistory();
      }
    });

    root.textContent = '';
    root.removeAttribute('aria-busy');
    root.append(header, this.variables.el, this.noticeArea, this.scroller, this.jumpButton, composer, this.historyPanel, this.liveRegion);

    window.addEventListener('message', (e: MessageEvent) => this.onMessage(e.data));
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'hidden') this.saveNow();
      else this.schedule();
    });
    window.addEventListener('pagehide', () => this.saveNow());
    window.addEventListener('resize', () => {
      if (this.stick) this.scroller.scrollTop = this.scroller.scrollHeight;
      this.updateJump();
    });

    this.view.renderAll(this.model);
    this.renderChrome();
    this.autosize();
    requestAnimationFrame(() => this.jumpToLatest());
    this.post({ type: 'ready', protocol: PROTOCOL_VERSION, seq: this.seq, ...(this.conversationId ? { conversationId: this.conversationId } : {}) });
  }

  // ---- host messages ----------------------------------------------------------------------------

  private post(message: WebviewToHost): void {
    this.api.post(message);
  }

  onMessage(data: unknown): void {
    if (!isHostMessage(data)) return;
    try {
      this.handle(data);
    } catch (err) {
      this.post({ type: 'webviewError', message: `Could not apply ${data.type}: ${err instanceof Error ? err.stack ?? err.message : String(err)}` });
    }
  }

  private handle(msg: HostToWebview): void {
    switch (msg.type) {
      case 'init':
        this.host = msg.state;
        if (msg.state.conversationId !== undefined && msg.state.conversationId !== this.conversationId && this.model.turns.length === 0) {
          this.conversationId = msg.state.conversationId;
        }
        if (msg.state.conversationTitle) this.title = msg.state.conversationTitle;
        this.renderChrome();
        break;
      case 'state':
        this.host = { ...(this.host ?? { providers: [], tools: [], trusted: true }), ...msg.state };
        if (msg.state.conversationTitle !== undefined) this.title = msg.state.conversationTitle;
        this.renderChrome();
        break;
      case 'events':
        this.applyBatch(msg.events, msg.seq, msg.conversationId);
        break;
      case 'reset':
        this.reset(msg.events, msg.seq, msg.conversationId, msg.title);
        break;
      case 'history':
        this.conversations = msg.conversations;
        this.renderHistory();
        this.scheduleSave();
        break;
      case 'setInput':
        this.input.value = msg.text;
        this.autosize();
        if (msg.send) this.send();
        else this.focusInput();
        break;
      case 'focusInput':
        this.focusInput();
        break;
      case 'notice':
        this.showNotice(msg);
        break;
      case 'variables':
        this.variables.update(msg);
        break;
    }
  }

  private applyBatch(events: TranscriptEvent[], seq: number, conversationId?: string): void {
    const conversation = conversationId ?? this.conversationId;
    if (conversation !== this.conversationId) {
      if (seq !== 1) {
        this.post({ type: 'resync', seq: this.seq, ...(this.conversationId ? { conversationId: this.conversationId } : {}) });
        return;
      }
      // Batch 1 of another conversation: a new conversation starts.
      this.reset([], 0, conversation, undefined);
    } else if (seq <= this.seq) {
      return; // already applied
    }
    if (seq > this.seq + 1) {
      this.post({ type: 'resync', seq: this.seq, ...(this.conversationId ? { conversationId: this.conversationId } : {}) });
      return;
    }
    const hadTurns = this.model.turns.length > 0;
    for (const event of events) {
      if (!event || typeof (event as { type?: unknown }).type !== 'string') continue;
      const changes = applyEvent(this.model, event);
      for (const c of changes) {
        if (c.kind === 'turn') {
          if (c.added) {
            const t = this.model.turns.find((x) => x.id === c.id);
            if (t) this.view.addTurn(this.model, t);
          }
          this.dirtyTurns.add(c.id);
        } else {
          if (c.added) this.view.addItem(this.model, c.key);
          this.dirtyItems.add(c.key);
          this.dirtyTurns.add(c.turnId);
        }
      }
    }
    this.seq = seq;
    if (!hadTurns && this.model.turns.length > 0) this.renderEmptyState();
    this.schedule();
    this.scheduleSave();
  }

  private reset(events: TranscriptEvent[], seq: number, conversationId?: string, title?: string): void {
    this.model = buildTranscript(events.filter((e) => e && typeof (e as { type?: unknown }).type === 'string'));
    this.seq = seq;
    this.conversationId = conversationId;
    this.title = title;
    this.dirtyItems.clear();
    this.dirtyTurns.clear();
    this.view.renderAll(this.model);
    this.stick = true;
    this.renderChrome();
    this.saveNow();
    requestAnimationFrame(() => this.jumpToLatest());
  }

  // ---- frame loop -------------------------------------------------------------------------------

  private schedule(): void {
    if (this.frameHandle || this.frameTimer) return;
    this.frameHandle = requestAnimationFrame(() => this.frame());
    // Hidden pages get no animation frames; do not let the DOM fall far behind.
    this.frameTimer = setTimeout(() => this.frame(), 250);
  }

  private frame(): void {
    if (this.frameHandle) cancelAnimationFrame(this.frameHandle);
    if (this.frameTimer) clearTimeout(this.frameTimer);
    this.frameHandle = 0;
    this.frameTimer = undefined;
    for (const key of this.dirtyItems) {
      const item = this.model.items[key];
      if (item) this.view.syncItem(item);
    }
    this.dirtyItems.clear();
    for (const id of this.dirtyTurns) {
      const turn = findTurn(this.model, id);
      if (turn) this.view.syncTurn(turn);
    }
    this.dirtyTurns.clear();
    this.updateBusy();
    this.updateStatus();
    // Reads and scrolls last: one layout for the whole frame.
    const after = this.afterFrame;
    this.afterFrame = [];
    for (const fn of after) fn();
    if (this.stick) this.scroller.scrollTop = this.scroller.scrollHeight;
    this.updateJump();
  }

  private atBottom(): boolean {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 48;
  }

  private updateJump(): void {
    this.jumpButton.hidden = this.stick || this.atBottom();
  }

  /** Resolves when everything received so far is in the DOM (used by tests and the benchmark). */
  flushNow(): void {
    this.frame();
  }

  // ---- persistence ------------------------------------------------------------------------------

  private scheduleSave(): void {
    if (this.saveTimer) return;
    this.saveTimer = setTimeout(() => this.saveNow(), 1000);
  }

  private saveNow(): void {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    try {
      this.api.setState({
        v: 1,
        conversationId: this.conversationId,
        title: this.title,
        seq: this.seq,
        model: this.model,
        host: this.host,
        draft: this.input.value,
        inputHistory: this.inputHistory,
        conversations: this.conversations,
      });
    } catch (err) {
      this.post({ type: 'webviewError', message: `Could not save the panel state: ${err instanceof Error ? err.message : String(err)}` });
    }
  }

  // ---- chrome -----------------------------------------------------------------------------------

  private busy(): boolean {
    return Boolean(this.host?.busy) || isBusy(this.model);
  }

  private renderChrome(): void {
    setText(this.titleEl, this.title || 'CodeAct');
    this.titleEl.title = this.title || 'CodeAct';
    this.renderPicker();
    this.renderEmptyState();
    this.updateBusy();
    this.updateStatus();
  }

  private renderPicker(): void {
    const host = this.host;
    const providers = host?.providers ?? [];
    this.providerSelect.textContent = '';
    this.modelSelect.textContent = '';
    if (!providers.length) {
      this.providerSelect.append(h('option', { value: '', text: 'No provider' }));
      this.modelSelect.append(h('option', { value: '', text: 'No model' }));
      this.providerSelect.disabled = true;
      this.modelSelect.disabled = true;
    } else {
      this.providerSelect.disabled = false;
      this.modelSelect.disabled = false;
      for (const p of providers) this.providerSelect.append(h('option', { value: p.id, text: p.hasKey ? p.label : `${p.label} (no key)` }));
      const current = providers.find((p) => p.id === host?.provider) ?? providers[0];
      this.providerSelect.value = current.id;
      for (const m of current.models) this.modelSelect.append(h('option', { value: m.id, text: m.label ?? m.id, title: m.detail ?? '' }));
      if (host?.model && !current.models.some((m) => m.id === host.model)) this.modelSelect.append(h('option', { value: host.model, text: host.model }));
      if (host?.model) this.modelSelect.value = host.model;
      if (!current.models.length && !host?.model) {
        this.modelSelect.append(h('option', { value: '', text: 'No model' }));
        this.modelSelect.disabled = true;
      }
    }
    const tools = host?.tools ?? [];
    this.toolsButton.textContent = '';
    this.toolsButton.append(icon('tools'), h('span', { text: String(tools.length) }));
    const names = tools.map((t) => t.name).join(', ');
    this.toolsButton.title = tools.length ? `Managed tools: ${names}. Click to edit codeact.tools.` : 'No managed tools declared. Click to declare tools in codeact.tools.';
    this.toolsButton.setAttribute('aria-label', tools.length ? `${tools.length} managed tools declared: ${names}. Edit tools.` : 'No managed tools declared. Declare tools.');
    toggle(this.toolsButton, 'warn', tools.length === 0);
  }

  private onProviderChange(): void {
    const p = this.host?.providers.find((x) => x.id === this.providerSelect.value);
    if (!p) return;
    const model = p.models.find((m) => m.id === this.host?.model)?.id ?? p.models[0]?.id;
    if (this.host) {
      this.host.provider = p.id;
      this.host.model = model;
    }
    this.renderPicker();
    this.renderEmptyState();
    if (model) this.post({ type: 'selectModel', provider: p.id, model });
    else this.post({ type: 'command', command: 'selectModel' });
  }

  private onModelChange(): void {
    const provider = this.providerSelect.value;
    const model = this.modelSelect.value;
    if (!provider || !model) return;
    if (this.host) this.host.model = model;
    this.renderEmptyState();
    this.post({ type: 'selectModel', provider, model });
  }

  private renderEmptyState(): void {
    const empty = this.model.turns.length === 0;
    this.emptyEl.hidden = !empty;
    toggle(this.root, 'is-empty', empty);
    if (!empty) return;
    const host = this.host;
    const provider = host?.providers.find((p) => p.id === host.provider) ?? host?.providers[0];
    const hasKey = Boolean(provider?.hasKey);
    const localServer = provider?.id === 'openai-compatible';
    const hasModel = Boolean(host?.model);
    const tools = host?.tools ?? [];
    const trusted = host?.trusted !== false;
    const cmd = (command: HostCommand) => () => this.post({ type: 'command', command });

    const step = (done: boolean, iconName: IconName, title: string, detail: string, action: HTMLElement | null) =>
      h(
        'li',
        { class: `step${done ? ' done' : ''}` },
        h('span', { class: 'step-icon', 'aria-hidden': 'true' }, icon(done ? 'pass' : iconName)),
        h('div', { class: 'step-text' }, h('div', { class: 'step-title', text: title }), h('div', { class: 'step-detail', text: detail })),
        action,
      );

    const runtime = host?.mode === 'hosted' ? `in the ${provider?.label ?? 'provider'} sandbox` : host?.runtime === 'jupyter' ? 'on your Jupyter kernel' : 'in a local Python sandbox';
    const steps = h(
      'ol',
      { class: 'steps', 'aria-label': 'Setup' },
      step(
        hasKey,
        'key',
        localServer ? 'No API key needed' : hasKey ? `API key for ${provider?.label ?? 'the provider'} is set` : `Set an API key${provider ? ` for ${provider.label}` : ''}`,
        localServer
          ? 'OpenAI-compatible servers such as Ollama, vLLM and llama.cpp usually need none; set one with Set API Key… if yours does.'
          : hasKey
            ? 'Kept in VS Code SecretStorage (or read from the environment); never written to settings or logs.'
            : 'Keys go to VS Code SecretStorage. An environment variable works too.',
        hasKey ? null : button('Set API Key…', 'key', cmd('setApiKey'), 'button primary'),
      ),
      step(
        hasModel,
        'sparkle',
        hasModel ? `Model: ${provider?.models.find((m) => m.id === host?.model)?.label ?? host?.model}` : 'Choose a provider and model',
        hasModel ? `${provider?.label ?? ''} — change it any time in the picker below.` : 'Pick one in the picker below or from the list of models.',
        hasModel ? null : button('Select Model…', 'sparkle', cmd('selectModel'), hasKey ? 'button primary' : 'button secondary'),
      ),
      step(
        tools.length > 0,
        'tools',
        tools.length ? `${tools.length} managed ${tools.length === 1 ? 'tool' : 'tools'} declared` : 'Declare the tools the code may call',
        tools.length ? tools.slice(0, 6).map((t) => t.name).join(', ') + (tools.length > 6 ? ', …' : '') : 'Add entries to codeact.tools in .vscode/settings.json: a command, an HTTP endpoint or an MCP tool.',
        button(tools.length ? 'Edit Tools' : 'Declare Tools…', 'gear', cmd('declareTools'), tools.length || !hasKey || !hasModel ? 'button secondary' : 'button primary'),
      ),
    );
    this.emptyEl.textContent = '';
    this.emptyEl.append(
      h('div', { class: 'hero', 'aria-hidden': 'true' }, icon('sparkle')),
      h('h1', { class: 'empty-title', text: 'Put your tools to work' }),
      h('p', { class: 'empty-lede', text: `The model writes Python that calls only the managed tools of this workspace, runs it ${runtime}, and shows every step here.` }),
      steps,
    );
    if (!trusted) {
      // First thing under the title: nothing else on this page works until the workspace is trusted.
      this.emptyEl.insertBefore(
        h(
          'div',
          { class: 'trust-warning', role: 'note' },
          icon('lock'),
          h('div', null, h('strong', { text: 'Restricted mode. ' }), h('span', { text: 'This workspace is not trusted, so code execution and workspace-declared tools are off.' })),
          button('Manage Workspace Trust', null, cmd('manageTrust')),
        ),
        steps,
      );
    }
    const examples = ['What can you do with my tools?', 'Summarise the open orders and flag any that are late', 'Plot revenue per day for the last two weeks'];
    const ex = h('div', { class: 'examples', role: 'group', 'aria-label': 'Example prompts' });
    for (const e of examples)
      ex.append(
        h('button', {
          class: 'example',
          type: 'button',
          text: e,
          onclick: () => {
            this.input.value = e;
            this.autosize();
            this.focusInput();
          },
        }),
      );
    this.emptyEl.append(h('div', { class: 'examples-label', text: 'Try' }), ex, h('p', { class: 'hint', text: 'Enter sends · Shift+Enter new line · ↑ ↓ earlier prompts' }));
  }

  private updateBusy(): void {
    const busy = this.busy();
    this.stopButton.hidden = !busy;
    this.sendButton.hidden = busy;
    toggle(this.root, 'is-busy', busy);
  }

  private updateStatus(): void {
    const text = this.computeStatus();
    if (text !== this.lastStatus) {
      this.lastStatus = text;
      this.statusEl.textContent = text;
      toggle(this.statusEl, 'visible', Boolean(text));
    }
  }

  private computeStatus(): string {
    const turn = currentTurn(this.model);
    if (!turn) return this.host?.busy ? 'Working…' : '';
    let last: string | undefined;
    for (let i = turn.itemKeys.length - 1; i >= 0; i--) {
      const item = this.model.items[turn.itemKeys[i]];
      if (!item) continue;
      if (item.kind === 'approval' && item.status === 'pending') return 'Waiting for your approval…';
      if (!last) {
        if (item.kind === 'exec') last = execStatus(item);
        else if (item.kind === 'message' && !item.done) last = item.thinking ? 'Thinking…' : 'Writing the answer…';
        else if (item.kind === 'function' && item.status === 'in_progress') last = `Calling ${item.name}…`;
      }
    }
    return last ?? 'Working…';
  }

  private announce(text: string): void {
    this.liveRegion.textContent = text;
  }

  private showNotice(msg: NoticeMessage): void {
    // The same message twice is shown once.
    for (const el of Array.from(this.noticeArea.children)) {
      if (el.querySelector('.notice-text')?.textContent === msg.message) el.remove();
    }
    const actions = (msg.actions ?? []).map((a) => button(a.label, null, () => this.post({ type: 'command', command: a.command })));
    const note = h(
      'div',
      { class: `notice ${msg.level}`, role: msg.level === 'error' ? 'alert' : 'status' },
      icon(msg.level === 'error' ? 'error' : msg.level === 'warning' ? 'warning' : 'info'),
      h('span', { class: 'notice-text', text: msg.message }),
      ...actions,
    );
    note.append(toolbarButton('close', 'Dismiss', () => note.remove()));
    this.noticeArea.append(note);
    while (this.noticeArea.children.length > 3) this.noticeArea.firstElementChild?.remove();
  }

  // ---- composer ---------------------------------------------------------------------------------

  private focusInput(): void {
    this.input.focus();
    const n = this.input.value.length;
    this.input.setSelectionRange(n, n);
  }

  private autosize(): void {
    this.input.style.height = 'auto';
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }

  private send(): void {
    const text = this.input.value.trim();
    if (!text) return;
    if (this.busy()) {
      this.statusEl.textContent = 'A turn is still running: wait for it or press Stop.';
      this.lastStatus = this.statusEl.textContent;
      toggle(this.statusEl, 'visible', true);
      return;
    }
    this.post({ type: 'send', text });
    if (this.inputHistory[this.inputHistory.length - 1] !== text) this.inputHistory.push(text);
    if (this.inputHistory.length > MAX_INPUT_HISTORY) this.inputHistory.splice(0, this.inputHistory.length - MAX_INPUT_HISTORY);
    this.historyIndex = -1;
    this.input.value = '';
    this.autosize();
    this.stick = true;
    this.saveNow();
  }

  private stop(): void {
    this.post({ type: 'stop' });
    this.statusEl.textContent = 'Stopping…';
    this.lastStatus = 'Stopping…';
    toggle(this.statusEl, 'visible', true);
  }

  private onKeyDown(e: KeyboardEvent): void {
    if (e.isComposing) return;
    if (e.key === 'Enter' && !e.shiftKey && !e.altKey) {
      e.preventDefault();
      this.send();
      return;
    }
    if (e.key === 'Escape' && this.busy()) {
      e.preventDefault();
      this.stop();
      return;
    }
    if ((e.key === 'ArrowUp' || e.key === 'ArrowDown') && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      const el = this.input;
      const before = el.value.slice(0, el.selectionStart);
      const after = el.value.slice(el.selectionEnd);
      if (e.key === 'ArrowUp' && !before.includes('\n')) {
        if (!this.inputHistory.length) return;
        if (this.historyIndex === -1) {
          this.historyDraft = el.value;
          this.historyIndex = this.inputHistory.length;
        }
        if (this.historyIndex > 0) {
          e.preventDefault();
          this.historyIndex--;
          this.setInputFromHistory(this.inputHistory[this.historyIndex]);
        }
      } else if (e.key === 'ArrowDown' && !after.includes('\n') && this.historyIndex !== -1) {
        e.preventDefault();
        this.historyIndex++;
        if (this.historyIndex >= this.inputHistory.length) {
          this.historyIndex = -1;
          this.setInputFromHistory(this.historyDraft);
        } else {
          this.setInputFromHistory(this.inputHistory[this.historyIndex]);
        }
      }
    }
  }

  private setInputFromHistory(text: string): void {
    this.input.value = text;
    this.autosize();
    const n = text.length;
    this.input.setSelectionRange(n, n);
  }

  // ---- transcript interactions --------------------------------------------------------------------

  private onScroll(): void {
    this.stick = this.atBottom();
    this.updateJump();
  }

  private jumpToLatest(): void {
    this.stick = true;
    // An empty conversation shows the empty state from its top.
    this.scroller.scrollTop = this.model.turns.length ? this.scroller.scrollHeight : 0;
    this.jumpButton.hidden = true;
  }

  private onTranscriptClick(e: MouseEvent): void {
    const target = e.target as Element | null;
    if (!target) return;
    const action = target.closest('[data-md-action]');
    if (action) {
      const code = action.closest('.md-code')?.querySelector('pre')?.textContent ?? '';
      if (action.getAttribute('data-md-action') === 'copy') this.post({ type: 'copy', text: code });
      else this.post({ type: 'insertCode', code });
      return;
    }
    const link = target.closest('a[href]');
    if (link) {
      e.preventDefault();
      const href = link.getAttribute('href') ?? '';
      if (/^(https?:|mailto:)/i.test(href)) this.post({ type: 'openLink', href });
    }
  }

  // ---- history ----------------------------------------------------------------------------------

  private openHistory(): void {
    this.historyPanel.hidden = false;
    this.renderHistory();
    this.post({ type: 'history.list' });
    const first = this.historyPanel.querySelector<HTMLElement>('.history-open, button');
    first?.focus();
  }

  private closeHistory(): void {
    this.historyPanel.hidden = true;
    this.historyButton.focus();
  }

  private renderHistory(): void {
    if (this.historyPanel.hidden) return;
    const list = this.conversations;
    this.historyList.textContent = '';
    const foot = this.historyPanel.querySelector('.history-foot')!;
    foot.textContent = '';
    if (!list) {
      this.historyList.append(h('li', { class: 'history-empty', text: 'Loading…' }));
      return;
    }
    if (!list.length) {
      this.historyList.append(h('li', { class: 'history-empty', text: 'No saved conversations yet. Each conversation is saved when its first turn ends.' }));
      return;
    }
    for (const c of list) {
      const current = c.id === this.conversationId;
      const open = h(
        'button',
        {
          class: 'history-open',
          type: 'button',
          'aria-current': current ? 'true' : undefined,
          onclick: () => {
            this.post({ type: 'history.open', conversationId: c.id });
            this.closeHistory();
          },
        },
        h('span', { class: 'history-name', text: c.title || 'Untitled' }),
        h('span', { class: 'history-meta', text: [relativeTime(c.updatedAt), `${c.turns} ${c.turns === 1 ? 'turn' : 'turns'}`, c.model].filter(Boolean).join(' · ') }),
      );
      const exp = toolbarButton('notebook', `Export “${c.title}” as notebook`, () => this.post({ type: 'exportNotebook', conversationId: c.id }));
      const del = toolbarButton('trash', `Delete “${c.title}”`, () => this.post({ type: 'history.delete', conversationId: c.id }));
      this.historyList.append(h('li', { class: `history-item${current ? ' current' : ''}` }, open, h('span', { class: 'history-actions' }, exp, del)));
    }
    // The host confirms (a modal) before it deletes anything.
    const clear = button('Clear history…', 'trash', () => this.post({ type: 'history.clear' }), 'button secondary', 'Delete every saved conversation');
    foot.append(clear);
  }
}

function execStatus(x: ExecView): string | undefined {
  if (x.status === 'writing') return 'Writing code…';
  if (x.status === 'running') {
    const running = x.tools.filter((c) => c.status === 'running');
    if (running.length === 1) return `Running code · calling ${running[0].name}…`;
    if (running.length > 1) return `Running code · ${running.length} tool calls in flight…`;
    return 'Running code…';
  }
  return undefined;
}
