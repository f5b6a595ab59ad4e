/**
 * The composer at the bottom of the panel: the status line, the prompt (Enter sends, Shift+Enter adds a
 * line, Up/Down recall earlier prompts, Escape stops a running turn), the provider and model picker, the
 * managed-tools chip, Send and Stop.
 */
import type { HostState, WebviewToHost } from '../common/protocol';
import { h, toggle } from './dom';
import { icon } from './icons';
import { revealedPlain, updateRevealed } from './reveal';
import type { TranscriptModel } from '../common/transcript';
import { ContextMeter } from './contextMeter';
import { NotebookTargetBar } from './notebookTarget';
import { WorkspaceBar } from './workspaceBar';
import { PromptHistory } from './promptHistory';

const MAX_INPUT_HISTORY = 100;

interface ComposerHost {
  post(message: WebviewToHost): void;
  host(): HostState | undefined;
  busy(): boolean;
  /** A prompt was sent. */
  sent(): void;
  /** The draft changed (save it). */
  draftChanged(): void;
  /** The provider or model changed. */
  pickerChanged(): void;
}

export class Composer {
  readonly el: HTMLElement;
  readonly statusEl: HTMLElement;
  readonly input: HTMLTextAreaElement;
  private readonly providerSelect: HTMLSelectElement;
  private readonly modelSelect: HTMLSelectElement;
  /** The provider and model in one compact control, for a narrow panel (CSS shows one or the other). */
  private readonly pickerButton: HTMLButtonElement;
  private readonly pickerLabel: HTMLElement;
  private readonly toolsButton: HTMLButtonElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly history: PromptHistory;
  /** How full the context window is (the model's latest request). */
  readonly meter = new ContextMeter();
  /** The open notebook the turns work in. */
  private readonly notebookBar: NotebookTargetBar;
  /** The folder the turns run in (multi-root) and the Python environment. */
  private readonly workspaceBar: WorkspaceBar;
  private lastStatus = '';

  /** The prompts sent, oldest first (saved with the panel's state). */
  get inputHistory(): string[] {
    return this.history.items;
  }

