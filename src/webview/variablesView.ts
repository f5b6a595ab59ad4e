/**
 * The session's variables, next to the chat: name, type, and a short summary (a value, a shape, a
 * function's parameters), read by the host through the guest library without running any user code.
 * A toggle in the header shows the count; the section restarts the session on request.
 */
import type { VariablesMessage } from '../common/protocol';
import { h, setText } from './dom';
import { icon } from './icons';

export class VariablesView {
  readonly toggle: HTMLButtonElement;
  readonly el: HTMLElement;
  private readonly countEl: HTMLElement;
  private readonly labelEl: HTMLElement;
  private readonly body: HTMLElement;
  private open = false;
  private last?: VariablesMessage;

  constructor(private readonly post: (m: { type: 'restartSession'; sessionId?: string } | { type: 'variables.refresh' }) => void) {
    this.countEl = h('span', { class: 'badge-count', text: '' });
    this.toggle = h(
      'button',
      { class: 'icon-button variables-toggle', type: 'button', title: 'Session variables', 'aria-label': 'Session variables', 'aria-expanded': 'false', onclick: () => this.setOpen(!this.open) },
      icon('braces'),
      this.countEl,
    );
    this.labelEl = h('span', { class: 'variables-label', text: 'Session' });
    this.body = h('div', { class: 'variables-body' });
    const restart = h(
      'button',
      { class: 'icon-button', type: 'button', title: 'Restart the session (its variables are lost)', 'aria-label': 'Restart session', onclick: () => this.post({ type: 'restartSession', ...(this.last?.sessionId ? { sessionId: this.last.sessionId } : {}) }) },
      icon('debugRerun'),
    );
    const refresh = h('button', { class: 'icon-button', type: 'button', title: 'Refresh', 'aria-label': 'Refresh variables', onclick: () => this.post({ type: 'variables.refresh' }) }, icon('history'));
    this.el = h(
      'section',
      { class: 'variables-panel', hidden: true, 'aria-label': 'Session variables' },
      h('header', { class: 'variables-head' }, icon('braces'), this.labelEl, h('span', { class: 'spacer' }), refresh, restart),
      this.body,
    );
  }

  setOpen(open: boolean): void {
    this.open = open;
    this.el.hidden = !open;
    this.toggle.setAttribute('aria-expanded', String(open));
    this.toggle.classList.toggle('active', open);
    if (open) this.post({ type: 'variables.refresh' });
  }

  update(msg: VariablesMessage): void {
    this.last = msg;
    const n = msg.variables.length;
    setText(this.countEl, n ? String(msg.total > n ? `${n}+` : n) : '');
    this.toggle.title = n ? `Session variables: ${msg.total} in ${msg.label ?? 'the session'}` : 'Session variables';
    setText(this.labelEl, msg.label ? `Variables · ${msg.label}` : 'Variables');
    this.body.textContent = '';
    if (!n) {
      this.body.append(h('p', { class: 'variables-empty', text: msg.note ?? 'No variables yet.' }));
      return;
    }
    const table = h('table', { class: 'variables-table' });
    table.append(h('thead', null, h('tr', null, h('th', { text: 'Name', scope: 'col' }), h('th', { text: 'Type', scope: 'col' }), h('th', { text: 'Value', scope: 'col' }))));
    const tbody = h('tbody');
    for (const v of msg.variables) {
      const summary = v.summary ?? (v.len !== undefined ? `${v.len} items` : '');
      tbody.append(
        h(
          'tr',
          { 'data-name': v.name },
          h('td', { class: 'var-name', text: v.name, title: v.name }),
          h('td', { class: 'var-type', text: v.type, title: v.type }),
          h('td', { class: 'var-summary', text: summary, title: summary }),
        ),
      );
    }
    table.append(tbody);
    this.body.append(table);
    if (msg.total > n) this.body.append(h('p', { class: 'variables-empty', text: `${msg.total - n} more not shown.` }));
  }
}
