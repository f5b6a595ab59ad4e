/** The transcript's other items: markdown messages, approvals, direct function calls, editor calls, errors, notices. */
import type { ApprovalView, EditorView, ErrorView, FunctionView, ItemView, MessageView, NoticeView, TurnView } from '../common/transcript';
import { argsPreview, h, setText, toggle, uid } from './dom';
import { jobAsks } from '../common/tools';
import { highlight } from './highlight';
import { icon, spinner } from './icons';
import { expandAll, renderJson } from './jsonTree';
import { countInvisible, revealed, revealedPlain, setRevealed, updateRevealed } from './reveal';
import { StreamingMarkdown } from './markdown';
import { errorActions } from './errorActions';
import { installActions, installBody, installTitle } from './installApproval';
import { attentionHead, textButton, type ItemRenderer, type ViewContext } from './viewKit';

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
    const insert = h('button', {
      class: 'icon-button',
      type: 'button',
      title: 'Insert into editor',
      'aria-label': 'Insert into editor',
      'data-md-action': 'insert',
    });
    insert.append(icon('insert'));
    bar.append(h('span', { class: 'spacer' }), copy, insert);
    wrap.append(bar, pre);
  }
}

// ---- messages -------------------------------------------------------------------------------------

export class MessageRenderer implements ItemRenderer {
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

// ---- approvals ------------------------------------------------------------------------------------

/** Who calls: the code, or a background job of the session (and the code that started it, when its card is known). */
function callerText(item: ApprovalView): Array<string | Node> {
  if (item.job === undefined) return ['The code calls the managed tool '];
  const from = item.jobCode ? [' (started by the code ', h('code', null, revealed(item.jobCode, { line: true })), ')'] : [];
  return [`Background job ${item.job}`, ...from, ', which runs in the background while the chat goes on, calls the managed tool '];
}

const DECISION_TEXT: Record<string, string> = {
  allow_once: 'Allowed once',
  allow_session: 'Allowed for this session',
  allow_always: 'Always allowed (saved to your settings)',
  deny: 'Denied',
};

export class ApprovalRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly actions: HTMLElement;
  private readonly outcome: HTMLElement;
  private readonly editor?: HTMLTextAreaElement;
  private readonly codeView?: HTMLElement;
  private lastRev = -1;
  private sent = false;
  private editing = false;

