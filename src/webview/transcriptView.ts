/**
 * Renders the transcript model into the DOM, one view object per turn and per item. Views pull from the
 * model when marked dirty and update only what changed since they last looked (appended text, appended
 * code, appended output, new tool calls): nothing is ever rendered twice and the whole transcript is
 * never re-rendered.
 */
import type { WebviewToHost } from '../common/protocol';
import type {
  ApprovalView,
  EditorView,
  ErrorView,
  ExecView,
  FunctionView,
  ItemView,
  MessageView,
  NoticeView,
  ToolCallView,
  TranscriptModel,
  TurnView,
} from '../common/transcript';
import { countNewlines } from '../common/transcript';
import { argsPreview, formatCount, formatDuration, formatTokens, h, setText, toggle, uid } from './dom';
import { IncrementalHighlighter, highlight } from './highlight';
import { icon, spinner, type IconName } from './icons';
import { renderJson } from './jsonTree';
import { StreamingMarkdown } from './markdown';
import { OutputPane } from './outputPane';

export interface ViewContext {
  post(message: WebviewToHost): void;
  announce(text: string): void;
  /** Runs after this frame's DOM writes (scroll positions: one layout per frame, not one per card). */
  afterFrame(fn: () => void): void;
}

interface ItemRenderer {
  readonly el: HTMLElement;
  sync(item: ItemView): void;
}

const RUNTIME_LABEL: Record<string, string> = {
  local: 'Local Python',
  jupyter: 'Jupyter',
  openai: 'OpenAI sandbox',
  anthropic: 'Anthropic sandbox',
  gemini: 'Gemini sandbox',
};

const RUNTIME_ICON: Record<string, IconName> = { local: 'terminal', jupyter: 'notebook', openai: 'cloud', anthropic: 'cloud', gemini: 'cloud' };

function iconButton(name: IconName, label: string, onClick: () => void, extra = ''): HTMLButtonElement {
  const b = h('button', { class: `icon-button ${extra}`.trim(), type: 'button', title: label, 'aria-label': label, onclick: () => onClick() });
  b.append(icon(name));
  return b;
}

function textButton(label: string, onClick: () => void, kind: 'primary' | 'secondary' | 'danger' = 'secondary', iconName?: IconName): HTMLButtonElement {
  const b = h('button', { class: `button ${kind}`, type: 'button', onclick: () => onClick() });
  if (iconName) b.append(icon(iconName));
  b.append(h('span', { text: label }));
  return b;
}

/** Adds copy / insert buttons to fenced code blocks of rendered markdown. */
export function decorateMarkdown(container: ParentNode): void {
  for (const pre of Array.from(container.querySelectorAll('pre.md-pre'))) {
    if (pre.parentElement?.classList.contains('md-code')) continue;
    const wrap = h('div', { class: 'md-code' });
    pre.replaceWith(wrap);
    const lang = /language-([\w-]+)/.exec(pre.querySelector('code')?.className ?? '')?.[1];
    const bar = h('div', { class: 'md-code-bar' }, h('span', { class: 'md-code-lang', text: lang ?? '' }));
    const copy = h('button', { class: 'icon-button', type: 'button', title: 'Copy code', 'aria-label': 'Copy code', 'data-md-action': 'copy' });
    copy.append(icon('copy'));
    const insert = h('button', { class: 'icon-button', type: 'button', title: 'Insert into editor', 'aria-label': 'Insert into editor', 'data-md-action': 'insert' });
    insert.append(icon('insert'));
    bar.append(h('span', { class: 'spacer' }), copy, insert);
    wrap.append(bar, pre);
  }
}

// ---- turn -----------------------------------------------------------------------------------------

class TurnRenderer {
  readonly el: HTMLElement;
  readonly items: HTMLElement;
  private readonly footer: HTMLElement;
  private readonly statusEl: HTMLElement;
  private readonly usageEl: HTMLElement;
  private readonly metaEl: HTMLElement;
  private lastRev = -1;
  private lastStatus = '';

  constructor(turn: TurnView, index: number) {
    this.el = h('article', { class: 'turn', 'data-turn-id': turn.id, 'aria-label': `Turn ${index + 1}` });
    if (turn.prompt !== undefined) {
      const label = turn.source === 'run_with_tools' ? 'Run with Tools' : 'You';
      const bubble = h(
        'div',
        { class: `user-msg${turn.source === 'run_with_tools' ? ' run' : ''}` },
        h('div', { class: 'avatar', 'aria-hidden': 'true' }, icon(turn.source === 'run_with_tools' ? 'play' : 'person')),
        h('div', { class: 'user-body' }, h('div', { class: 'who', text: label }), h('div', { class: 'user-text', text: turn.prompt })),
      );
      this.el.append(bubble);
    }
    this.items = h('div', { class: 'turn-items' });
    this.statusEl = h('span', { class: 'turn-status' });
    this.usageEl = h('span', { class: 'turn-usage' });
    this.metaEl = h('span', { class: 'turn-meta' });
    this.footer = h('footer', { class: 'turn-footer' }, this.statusEl, this.usageEl, h('span', { class: 'spacer' }), this.metaEl);
    this.el.append(this.items, this.footer);
  }