  constructor(
    private readonly ctx: ComposerHost,
    draft: string,
    inputHistory: string[],
  ) {
    this.history = new PromptHistory(inputHistory, MAX_INPUT_HISTORY);
    this.notebookBar = new NotebookTargetBar((m) => this.ctx.post(m));
    this.workspaceBar = new WorkspaceBar((m) => this.ctx.post(m));
    this.statusEl = h('div', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
    this.input = h('textarea', {
      class: 'prompt-input',
      rows: '1',
      placeholder: 'Ask CodeAct to do something with your tools…',
      'aria-label': 'Message CodeAct. Enter sends, Shift+Enter adds a line, Up and Down recall earlier messages.',
      spellcheck: 'true',
    });
    this.input.value = draft;
    this.input.addEventListener('keydown', (e) => this.onKeyDown(e));
    this.input.addEventListener('input', () => {
      this.autosize();
      this.history.reset();
      this.ctx.draftChanged();
    });
    this.providerSelect = h('select', { class: 'select', 'aria-label': 'Provider' });
    this.modelSelect = h('select', { class: 'select model', 'aria-label': 'Model' });
    this.providerSelect.addEventListener('change', () => this.onProviderChange());
    this.modelSelect.addEventListener('change', () => this.onModelChange());
    this.pickerLabel = h('span', { class: 'picker-label' });
    this.pickerButton = h(
      'button',
      { class: 'chip-button picker-compact', type: 'button', onclick: () => this.ctx.post({ type: 'command', command: 'selectModel' }) },
      icon('sparkle'),
      this.pickerLabel,
    );
    this.toolsButton = h('button', {
      class: 'chip-button tools-chip',
      type: 'button',
      onclick: () => this.ctx.post({ type: 'command', command: 'declareTools' }),
    });
    this.sendButton = h(
      'button',
      { class: 'send-button', type: 'button', title: 'Send (Enter)', 'aria-label': 'Send', onclick: () => this.send() },
      icon('send'),
    );
    this.stopButton = h(
      'button',
      { class: 'stop-button', type: 'button', title: 'Stop', 'aria-label': 'Stop the running turn', hidden: true, onclick: () => this.stop() },
      icon('stop'),
      h('span', { text: 'Stop' }),
    );
    this.el = h(
      'footer',
      { class: 'composer' },
      this.statusEl,
      this.workspaceBar.el,
      this.notebookBar.el,
      h(
        'div',
        { class: 'input-box' },
        this.input,
        h(
          'div',
          { class: 'input-row' },
          this.providerSelect,
          this.modelSelect,
          this.pickerButton,
          this.toolsButton,
          h('span', { class: 'spacer' }),
          this.meter.el,
          this.stopButton,
          this.sendButton,
        ),
      ),
    );
  }

  get draft(): string {
    return this.input.value;
  }

  setBusy(busy: boolean): void {
    this.stopButton.hidden = !busy;
    this.sendButton.hidden = busy;
  }

  /** The status line; with the transcript, the context meter too. */
  setStatus(status: string, model?: TranscriptModel): void {
    if (model) this.meter.update(model);
    if (status === this.lastStatus) return;
    this.lastStatus = status;
    this.statusEl.textContent = status;
    toggle(this.statusEl, 'visible', Boolean(status));
  }

  setInput(text: string, send: boolean): void {
    this.input.value = text;
    this.autosize();
    if (send) this.send();
    else this.focus();
  }

  focus(): void {
    this.input.focus();
    const n = this.input.value.length;
    this.input.setSelectionRange(n, n);
  }

  /** Grows the input with its text (on input events only, never on the frame path). */
  autosize(): void {
    this.input.style.height = 'auto';
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }

  renderPicker(): void {
    const host = this.ctx.host();
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
      // An <option> holds plain text: an endpoint's label, a server's model ids and names show their markers as text.
      for (const p of providers)
        this.providerSelect.append(h('option', { value: p.id, text: `${revealedPlain(p.label, { line: true })}${p.hasKey ? '' : ' (no key)'}` }));
      const current = providers.find((p) => p.id === host?.provider) ?? providers[0];
      this.providerSelect.value = current.id;
      for (const m of current.models)
        this.modelSelect.append(h('option', { value: m.id, text: revealedPlain(m.label ?? m.id, { line: true }), title: revealedPlain(m.detail ?? '') }));
      if (host?.model && !current.models.some((m) => m.id === host.model))
        this.modelSelect.append(h('option', { value: host.model, text: revealedPlain(host.model, { line: true }) }));
      if (host?.model) this.modelSelect.value = host.model;
      if (!current.models.length && !host?.model) {
        this.modelSelect.append(h('option', { value: '', text: 'No model' }));
        this.modelSelect.disabled = true;
      }
    }
    this.renderCompactPicker(host);
    this.renderToolsChip(host);
    this.notebookBar.render(host?.notebook);
    this.workspaceBar.render(host);
  }

  /** The compact picker: the model's name (none at the narrowest), the full provider and model in its tooltip. */
  private renderCompactPicker(host: HostState | undefined): void {
    const provider = host?.providers.find((p) => p.id === host.provider) ?? host?.providers[0];
    const model = revealedPlain(host?.model ?? '', { line: true });
    const full = provider ? `${revealedPlain(provider.label, { line: true })}${provider.hasKey ? '' : ' (no key)'} · ${model || 'no model'}` : 'No provider';
    updateRevealed(this.pickerLabel, host?.model || 'Model', { line: true });
    this.pickerButton.title = `${full}. Click to change the provider and model.`;
    this.pickerButton.setAttribute('aria-label', `Provider and model: ${full}. Change`);
    this.providerSelect.title = provider ? `Provider: ${revealedPlain(provider.label, { line: true })}` : '';
    this.modelSelect.title = model ? `Model: ${model}` : '';
  }

