/**
 * The chat panel application: layout (header, transcript, composer), the host protocol, persistence across
 * reloads (getState/setState), and the frame loop that applies transcript changes to the DOM. The frame path
 * only writes: where the transcript is scrolled to (following the bottom, a place kept across reloads) is
 * `ScrollMemory`'s.
 */
import { isHostMessage } from '../common/protocolCheck';
import { PROTOCOL_VERSION, type ConversationSummary, type HostState, type HostToWebview, type WebviewToHost } from '../common/protocol';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../common/imageHeader';
import { applyEvent, buildTranscript, createTranscript, findTurn, isBusy, type TranscriptEvent, type TranscriptModel } from '../common/transcript';
import { Composer } from './composer';
import { JobStrip } from './jobCard';
import { h, toggle } from './dom';
import { renderEmptyState } from './emptyState';
import { revealedPlain, updateRevealed } from './reveal';
import { FrameLoop, IdleQueue } from './frameLoop';
import { HistoryPanel } from './historyPanel';
import { showNotice } from './notices';
import { icon } from './icons';
import { statusText } from './panelStatus';
import { WARM_UP_STEPS } from './markdown';
import { modelForState, validState, type PanelState, type ScrollPosition } from './persistence';
import { restorable, ScrollMemory } from './scrollMemory';
import { TranscriptView } from './transcriptView';
import { VariablesView } from './variablesView';
import { toolbarButton, type ViewContext } from './viewKit';
import type { HostApi } from './vscodeApi';

export type { PanelState } from './persistence';

export class App {
  private model: TranscriptModel;
  private seq: number;
  private epoch: string | undefined; // the host's numbering `seq` is from (the last `reset`'s)
  /** The saved state left out large displays: the host is asked for the whole transcript, batches wait for it. */
  private partial: boolean;
  private conversationId?: string;
  private title?: string;
  private host?: HostState;
  private conversations?: ConversationSummary[];

  private readonly view: TranscriptView;
  private readonly frames: FrameLoop;
  /** The items the last run of `frame` drew, and the animation frame it ran in (see `frame`). */
  private drawnIn: { frame: number | undefined; keys: Set<string> } = { frame: undefined, keys: new Set() };
  private readonly idle = new IdleQueue();
  private readonly scroll: ScrollMemory;
  private readonly dirtyItems = new Set<string>();
  private readonly dirtyTurns = new Set<string>();
  private saveTimer: ReturnType<typeof setTimeout> | undefined;

  private readonly titleEl: HTMLElement;
  private readonly noticeArea: HTMLElement;
  private readonly scroller: HTMLElement;
  private readonly transcriptEl: HTMLElement;
  private readonly emptyEl: HTMLElement;
  private readonly jumpButton: HTMLButtonElement;
  private readonly liveRegion: HTMLElement;
  private readonly composer: Composer;
  private readonly jobs: JobStrip;
  private readonly history: HistoryPanel;
  private readonly historyButton: HTMLButtonElement;
  private readonly variables: VariablesView;