  sync(turn: TurnView): void {
    if (turn.rev === this.lastRev) return;
    this.lastRev = turn.rev;
    if (turn.status !== this.lastStatus) {
      this.lastStatus = turn.status;
      this.statusEl.textContent = '';
      this.el.dataset.status = turn.status;
      if (turn.status === 'running') this.statusEl.append(spinner(), h('span', { text: 'Working…' }));
      else if (turn.status === 'stopped') this.statusEl.append(icon('stop'), h('span', { text: 'Stopped' }));
      else if (turn.status === 'failed') this.statusEl.append(icon('error'), h('span', { text: turn.message ? `Failed: ${turn.message}` : 'Failed' }));
      else this.statusEl.append(icon('check'), h('span', { text: 'Done' }));
    }
    const u = turn.usage;
    if (u) {
      setText(this.usageEl, `${formatTokens(u.input_tokens)} in · ${formatTokens(u.output_tokens)} out`);
      this.usageEl.title = `Input tokens: ${formatCount(u.input_tokens)}\nOutput tokens: ${formatCount(u.output_tokens)}${turn.responses > 1 ? `\nModel calls: ${turn.responses}` : ''}`;
      this.usageEl.setAttribute('aria-label', `Usage: ${formatCount(u.input_tokens)} input tokens, ${formatCount(u.output_tokens)} output tokens`);
    }
    const meta = [turn.model, turn.durationMs !== undefined ? formatDuration(turn.durationMs) : ''].filter(Boolean).join(' · ');
    setText(this.metaEl, meta);
  }
}

// ---- messages -------------------------------------------------------------------------------------

class MessageRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly md: StreamingMarkdown;
  private finished = false;
  private lastRev = -1;

  constructor(item: MessageView) {
    const body = h('div', { class: 'md' });
    this.md = new StreamingMarkdown(body, decorateMarkdown);
    if (item.thinking) {
      const details = h('details', { class: 'thinking' }, h('summary', null, icon('sparkle'), h('span', { text: 'Thinking' })), body);
      this.el = h('section', { class: 'msg thinking-msg', 'aria-label': 'Model reasoning' }, details);
    } else if (item.role === 'user') {
      this.el = h('section', { class: 'msg user-note', 'aria-label': 'User message' }, body);
    } else {
      this.el = h('section', { class: 'msg assistant', 'aria-label': 'Answer' }, body);
    }
  }

  sync(item: ItemView): void {
    const m = item as MessageView;
    if (m.rev === this.lastRev) return;
    this.lastRev = m.rev;
    if (m.done) {
      if (!this.finished || m.text !== this.md.value) this.md.finish(m.text);
      this.finished = true;
      this.el.removeAttribute('aria-busy');
      toggle(this.el, 'streaming', false);
    } else {
      this.md.update(m.text);
      this.el.setAttribute('aria-busy', 'true');
      toggle(this.el, 'streaming', true);
    }
  }
}

// ---- execution card -------------------------------------------------------------------------------

const STATUS_TEXT: Record<string, string> = { writing: 'Writing code', running: 'Running', done: 'Done', failed: 'Failed', stopped: 'Stopped' };

class ToolCallRow {
  readonly el: HTMLLIElement;
  private readonly details: HTMLDetailsElement;
  private readonly statusIcon: HTMLElement;
  private readonly duration: HTMLElement;
  private readonly body: HTMLElement;
  private lastRev = -1;
  private bodyRev = -1;
  private call: ToolCallView;

  constructor(call: ToolCallView) {
    this.call = call;
    this.statusIcon = h('span', { class: 'tool-status' });
    this.duration = h('span', { class: 'tool-duration' });
    this.body = h('div', { class: 'tool-body' });
    this.details = h(
      'details',
      { class: 'tool-details' },
      h(
        'summary',
        null,
        h('span', { class: 'chevron', 'aria-hidden': 'true' }, icon('chevron')),
        this.statusIcon,
        h('span', { class: 'tool-name', text: call.name }),
        h('span', { class: 'tool-args', text: `(${argsPreview(call.arguments)})` }),
        h('span', { class: 'spacer' }),
        this.duration,
      ),
      this.body,
    );
    this.details.addEventListener('toggle', () => {
      if (this.details.open) this.renderBody();
    });
    this.el = h('li', { class: 'tool-call' }, this.details);
  }