  constructor(
    private readonly item: ApprovalView,
    private readonly ctx: ViewContext,
  ) {
    const titleId = uid('appr');
    const isCode = item.approvalKind === 'code';
    const title = h('span', { class: 'approval-title', id: titleId });
    const isInstall = item.approvalKind === 'install';
    if (isCode) title.append('Review the code before it runs');
    else if (isInstall) title.append(...installTitle(item));
    else if (item.job !== undefined) title.append(`${jobAsks(item.job)}: allow `, h('code', null, revealed(item.name ?? 'tool', { line: true })), ' to run?');
    else title.append('Allow ', h('code', null, revealed(item.name ?? 'tool', { line: true })), ' to run?');
    const head = attentionHead({ headClass: 'card-head', iconClass: 'shield', icon: 'shield', title, badge: 'Approval needed' });
    const body = h('div', { class: 'approval-body' });
    if (isCode) {
      body.append(h('p', { class: 'desc', text: 'The model wants to run this code. Run it, edit it first, or deny it.' }));
      body.append(...invisibleNotice(item.code ?? '', 'code'));
      const codeEl = h('code', { class: 'hljs language-python' });
      codeEl.innerHTML = highlight(item.code ?? '', 'python');
      this.codeView = h('pre', { class: 'code approval-code', tabindex: '0', 'aria-label': 'Code to review' }, codeEl);
      this.editor = h('textarea', { class: 'code-editor', 'aria-label': 'Edit the code before it runs', spellcheck: 'false', hidden: true });
      this.editor.value = item.code ?? '';
      this.editor.rows = Math.min(24, Math.max(4, (item.code ?? '').split('\n').length + 1));
      body.append(this.codeView, this.editor);
    } else if (isInstall) {
      body.append(...installBody(item));
    } else {
      body.append(h('p', { class: 'desc' }, ...callerText(item), h('strong', null, revealed(item.name ?? '', { line: true })), ' with these arguments:'));
      body.append(...invisibleNotice(argumentsText(item.arguments), 'arguments'));
      body.append(...argumentsTree(item.arguments ?? null));
    }
    this.actions = h('div', { class: 'approval-actions', role: 'group', 'aria-label': 'Decision' });
    if (isCode) {
      this.actions.append(
        textButton('Run', () => this.decide('allow_once'), 'primary', 'play'),
        textButton('Edit', () => this.toggleEdit(), 'secondary', 'edit'),
        textButton('Deny', () => this.decide('deny'), 'danger', 'close'),
      );
    } else if (isInstall) {
      this.actions.append(...installActions((d) => this.decide(d), item));
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
    if (item.status === 'pending')
      ctx.announce(
        isCode
          ? 'Approval needed: review the code before it runs'
          : isInstall
            ? 'Approval needed: install packages'
            : `Approval needed: ${item.job === undefined ? '' : `${jobAsks(item.job)}: `}allow the tool ${revealedPlain(item.name ?? '', { line: true })}`,
      );
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
      const code = this.editing ? this.editor.value : (this.item.code ?? '');
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

/** The approval's arguments as text, to count what they hide (keys and strings; no more than a megabyte is read). */
function argumentsText(args: unknown): string {
  try {
    return (JSON.stringify(args ?? null) ?? '').slice(0, 1024 * 1024);
  } catch {
    return '';
  }
}

/** Values of an approval's arguments drawn at once; "Show all arguments" draws the rest. */
const APPROVAL_FIRST_VALUES = 2_000;

/**
 * An approval's arguments, all of them open (up to {@link APPROVAL_FIRST_VALUES} values; past that a line
 * says that part is folded, and its button opens everything).
 */
function argumentsTree(args: unknown): HTMLElement[] {
  const tree = renderJson(args, { expandDepth: 3 });
  if (expandAll(tree, APPROVAL_FIRST_VALUES)) return [tree];
  const text = h('span', { text: 'These arguments are long: part of them is folded. Allowing approves all of it, folded parts included.' });
  const note = h('p', { class: 'approval-note', role: 'note' }, icon('info'), text);
  const button = h('button', { class: 'link-button', type: 'button' }, h('span', { text: 'Show all arguments' }));
  button.addEventListener('click', () => {
    if (expandAll(tree)) note.remove();
    else setText(text, 'Still not everything is shown: open the rest with "Show more" and the folded nodes.');
  });
  note.append(button);
  return [note, tree];
}

/** "The code contains 2 bidirectional controls and 1 invisible character, shown as <U+…> boxes…", or nothing. */
function invisibleNotice(text: string, what: 'code' | 'arguments'): HTMLElement[] {
  const { total, bidi } = countInvisible(text);
  if (!total) return [];
  const other = total - bidi;
  const parts = [
    bidi ? `${bidi} bidirectional ${bidi === 1 ? 'control' : 'controls'}` : '',
    other ? `${other} invisible ${other === 1 ? 'character' : 'characters'}` : '',
  ].filter(Boolean);
  const message = `The ${what} ${what === 'code' ? 'contains' : 'contain'} ${parts.join(' and ')}, shown as <U+…> boxes where they are. ${bidi ? 'Such characters can make text read differently from what it is. ' : ''}Hover a box for its name.`;
  return [h('p', { class: 'approval-warning', role: 'note' }, icon('warning'), h('span', { text: message }))];
}

// ---- small items ----------------------------------------------------------------------------------

export class FunctionRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly statusEl: HTMLElement;
  private readonly args: HTMLElement;
  private readonly body: HTMLElement;
  private lastRev = -1;
  private argsText = '';

  constructor(item: FunctionView) {
    this.statusEl = h('span', { class: 'tool-status' });
    this.args = h('span', { class: 'tool-args' });
    this.body = h('div', { class: 'tool-body' });
    this.el = h(
      'section',
      { class: 'card function-call', 'aria-label': `Function call ${revealedPlain(item.name, { line: true })}` },
      h(
        'details',
        { class: 'tool-details' },
        h(
          'summary',
          null,
          h('span', { class: 'chevron', 'aria-hidden': 'true' }, icon('chevron')),
          this.statusEl,
          icon('tools'),
          h('span', { class: 'tool-name' }, revealed(item.name, { line: true })),
          this.args,
        ),
        this.body,
      ),
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
    const args = `(${typeof parsed === 'string' ? parsed.slice(0, 80) : argsPreview(parsed)})`;
    if (args !== this.argsText) setRevealed(this.args, (this.argsText = args));
    this.body.textContent = '';
    this.body.append(
      h('div', { class: 'kv-label', text: 'Arguments' }),
      typeof parsed === 'string' ? h('pre', { class: 'plain' }, revealed(parsed)) : renderJson(parsed, { expandDepth: 2 }),
    );
    if (f.output !== undefined) {
      let out: unknown = f.output;
      try {
        out = JSON.parse(f.output);
      } catch {
        // plain text
      }
      this.body.append(
        h('div', { class: `kv-label${f.isError ? ' error' : ''}`, text: f.isError ? 'Error' : 'Result' }),
        typeof out === 'string' ? h('pre', { class: 'plain' }, revealed(out)) : renderJson(out, { expandDepth: 2 }),
      );
    }
  }
}

export class EditorRenderer implements ItemRenderer {
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
    const summary = h(
      'summary',
      null,
      h('span', { class: 'chevron', 'aria-hidden': 'true' }, icon('chevron')),
      icon(it.status === 'failed' ? 'error' : 'edit'),
      h('span', { class: 'tool-name' }, revealed(it.command)),
      h('span', { class: 'tool-args' }, revealed(it.path ?? '')),
    );
    const body = h('div', { class: 'tool-body' }, h('div', { class: 'kv-label', text: 'Input' }), renderJson(it.input, { expandDepth: 1 }));
    if (it.error)
      body.append(
        h('div', { class: 'kv-label error', text: 'Error' }),
        h('pre', { class: 'tool-error' }, revealed(`${it.error.code}${it.error.message ? `: ${it.error.message}` : ''}`)),
      );
    else if (it.result !== undefined) body.append(h('div', { class: 'kv-label', text: 'Result' }), renderJson(it.result, { expandDepth: 1 }));
    this.el.append(h('details', { class: 'tool-details' }, summary, body));
  }
}

export class ErrorRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  constructor(item: ErrorView, ctx: ViewContext, turn?: TurnView) {
    // The message once, here (the turn's footer only says "Failed"), with the buttons that fit the failure.
    this.el = h(
      'section',
      { class: 'card error-card', role: 'alert', 'data-code': item.code ?? '' },
      h('div', { class: 'error-title' }, icon('error'), h('span', { class: 'error-message' }, revealed(item.message))),
      h('div', { class: 'error-actions' }, ...errorActions(item, turn, ctx)),
    );
  }
  sync(): void {}
}

export class NoticeRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly text: HTMLElement;
  constructor(item: NoticeView) {
    // A notice may quote outside text (a provider's error, a file or folder name): markers as boxes.
    this.text = h('span', { class: 'notice-text' }, revealed(item.text));
    this.el = h(
      'div',
      { class: `notice-line ${item.level}${item.retry ? ' retry' : ''}`, role: 'status' },
      icon(item.level === 'warning' ? 'warning' : 'info'),
      this.text,
    );
    this.el.hidden = !!item.done;
  }
  sync(raw: ItemView): void {
    // A retry notice counts the attempts in place, and goes once the retries are over.
    const n = raw as NoticeView;
    updateRevealed(this.text, n.text);
    this.el.hidden = !!n.done;
  }
}