  constructor(
    private readonly root: HTMLElement,
    private readonly api: HostApi<PanelState>,
    initialHost?: HostState,
  ) {
    const saved = validState(api.getState());
    this.model = saved ? saved.model : createTranscript();
    this.seq = saved ? saved.seq : 0;
    this.epoch = typeof saved?.epoch === 'string' ? saved.epoch : undefined;
    this.partial = Boolean(saved?.partial);
    this.conversationId = saved?.conversationId;
    this.title = saved?.title;
    this.host = initialHost ?? saved?.host;
    this.conversations = saved?.conversations;

    const ctx: ViewContext = {
      post: (m) => this.post(m),
      announce: (t) => this.announce(t),
      maxImagePixels: () => validPixelCap(this.host?.maxImagePixels),
    };

    // header
    this.variables = new VariablesView((m) => this.post(m));
    this.titleEl = h('span', { class: 'conv-title' });
    this.historyButton = toolbarButton('history', 'Conversation history', () => this.history.open(this.conversations, this.conversationId));
    const exportButton = toolbarButton('notebook', 'Export as notebook (.ipynb)', () =>
      this.post({ type: 'exportNotebook', ...(this.conversationId ? { conversationId: this.conversationId } : {}) }),
    );
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
        exportButton,
      ),
    );

    this.noticeArea = h('div', { class: 'notices' });

    // transcript
    this.transcriptEl = h('div', { class: 'transcript', role: 'log', 'aria-label': 'Conversation', 'aria-live': 'off' });
    this.emptyEl = h('div', { class: 'empty-state', role: 'region', 'aria-label': 'Get started' });
    this.scroller = h('main', { class: 'scroller' }, this.emptyEl, this.transcriptEl);
    this.jumpButton = h(
      'button',
      { class: 'jump-latest', type: 'button', hidden: true, 'aria-label': 'Jump to the latest message', onclick: () => this.scroll.jumpToLatest() },
      icon('arrowDown'),
      h('span', { text: 'Latest' }),
    );
    this.view = new TranscriptView(this.transcriptEl, ctx, this.idle);
    this.scroll = new ScrollMemory(this.scroller, this.transcriptEl, this.view, restorable(saved?.scroll, this.model), {
      hasTurns: () => this.model.turns.length > 0,
      conversationId: () => this.conversationId,
      saveNow: () => this.saveNow(),
      post: (m) => this.post(m),
      stuckChanged: () => this.updateJump(),
    });
    this.scroller.addEventListener('click', (e) => this.onTranscriptClick(e));
    this.frames = new FrameLoop((frame) => this.frame(frame));

    // composer and history
    this.liveRegion = h('div', { class: 'sr-only', 'aria-live': 'assertive', role: 'alert' });
    this.composer = new Composer(
      {
        post: (m) => this.post(m),
        host: () => this.host,
        busy: () => this.busy(),
        sent: () => {
          this.scroll.toBottom();
          this.saveNow();
        },
        draftChanged: () => this.scheduleSave(),
        pickerChanged: () => this.renderEmptyState(),
      },
      saved?.draft ?? '',
      saved && Array.isArray(saved.inputHistory) ? saved.inputHistory : [],
    );
    this.history = new HistoryPanel(
      (m) => this.post(m),
      () => this.historyButton.focus(),
    );

    root.textContent = '';
    root.removeAttribute('aria-busy');
    this.jobs = new JobStrip(ctx);
    root.append(header, this.variables.el, this.noticeArea, this.scroller, this.jumpButton, this.jobs.el, this.composer.el, this.history.el, this.liveRegion);

    window.addEventListener('message', (e: MessageEvent) => this.onMessage(e.data));
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'hidden') this.saveNow();
      else this.frames.schedule();
    });
    window.addEventListener('pagehide', () => this.saveNow());

    this.view.renderAll(this.model, { around: this.scroll.restoringTurn });
    this.renderChrome();
    this.composer.autosize();
    this.scroll.settleSoon();
    let step = 0;
    this.idle.add(() => {
      WARM_UP_STEPS[step++]?.();
      return step < WARM_UP_STEPS.length;
    });
    this.post({ type: 'ready', protocol: PROTOCOL_VERSION, seq: this.seq, ...this.where(), ...(this.partial ? { full: true } : {}) });
  }

  // ---- host messages ----------------------------------------------------------------------------

  /** The conversation and the numbering the page's `seq` is in, for `ready` and `resync`. */
  private where = () => ({ ...(this.conversationId ? { conversationId: this.conversationId } : {}), ...(this.epoch ? { epoch: this.epoch } : {}) });

  private post(message: WebviewToHost): void {
    this.api.post(message);
  }

  onMessage(data: unknown): void {
    if (!isHostMessage(data)) return;
    try {
      this.handle(data);
    } catch (err) {
      this.post({ type: 'webviewError', message: `Could not apply ${data.type}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}` });
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
        this.epoch = msg.epoch;
        this.reset(msg.events, msg.seq, msg.conversationId, msg.title, msg.scroll, msg.toEnd);
        break;
      case 'history':
        this.conversations = msg.conversations;
        this.history.update(this.conversations, this.conversationId);
        this.scheduleSave();
        break;
      case 'setInput':
        this.composer.setInput(msg.text, Boolean(msg.send));
        break;
      case 'focusInput':
        this.composer.focus();
        break;
      case 'notice':
        showNotice(this.noticeArea, msg, (command) => this.post({ type: 'command', command }));
        break;
      case 'variables':
        this.variables.update(msg);
        break;
      case 'file.missing':
        this.view.fileMissing(this.model, msg.itemId, msg.path, msg.message);
        break;
      case 'changes.reverted':
        this.view.changesReverted(this.model, msg.itemId, msg.reverted, msg.failed, msg.kept === true);
        break;
      case 'exec.rewound':
        this.view.rewound(this.model, msg);
        break;
      case 'revealJob':
        [...this.transcriptEl.querySelectorAll(`.job-card[data-job="${msg.job}"][data-session="${CSS.escape(msg.sessionId)}"]`)]
          .pop()
          ?.scrollIntoView({ block: 'center' });
        break;
    }
  }

  private applyBatch(events: TranscriptEvent[], seq: number, conversationId?: string): void {
    // The whole transcript is on its way (a `reset`): these events are in it.
    if (this.partial) return;
    const conversation = conversationId ?? this.conversationId;
    if (conversation !== this.conversationId) {
      if (seq !== 1) {
        this.post({ type: 'resync', seq: this.seq, ...this.where() });
        return;
      }
      // Batch 1 of another conversation: a new conversation starts.
      this.reset([], 0, conversation, undefined);
    } else if (seq <= this.seq) {
      return; // already applied
    }
    if (seq > this.seq + 1) {
      this.post({ type: 'resync', seq: this.seq, ...this.where() });
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
    if (!hadTurns && this.model.turns.length > 0) {
      this.renderEmptyState();
      this.scroll.toBottom();
    }
    this.frames.schedule();
    this.scheduleSave();
  }

  private reset(events: TranscriptEvent[], seq: number, conversationId?: string, title?: string, hostScroll?: ScrollPosition, toEnd = false): void {
    const keep = toEnd ? undefined : this.scroll.placeToKeep(conversationId !== undefined && conversationId === this.conversationId, hostScroll);
    this.model = buildTranscript(events.filter((e) => e && typeof (e as { type?: unknown }).type === 'string'));
    this.seq = seq;
    this.partial = false;
    this.conversationId = conversationId;
    this.title = title;
    this.dirtyItems.clear();
    this.dirtyTurns.clear();
    this.scroll.restoreTo(restorable(keep, this.model));
    this.view.renderAll(this.model, { around: this.scroll.restoringTurn });
    this.renderChrome();
    this.jobs.render(this.model);
    // Saved a moment later: serialising a long conversation is work this task does not need to do.
    this.scheduleSave();
    if (!this.scroll.restoringTurn) this.scroll.toBottom();
    this.scroll.settleSoon();
  }

  // ---- frame loop -------------------------------------------------------------------------------

  /**
   * Applies what changed since the last frame. Writes only: no layout is read here.
   *
   * A running execution drawn by the animation frame just before, and changed again (output pouring in),
   * waits for the next one: a flood of output is drawn every other frame, which halves what the page spends
   * on it (style, layout, paint) and leaves the cores to the host and the program. A single print, a status
   * change and the end of the run are drawn by the next frame as always.
   */
  private frame(frame: number | undefined): void {
    const drawn = new Set<string>();
    const holding = frame !== undefined && this.drawnIn.frame === frame - 1;
    let held = false;
    for (const key of this.dirtyItems) {
      const item = this.model.items[key];
      if (holding && item?.kind === 'exec' && item.status === 'running' && this.drawnIn.keys.has(key)) {
        held = true;
        continue;
      }
      this.dirtyItems.delete(key);
      if (!item) continue;
      this.view.syncItem(item);
      drawn.add(key);
    }
    this.drawnIn = { frame, keys: drawn };
    for (const id of this.dirtyTurns) {
      const turn = findTurn(this.model, id);
      if (turn) this.view.syncTurn(turn);
    }
    this.dirtyTurns.clear();
    this.jobs.render(this.model);
    this.updateBusy();
    this.composer.setStatus(statusText(this.model, Boolean(this.host?.busy)), this.model);
    if (held) this.frames.schedule();
  }

  /** Puts everything received so far into the DOM now (tests and the benchmark). */
  flushNow(): void {
    this.frames.flush();
  }

  /** Resolves when everything received is on screen, including turns left for idle time (tests, benchmark). */
  async whenIdle(): Promise<void> {
    await this.idle.whenIdle();
    // A frame may hold a streaming execution for the next one (`frame`): at most two frames.
    for (let i = 0; i < 3 && this.frames.pending; i++) await new Promise<void>((resolve) => requestAnimationFrame(() => resolve()));
  }

  // ---- scrolling --------------------------------------------------------------------------------

  /** "Latest" is offered while the view does not follow the bottom of a conversation. */
  private updateJump(): void {
    this.jumpButton.hidden = this.scroll.stuck || this.model.turns.length === 0;
  }

  // ---- persistence ------------------------------------------------------------------------------

  private scheduleSave(): void {
    if (this.saveTimer) return;
    this.saveTimer = setTimeout(() => this.saveNow(), 1000);
  }

  private saveNow(): void {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    const scroll = this.scroll.forSave();
    try {
      const saved = this.partial ? { model: this.model, partial: true } : modelForState(this.model);
      this.api.setState({
        v: 1,
        conversationId: this.conversationId,
        title: this.title,
        seq: this.seq,
        ...(this.epoch ? { epoch: this.epoch } : {}),
        model: saved.model,
        ...(saved.partial ? { partial: true } : {}),
        host: this.host,
        draft: this.composer.draft,
        inputHistory: this.composer.inputHistory,
        conversations: this.conversations,
        scroll,
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
    // The conversation's title comes from its first prompt, the model or a saved file: outside text.
    updateRevealed(this.titleEl, this.title || 'CodeAct', { line: true });
    this.titleEl.title = revealedPlain(this.title || 'CodeAct', { line: true });
    this.composer.renderPicker();
    this.renderEmptyState();
    this.updateBusy();
    this.composer.setStatus(statusText(this.model, Boolean(this.host?.busy)), this.model);
  }

  private renderEmptyState(): void {
    const empty = this.model.turns.length === 0;
    this.emptyEl.hidden = !empty;
    toggle(this.root, 'is-empty', empty);
    // The empty state is read from its top; following the bottom starts with the first turn.
    this.scroll.setActive(!empty);
    this.updateJump();
    if (!empty) return;
    this.emptyEl.textContent = '';
    renderEmptyState(this.emptyEl, this.host, {
      command: (command) => this.post({ type: 'command', command }),
      example: (text) => this.composer.setInput(text, false),
    });
  }

  private updateBusy(): void {
    const busy = this.busy();
    this.composer.setBusy(busy);
    toggle(this.root, 'is-busy', busy);
  }

  private announce(text: string): void {
    this.liveRegion.textContent = text;
  }

  // ---- transcript interactions --------------------------------------------------------------------

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
}

/** The host's pixel cap, when it is a positive number; the default otherwise (an older host, or none yet). */
function validPixelCap(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : DEFAULT_MAX_IMAGE_PIXELS;
}