  sync(call: ToolCallView): void {
    this.call = call;
    if (call.rev === this.lastRev) return;
    this.lastRev = call.rev;
    this.el.dataset.status = call.status;
    this.statusIcon.textContent = '';
    const label = call.status === 'running' ? 'running' : call.status === 'ok' ? 'succeeded' : call.status === 'error' ? 'failed' : 'stopped';
    this.statusIcon.append(call.status === 'running' ? spinner(label) : icon(call.status === 'ok' ? 'pass' : call.status === 'error' ? 'error' : 'stop', label));
    setText(this.duration, call.durationMs !== undefined ? formatDuration(call.durationMs) : '');
    if (this.details.open) this.renderBody();
  }

  private renderBody(): void {
    if (this.bodyRev === this.call.rev) return;
    this.bodyRev = this.call.rev;
    const c = this.call;
    this.body.textContent = '';
    this.body.append(h('div', { class: 'kv-label', text: 'Arguments' }), renderJson(c.arguments ?? null, { expandDepth: 2 }));
    if (c.status === 'error') {
      this.body.append(h('div', { class: 'kv-label error', text: 'Error' }), h('pre', { class: 'tool-error', text: c.error ?? 'Unknown error' }));
    } else if (c.status === 'ok') {
      this.body.append(h('div', { class: 'kv-label', text: 'Result' }), renderJson(c.output ?? null, { expandDepth: 2 }));
    } else if (c.status === 'running') {
      this.body.append(h('div', { class: 'kv-label muted', text: 'Waiting for the result…' }));
    } else {
      this.body.append(h('div', { class: 'kv-label muted', text: 'Stopped before it returned.' }));
    }
  }
}

class ExecRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly statusChip: HTMLElement;
  private readonly badges: HTMLElement;
  private readonly durationEl: HTMLElement;
  private readonly codeWrap: HTMLElement;
  private readonly gutter: HTMLElement;
  private readonly codePre: HTMLElement;
  private readonly code: IncrementalHighlighter;
  private readonly toolsSection: HTMLElement;
  private readonly toolsLabel: HTMLElement;
  private readonly toolsList: HTMLOListElement;
  private readonly toolRows = new Map<string, ToolCallRow>();
  private readonly outputSection: HTMLElement;
  private readonly outputBanner: HTMLElement;
  private readonly output: OutputPane;
  private readonly extras: HTMLElement;
  private lastRev = -1;
  private lineCount = 0;
  private codeFinished = false;
  private codeStick = true;
  private statusKey = '';
  private badgeKey = '';
  private images = 0;
  private files = 0;
  private valueShown = false;
  private errorShown = false;
  private truncShown = false;
  private item: ExecView;

  constructor(item: ExecView, private readonly ctx: ViewContext) {
    this.item = item;
    const titleId = uid('exec');
    this.statusChip = h('span', { class: 'status-chip', id: titleId });
    this.badges = h('span', { class: 'badges' });
    this.durationEl = h('span', { class: 'duration' });
    const actions = h(
      'div',
      { class: 'card-actions', role: 'toolbar', 'aria-label': 'Code actions' },
      iconButton('copy', 'Copy code', () => this.ctx.post({ type: 'copy', text: this.item.code })),
      iconButton('insert', 'Insert into editor', () => this.ctx.post({ type: 'insertCode', code: this.item.code })),
      iconButton('debugRerun', 'Run again with tools', () => this.ctx.post({ type: 'runCode', code: this.item.code, itemId: this.item.id })),
    );
    const head = h('header', { class: 'card-head' }, h('span', { class: 'card-icon', 'aria-hidden': 'true' }, icon('code')), this.statusChip, this.badges, h('span', { class: 'spacer' }), this.durationEl, actions);

    this.gutter = h('div', { class: 'gutter', 'aria-hidden': 'true' });
    const codeEl = h('code', { class: 'hljs language-python' });
    this.codePre = h('pre', { class: 'code', tabindex: '0', 'aria-label': 'Python code' }, codeEl);
    this.code = new IncrementalHighlighter(codeEl);
    this.codeWrap = h('div', { class: 'code-block' }, this.gutter, this.codePre);
    this.codeWrap.addEventListener(
      'scroll',
      () => {
        const w = this.codeWrap;
        this.codeStick = w.scrollHeight - w.scrollTop - w.clientHeight < 24;
      },
      { passive: true },
    );

    this.toolsLabel = h('span', { text: 'Tool calls' });
    this.toolsList = h('ol', { class: 'tool-list', 'aria-label': 'Tool calls made by the code' });
    this.toolsSection = h('div', { class: 'section tools-section', hidden: true }, h('div', { class: 'section-label' }, icon('tools'), this.toolsLabel), this.toolsList);

    this.output = new OutputPane(undefined, undefined, (fn) => this.ctx.afterFrame(fn));
    this.output.pre.setAttribute('aria-label', 'Output');
    this.outputBanner = h('div', { class: 'output-banner', hidden: true });
    this.outputSection = h(
      'div',
      { class: 'section output-section', hidden: true },
      h('div', { class: 'section-label' }, icon('terminal'), h('span', { text: 'Output' })),
      this.outputBanner,
      this.output.el,
    );
    this.extras = h('div', { class: 'extras' });
    this.el = h('section', { class: 'card exec', 'data-item-id': item.id, 'aria-labelledby': titleId }, head, this.codeWrap, this.toolsSection, this.outputSection, this.extras);
  }

  sync(raw: ItemView): void {
    const x = raw as ExecView;
    this.item = x;
    if (x.rev === this.lastRev) return;
    this.lastRev = x.rev;
    this.syncHead(x);
    this.syncCode(x);
    this.syncTools(x);
    this.syncOutput(x);
    this.syncExtras(x);
  }

  private syncHead(x: ExecView): void {
    const key = `${x.status}|${x.awaiting}`;
    if (key !== this.statusKey) {
      this.statusKey = key;
      const waiting = x.awaiting > 0 && (x.status === 'writing' || x.status === 'running');
      const status = waiting ? 'waiting' : x.status;
      this.el.dataset.status = status;
      this.statusChip.className = `status-chip status-${status}`;
      this.statusChip.textContent = '';
      const running = x.status === 'writing' || x.status === 'running';
      this.statusChip.append(
        waiting ? icon('shield') : running ? spinner() : icon(x.status === 'done' ? 'pass' : x.status === 'failed' ? 'error' : 'stop'),
        h('span', { text: waiting ? 'Waiting for approval' : STATUS_TEXT[x.status] }),
      );
      if (x.status === 'done' || x.status === 'failed') this.ctx.announce(x.status === 'done' ? 'Code finished' : `Code failed${x.error ? `: ${x.error.type}` : ''}`);
    }
    const badgeKey = `${x.runtime}|${x.sandbox?.kind}|${x.sandbox?.network}|${x.tool}|${x.containerId}`;
    if (badgeKey !== this.badgeKey) {
      this.badgeKey = badgeKey;
      this.badges.textContent = '';
      if (x.runtime) {
        const b = h('span', { class: `badge runtime runtime-${x.runtime}`, title: `Runtime: ${RUNTIME_LABEL[x.runtime] ?? x.runtime}` }, icon(RUNTIME_ICON[x.runtime] ?? 'terminal'), h('span', { text: x.runtime }));
        this.badges.append(b);
      }
      if (x.sandbox) {
        const sb = x.sandbox;
        const title = `Sandbox: ${sb.kind}${sb.network === false ? ', no network' : sb.network ? ', network allowed' : ''}`;
        this.badges.append(h('span', { class: `badge sandbox sandbox-${sb.kind}`, title }, icon(sb.kind === 'none' ? 'warning' : 'box'), h('span', { text: sb.kind === 'none' ? 'no sandbox' : sb.kind })));
      }
      if (x.tool) this.badges.append(h('span', { class: 'badge subtool', title: 'Provider tool', text: x.tool }));
      if (x.containerId) this.badges.append(h('span', { class: 'badge container', title: `Container ${x.containerId}`, text: shortId(x.containerId) }));
    }
    setText(this.durationEl, x.durationMs !== undefined ? formatDuration(x.durationMs) : '');
  }

  private syncCode(x: ExecView): void {
    toggle(this.codeWrap, 'empty', !x.code);
    const grew = x.code !== this.code.value;
    if (grew) {
      this.code.update(x.code);
      this.codeFinished = false;
    }
    if (x.codeDone && !this.codeFinished) {
      this.code.finish();
      this.codeFinished = true;
    }
    const lines = Math.max(1, countNewlines(x.code) + (x.code.endsWith('\n') ? 0 : 1));
    if (lines !== this.lineCount) {
      if (lines < this.lineCount) {
        this.gutter.textContent = '';
        this.lineCount = 0;
      }
      const frag = document.createDocumentFragment();
      for (let i = this.lineCount + 1; i <= lines; i++) frag.append(h('span', { text: String(i) }));
      this.gutter.append(frag);
      this.lineCount = lines;
    }
    if (grew && x.status === 'writing' && this.codeStick) this.ctx.afterFrame(() => (this.codeWrap.scrollTop = this.codeWrap.scrollHeight));
    if (x.error?.line && !this.errorShown) {
      const ln = this.gutter.children[x.error.line - 1];
      if (ln) {
        ln.classList.add('error-line');
        ln.setAttribute('title', `${x.error.type} raised here`);
      }
    }
  }

  private syncTools(x: ExecView): void {
    if (!x.tools.length) return;
    this.toolsSection.hidden = false;
    for (const call of x.tools) {
      let row = this.toolRows.get(call.callId);
      if (!row) {
        row = new ToolCallRow(call);
        this.toolRows.set(call.callId, row);
        this.toolsList.append(row.el);
      }
      row.sync(call);
    }
    const failed = x.tools.filter((c) => c.status === 'error').length;
    setText(this.toolsLabel, `Tool calls · ${x.tools.length}${failed ? ` · ${failed} failed` : ''}`);
  }

  private syncOutput(x: ExecView): void {
    if (x.output.totalChars === 0 && this.output.isEmpty) return;
    this.outputSection.hidden = false;
    this.output.sync(x.output);
    const hidden = this.output.hiddenLines;
    const showBanner = hidden > 0 || x.truncated;
    this.outputBanner.hidden = !showBanner;
    if (showBanner) {
      const msg = x.truncated
        ? 'The runtime cut this output at its size limit.'
        : `${formatCount(hidden)} earlier ${hidden === 1 ? 'line' : 'lines'} not shown.`;
      if (this.outputBanner.dataset.msg !== msg) {
        this.outputBanner.dataset.msg = msg;
        this.outputBanner.textContent = '';
        const open = h('button', { class: 'link-button', type: 'button', onclick: () => this.ctx.post({ type: 'openFullOutput', itemId: this.item.id }) }, icon('external'), h('span', { text: 'Open full output' }));
        this.outputBanner.append(icon('info'), h('span', { text: msg }), open);
      }
    }
    this.output.el.dataset.totalLines = String(x.output.totalLines);
  }

  private syncExtras(x: ExecView): void {
    if (x.images.length > this.images) {
      for (let i = this.images; i < x.images.length; i++) {
        const url = x.images[i];
        const img = h('img', { src: safeImageUrl(url), alt: `Image ${i + 1} produced by the code`, loading: 'lazy' });
        this.extras.append(h('figure', { class: 'exec-image' }, img));
      }
      this.images = x.images.length;
    }
    if (x.files.length > this.files) {
      for (let i = this.files; i < x.files.length; i++) {
        const f = x.files[i];
        const name = f.filename ?? f.path ?? f.file_id ?? 'file';
        const row = h(
          'button',
          { class: 'file-chip', type: 'button', title: `Open ${name}`, onclick: () => this.ctx.post({ type: 'openFile', itemId: this.item.id, file: f }) },
          icon('file'),
          h('span', { text: name }),
          f.bytes !== undefined ? h('span', { class: 'muted', text: ` ${formatBytes(f.bytes)}` }) : null,
        );
        this.extras.append(row);
      }
      this.files = x.files.length;
    }
    if (x.hasValue && !this.valueShown) {
      this.valueShown = true;
      this.extras.append(
        h('div', { class: 'section result-section' }, h('div', { class: 'section-label' }, icon('braces'), h('span', { text: 'Result' })), renderJson(x.value, { expandDepth: 1 })),
      );
    }
    if (x.error && !this.errorShown) {
      this.errorShown = true;
      const e = x.error;
      const box = h(
        'div',
        { class: 'exec-error', role: 'group', 'aria-label': 'Error' },
        h('div', { class: 'error-title' }, icon('error'), h('span', null, h('span', { class: 'error-type', text: e.type }), h('span', { class: 'error-message', text: e.message ? `: ${e.message}` : '' }))),
      );
      if (e.line) box.append(h('div', { class: 'error-line-ref', text: `at line ${e.line} of the code` }));
      if (e.traceback) {
        const tb = new OutputPane(400, 64 * 1024);
        tb.el.classList.add('traceback');
        tb.write('stdout', e.traceback);
        box.append(h('details', { class: 'traceback-details', open: true }, h('summary', null, h('span', { text: 'Traceback' })), tb.el));
      }
      this.extras.append(box);
      if (e.line) {
        const ln = this.gutter.children[e.line - 1];
        ln?.classList.add('error-line');
      }
    }
    if (x.truncated && !this.truncShown && x.output.totalChars === 0) {
      this.truncShown = true;
    }
  }
}