  /** "4 tools" with a warning for broken declarations; names and problems in the tooltip. */
  private renderToolsChip(host: HostState | undefined): void {
    const tools = host?.tools ?? [];
    const broken = host?.brokenTools ?? [];
    this.toolsButton.textContent = '';
    this.toolsButton.append(icon('tools'), h('span', { text: String(tools.length) }));
    if (broken.length) this.toolsButton.append(icon('warning'), h('span', { class: 'broken-count', text: String(broken.length) }));
    const names = tools.map((t) => revealedPlain(t.name, { line: true })).join(', ');
    const ready = tools.length ? `${tools.length} ${tools.length === 1 ? 'tool' : 'tools'} ready: ${names}` : 'No managed tools ready';
    const wrong = broken
      .map((b) => `${b.name === undefined ? `codeact.tools[${b.index}]` : revealedPlain(b.name, { line: true })} is broken: ${revealedPlain(b.message)}`)
      .join('\n');
    this.toolsButton.title = `${ready}.${broken.length ? `\n${wrong}` : ''}\nClick to edit codeact.tools.`;
    this.toolsButton.setAttribute('aria-label', `${ready}${broken.length ? `, ${broken.length} broken` : ''}. Edit tools.`);
    toggle(this.toolsButton, 'warn', tools.length === 0 || broken.length > 0);
  }

  private onProviderChange(): void {
    const host = this.ctx.host();
    const p = host?.providers.find((x) => x.id === this.providerSelect.value);
    if (!p) return;
    const model = p.models.find((m) => m.id === host?.model)?.id ?? p.models[0]?.id;
    if (host) {
      host.provider = p.id;
      host.model = model;
    }
    this.renderPicker();
    this.ctx.pickerChanged();
    if (model) this.ctx.post({ type: 'selectModel', provider: p.id, model });
    else this.ctx.post({ type: 'command', command: 'selectModel' });
  }

  private onModelChange(): void {
    const provider = this.providerSelect.value;
    const model = this.modelSelect.value;
    if (!provider || !model) return;
    const host = this.ctx.host();
    if (host) host.model = model;
    this.ctx.pickerChanged();
    this.ctx.post({ type: 'selectModel', provider, model });
  }

  private send(): void {
    const text = this.input.value.trim();
    if (!text) return;
    if (this.ctx.busy()) {
      this.setStatus('A turn is still running: wait for it or press Stop.');
      return;
    }
    this.ctx.post({ type: 'send', text });
    this.history.add(text);
    this.input.value = '';
    this.autosize();
    this.ctx.sent();
  }

  private stop(): void {
    this.ctx.post({ type: 'stop' });
    this.setStatus('Stopping…');
  }

  private onKeyDown(e: KeyboardEvent): void {
    if (e.isComposing) return;
    if (e.key === 'Enter' && !e.shiftKey && !e.altKey) {
      e.preventDefault();
      this.send();
      return;
    }
    if (e.key === 'Escape' && this.ctx.busy()) {
      e.preventDefault();
      this.stop();
      return;
    }
    if ((e.key === 'ArrowUp' || e.key === 'ArrowDown') && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      const el = this.input;
      const before = el.value.slice(0, el.selectionStart);
      const after = el.value.slice(el.selectionEnd);
      const text =
        e.key === 'ArrowUp' ? (before.includes('\n') ? undefined : this.history.older(el.value)) : after.includes('\n') ? undefined : this.history.newer();
      if (text !== undefined) {
        e.preventDefault();
        this.setInputFromHistory(text);
      }
    }
  }

  private setInputFromHistory(text: string): void {
    this.input.value = text;
    this.autosize();
    const n = text.length;
    this.input.setSelectionRange(n, n);
  }
}