function shortId(id: string): string {
  return id.length > 14 ? `${id.slice(0, 12)}…` : id;
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Images may only be data URLs of raster types or local resources; anything else shows nothing. */
function safeImageUrl(url: string): string {
  if (/^data:image\/(png|jpe?g|gif|webp|bmp);base64,/i.test(url)) return url;
  if (/^(https:\/\/file\+\.vscode-resource\.|vscode-webview-resource:|vscode-resource:)/i.test(url)) return url;
  return 'data:image/gif;base64,R0lGODlhAQABAAAAACH5BAEKAAEALAAAAAABAAEAAAICTAEAOw==';
}

// ---- approvals ------------------------------------------------------------------------------------

const DECISION_TEXT: Record<string, string> = {
  allow_once: 'Allowed once',
  allow_session: 'Allowed for this session',
  allow_always: 'Always allowed (saved to your settings)',
  deny: 'Denied',
};

class ApprovalRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly actions: HTMLElement;
  private readonly outcome: HTMLElement;
  private readonly editor?: HTMLTextAreaElement;
  private readonly codeView?: HTMLElement;
  private lastRev = -1;
  private sent = false;
  private editing = false;

  constructor(private readonly item: ApprovalView, private readonly ctx: ViewContext) {
    const titleId = uid('appr');
    const isCode = item.approvalKind === 'code';
    const title = h('span', { class: 'approval-title', id: titleId });
    if (isCode) title.append('Review the code before it runs');
    else title.append('Allow ', h('code', { text: item.name ?? 'tool' }), ' to run?');
    const head = h('header', { class: 'card-head' }, h('span', { class: 'card-icon shield', 'aria-hidden': 'true' }, icon('shield')), title, h('span', { class: 'spacer' }), h('span', { class: 'badge attention', text: 'Approval needed' }));
    const body = h('div', { class: 'approval-body' });
    if (isCode) {
      body.append(h('p', { class: 'desc', text: 'The model wants to run this code. Run it, edit it first, or deny it.' }));
      const codeEl = h('code', { class: 'hljs language-python' });
      codeEl.innerHTML = highlight(item.code ?? '', 'python');
      this.codeView = h('pre', { class: 'code approval-code', tabindex: '0', 'aria-label': 'Code to review' }, codeEl);
      this.editor = h('textarea', { class: 'code-editor', 'aria-label': 'Edit the code before it runs', spellcheck: 'false', hidden: true });
      this.editor.value = item.code ?? '';
      this.editor.rows = Math.min(24, Math.max(4, (item.code ?? '').split('\n').length + 1));
      body.append(this.codeView, this.editor);
    } else {
      body.append(h('p', { class: 'desc' }, 'The code calls the managed tool ', h('strong', { text: item.name ?? '' }), ' with these arguments:'));
      body.append(renderJson(item.arguments ?? null, { expandDepth: 3 }));
    }
    this.actions = h('div', { class: 'approval-actions', role: 'group', 'aria-label': 'Decision' });
    if (isCode) {
      this.actions.append(
        textButton('Run', () => this.decide('allow_once'), 'primary', 'play'),
        textButton('Edit', () => this.toggleEdit(), 'secondary', 'edit'),
        textButton('Deny', () => this.decide('deny'), 'danger', 'close'),
      );
    } else {
      this.actions.append(
        textButton('Allow once', () => this.decide('allow_once'), 'primary'),
        textButton('Allow for this session', () => this.decide('allow_session')),
        textButton('Always allow', () => this.decide('allow_always')),
        textButton('Deny', () => this.decide('deny'), 'danger'),
      );
    }
    this.outcome = h('div', { class: 'approval-outcome', role: 'status', hidden: true });
    this.el = h('section', { class: 'card approval', 'aria-labelledby': titleId, 'data-approval-id': item.id }, head, body, this.actions, this.outcome);
    if (item.status === 'pending') ctx.announce(isCode ? 'Approval needed: review the code before it runs' : `Approval needed: allow the tool ${item.name ?? ''}`);
  }

  private toggleEdit(): void {
    if (!this.editor || !this.codeView || this.sent) return;
    this.editing = !this.editing;
    this.editor.hidden = !this.editing;
    this.codeView.hidden = this.editing;
    const editBtn = this.actions.children[1] as HTMLButtonElement;
    editBtn.querySelector('span')!.textContent = this.editing ? 'Cancel edit' : 'Edit';
    if (this.editing) this.editor.focus();
    else this.editor.value = this.item.code ?? '';
  }

  private decide(decision: 'allow_once' | 'allow_session' | 'allow_always' | 'deny'): void {
    if (this.sent) return;
    this.sent = true;
    const edited = this.editing && this.editor && this.editor.value !== (this.item.code ?? '') ? this.editor.value : undefined;
    this.ctx.post({ type: 'approval', approvalId: this.item.id, decision, ...(edited !== undefined && decision !== 'deny' ? { code: edited } : {}) });
    for (const b of Array.from(this.actions.querySelectorAll('button'))) b.disabled = true;
    if (this.editor) this.editor.readOnly = true;
    this.showOutcome(decision === 'deny' ? 'Denying…' : 'Allowing…', 'pending');
  }

  private showOutcome(text: string, kind: string): void {
    this.outcome.hidden = false;
    this.outcome.dataset.kind = kind;
    this.outcome.textContent = '';
    this.outcome.append(icon(kind === 'deny' ? 'close' : kind === 'expired' ? 'clock' : kind === 'pending' ? 'clock' : 'check'), h('span', { text }));
  }

  sync(raw: ItemView): void {
    const a = raw as ApprovalView;
    if (a.rev === this.lastRev) return;
    this.lastRev = a.rev;
    this.el.dataset.status = a.status;
    if (a.status === 'pending') return;
    this.actions.hidden = true;
    if (this.editor && this.codeView) {
      // Show what was decided on, highlighted, instead of the editor.
      const code = this.editing ? this.editor.value : this.item.code ?? '';
      const codeEl = this.codeView.querySelector('code');
      if (codeEl && this.editing) codeEl.innerHTML = highlight(code, 'python');
      this.editor.hidden = true;
      this.codeView.hidden = false;
      if (this.editing) this.codeView.setAttribute('aria-label', 'Code as edited before it ran');
    }
    const badge = this.el.querySelector('.badge.attention');
    if (a.status === 'expired') {
      badge?.remove();
      this.showOutcome(a.reason ? `${a.reason[0].toUpperCase()}${a.reason.slice(1)}.` : 'No longer needed: the turn ended before a decision.', 'expired');
    } else {
      badge?.remove();
      const edited = this.editing && this.editor !== undefined && this.editor.value !== (this.item.code ?? '') && a.decision !== 'deny';
      const text = `${DECISION_TEXT[a.decision ?? ''] ?? a.decision ?? 'Resolved'}${edited ? ', with your edits' : ''}${a.reason ? ` — ${a.reason}` : ''}`;
      this.showOutcome(text, a.decision === 'deny' ? 'deny' : 'allow');
    }
  }
}

// ---- small items ----------------------------------------------------------------------------------

class FunctionRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly statusEl: HTMLElement;
  private readonly args: HTMLElement;
  private readonly body: HTMLElement;
  private lastRev = -1;

  constructor(item: FunctionView) {
    this.statusEl = h('span', { class: 'tool-status' });
    this.args = h('span', { class: 'tool-args' });
    this.body = h('div', { class: 'tool-body' });
    this.el = h(
      'section',
      { class: 'card function-call', 'aria-label': `Function call ${item.name}` },
      h('details', { class: 'tool-details' }, h('summary', null, h('span', { class: 'chevron', 'aria-hidden': 'true' }, icon('chevron')), this.statusEl, icon('tools'), h('span', { class: 'tool-name', text: item.name }), this.args), this.body),
    );
  }

  sync(raw: ItemView): void {
    const f = raw as FunctionView;
    if (f.rev === this.lastRev) return;
    this.lastRev = f.rev;
    this.statusEl.textContent = '';
    this.statusEl.append(f.status === 'in_progress' ? spinner('running') : icon(f.isError ? 'error' : 'pass', f.isError ? 'failed' : 'done'));
    let parsed: unknown = f.arguments;
    try {
      parsed = f.arguments ? JSON.parse(f.arguments) : {};
    } catch {
      // still streaming
    }
    setText(this.args, `(${typeof parsed === 'string' ? parsed.slice(0, 80) : argsPreview(parsed)})`);
    this.body.textContent = '';
    this.body.append(h('div', { class: 'kv-label', text: 'Arguments' }), typeof parsed === 'string' ? h('pre', { class: 'plain', text: parsed }) : renderJson(parsed, { expandDepth: 2 }));
    if (f.output !== undefined) {
      let out: unknown = f.output;
      try {
        out = JSON.parse(f.output);
      } catch {
        // plain text
      }
      this.body.append(h('div', { class: `kv-label${f.isError ? ' error' : ''}`, text: f.isError ? 'Error' : 'Result' }), typeof out === 'string' ? h('pre', { class: 'plain', text: out }) : renderJson(out, { expandDepth: 2 }));
    }
  }
}

class EditorRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private lastRev = -1;
  constructor(_item: EditorView) {
    this.el = h('section', { class: 'card function-call editor-call' });
  }
  sync(raw: ItemView): void {
    const e = raw as EditorView;
    if (e.rev === this.lastRev) return;
    this.lastRev = e.rev;
    const it = e.item;
    this.el.textContent = '';
    const summary = h('summary', null, h('span', { class: 'chevron', 'aria-hidden': 'true' }, icon('chevron')), icon(it.status === 'failed' ? 'error' : 'edit'), h('span', { class: 'tool-name', text: it.command }), h('span', { class: 'tool-args', text: it.path ?? '' }));
    const body = h('div', { class: 'tool-body' }, h('div', { class: 'kv-label', text: 'Input' }), renderJson(it.input, { expandDepth: 1 }));
    if (it.error) body.append(h('div', { class: 'kv-label error', text: 'Error' }), h('pre', { class: 'tool-error', text: `${it.error.code}${it.error.message ? `: ${it.error.message}` : ''}` }));
    else if (it.result !== undefined) body.append(h('div', { class: 'kv-label', text: 'Result' }), renderJson(it.result, { expandDepth: 1 }));
    this.el.append(h('details', { class: 'tool-details' }, summary, body));
  }
}

class ErrorRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  constructor(item: ErrorView, ctx: ViewContext) {
    const actions = h('div', { class: 'error-actions' });
    const lower = `${item.code ?? ''} ${item.message}`.toLowerCase();
    if (/api[ _-]?key|auth|401|unauthori[sz]ed|credential/.test(lower)) actions.append(textButton('Set API Key…', () => ctx.post({ type: 'command', command: 'setApiKey' }), 'secondary', 'key'));
    if (/model/.test(lower) && /not found|unknown|unsupported|404/.test(lower)) actions.append(textButton('Select Model…', () => ctx.post({ type: 'command', command: 'selectModel' }), 'secondary', 'sparkle'));
    if (/trust/.test(lower)) actions.append(textButton('Manage Workspace Trust', () => ctx.post({ type: 'command', command: 'manageTrust' }), 'secondary', 'lock'));
    actions.append(textButton('Show Log', () => ctx.post({ type: 'command', command: 'showLog' }), 'secondary', 'terminal'));
    this.el = h(
      'section',
      { class: 'card error-card', role: 'alert' },
      h('div', { class: 'error-title' }, icon('error'), h('span', { class: 'error-message', text: item.message })),
      item.code ? h('div', { class: 'error-code', text: item.code }) : null,
      actions,
    );
  }
  sync(): void {}
}

class NoticeRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  constructor(item: NoticeView) {
    this.el = h('div', { class: `notice-line ${item.level}`, role: 'status' }, icon(item.level === 'warning' ? 'warning' : 'info'), h('span', { text: item.text }));
  }
  sync(): void {}
}

// ---- the transcript ---------------------------------------------------------------------------------

export class TranscriptView {
  private readonly turns = new Map<string, TurnRenderer>();
  private readonly items = new Map<string, ItemRenderer>();

  constructor(
    readonly root: HTMLElement,
    private readonly ctx: ViewContext,
  ) {}

  clear(): void {
    this.turns.clear();
    this.items.clear();
    this.root.textContent = '';
  }

  get turnCount(): number {
    return this.turns.size;
  }

  /** Creates the view of a turn (appended at the end). */
  addTurn(model: TranscriptModel, turn: TurnView): void {
    if (this.turns.has(turn.id)) return;
    const r = new TurnRenderer(turn, model.turns[model.turns.length - 1] === turn ? model.turns.length - 1 : model.turns.indexOf(turn));
    this.turns.set(turn.id, r);
    this.root.append(r.el);
  }

  /** Creates the view of an item in its turn (appended at the end of that turn). */
  addItem(model: TranscriptModel, key: string): void {
    if (this.items.has(key)) return;
    const item = model.items[key];
    if (!item) return;
    let turn = this.turns.get(item.turnId);
    if (!turn) {
      const t = model.turns.find((x) => x.id === item.turnId);
      if (!t) return;
      this.addTurn(model, t);
      turn = this.turns.get(item.turnId)!;
    }
    const r = this.createRenderer(item);
    this.items.set(key, r);
    turn.items.append(r.el);
  }

  syncTurn(turn: TurnView): void {
    this.turns.get(turn.id)?.sync(turn);
  }

  syncItem(item: ItemView): void {
    this.items.get(item.key)?.sync(item);
  }

  /** Renders a whole model (after a reload or a reset): once, then only deltas. */
  renderAll(model: TranscriptModel): void {
    this.clear();
    for (const turn of model.turns) {
      this.addTurn(model, turn);
      for (const key of turn.itemKeys) {
        this.addItem(model, key);
        const item = model.items[key];
        if (item) this.syncItem(item);
      }
      this.syncTurn(turn);
    }
  }

  private createRenderer(item: ItemView): ItemRenderer {
    switch (item.kind) {
      case 'message':
        return new MessageRenderer(item);
      case 'exec':
        return new ExecRenderer(item, this.ctx);
      case 'approval':
        return new ApprovalRenderer(item, this.ctx);
      case 'function':
        return new FunctionRenderer(item);
      case 'editor':
        return new EditorRenderer(item);
      case 'error':
        return new ErrorRenderer(item, this.ctx);
      case 'notice':
        return new NoticeRenderer(item);
    }
  }
}
