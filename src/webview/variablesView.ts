/**
 * The session's variables, next to the chat: name, type, and a short summary (a value, a shape, a
 * function's parameters), read by the host through the guest library without running any user code.
 * A toggle in the header shows the count; the section restarts the session on request.
 */
import type { VariablesMessage } from '../common/protocol';
import { approxBytes } from '../common/outputLabels';
import { h, setText } from './dom';
import { icon } from './icons';
import { revealed, revealedPlain, updateRevealed } from './reveal';

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
      {
        class: 'icon-button variables-toggle',
        type: 'button',
        title: 'Session variables',
        'aria-label': 'Session variables',
        'aria-expanded': 'false',
        onclick: () => this.setOpen(!this.open),
      },
      icon('braces'),
      this.countEl,
    );
    // The session's name (a document's file name) is a description beside the title, not upper-cased with it.
    this.labelEl = h('span', { class: 'variables-source', text: '' });
    this.body = h('div', { class: 'variables-body' });
    // Restart loses state, so it says so in words; refresh (harmless) is the icon.
    const restart = h(
      'button',
      {
        class: 'chip-button variables-restart',
        type: 'button',
        title: 'Restart the session (its variables are lost)',
        'aria-label': 'Restart session',
        onclick: () => this.post({ type: 'restartSession', ...(this.last?.sessionId ? { sessionId: this.last.sessionId } : {}) }),
      },
      icon('debugRerun'),
      h('span', { text: 'Restart' }),
    );
    const refresh = h(
      'button',
      { class: 'icon-button', type: 'button', title: 'Refresh', 'aria-label': 'Refresh variables', onclick: () => this.post({ type: 'variables.refresh' }) },
      icon('refresh'),
    );
    this.el = h(
      'section',
      { class: 'variables-panel', hidden: true, 'aria-label': 'Session variables' },
      h(
        'header',
        { class: 'variables-head' },
        icon('braces'),
        h('span', { class: 'variables-label' }, h('span', { class: 'variables-title', text: 'Variables' }), this.labelEl),
        h('span', { class: 'spacer' }),
        refresh,
        restart,
      ),
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
    // The session's label names a notebook or a folder: outside text.
    this.toggle.title = n
      ? `Session variables: ${msg.total} in ${msg.label === undefined ? 'the session' : revealedPlain(msg.label, { line: true })}`
      : 'Session variables';
    updateRevealed(this.labelEl, msg.label ?? '', { line: true });
    this.labelEl.title = revealedPlain(msg.label ?? '', { line: true });
    this.body.textContent = '';
    if (!n) {
      this.body.append(h('p', { class: 'variables-empty', text: msg.note ?? 'No variables yet.' }), ...checkpointsLine(msg));
      return;
    }
    const table = h('table', { class: 'variables-table' });
    // The name and type columns fit their longest entry (in the table's monospace ch), within caps that
    // leave the value room; a long one ends in an ellipsis with the whole in its tooltip.
    const longest = (xs: string[], min: number, max: number) => Math.min(max, Math.max(min, ...xs.map((x) => x.length)));
    table.style.setProperty(
      '--name-ch',
      String(
        longest(
          msg.variables.map((v) => v.name),
          4,
          24,
        ),
      ),
    );
    table.style.setProperty(
      '--type-ch',
      String(
        longest(
          msg.variables.map((v) => shortType(v.type)),
          4,
          14,
        ),
      ),
    );
    table.append(h('colgroup', null, h('col', { class: 'col-name' }), h('col', { class: 'col-type' }), h('col', { class: 'col-value' })));
    table.append(
      h(
        'thead',
        null,
        h('tr', null, h('th', { text: 'Name', scope: 'col' }), h('th', { text: 'Type', scope: 'col' }), h('th', { text: 'Value', scope: 'col' })),
      ),
    );
    const tbody = h('tbody');
    for (const v of msg.variables) {
      const summary = v.summary ?? (v.len !== undefined ? `${v.len} items` : '');
      tbody.append(
        h(
          'tr',
          { 'data-name': v.name },
          h('td', { class: 'var-name', title: revealedPlain(v.name, { line: true }) }, revealed(v.name, { line: true })),
          // "pandas.core.frame.DataFrame" shows as "DataFrame" (the full name in the tooltip), as in Jupyter's viewer.
          h('td', { class: 'var-type', title: revealedPlain(v.type, { line: true }) }, revealed(shortType(v.type), { line: true })),
          h('td', { class: 'var-summary', title: revealedPlain(summary, { line: true }) }, revealed(summary, { line: true })),
        ),
      );
    }
    table.append(tbody);
    this.body.append(table);
    if (msg.total > n) this.body.append(h('p', { class: 'variables-empty', text: `${msg.total - n} more not shown.` }));
    this.body.append(...checkpointsLine(msg));
  }
}

/** What the session's rewind checkpoints hold, against their budgets (none: the session keeps none). */
function checkpointsLine(msg: VariablesMessage): HTMLElement[] {
  const c = msg.checkpoints;
  if (!c) return [];
  const line = h('p', {
    class: 'variables-checkpoints',
    text: `Rewind checkpoints: ${c.count} of ${c.max} · ${c.bytes < 1 << 20 ? 'under 1 MB' : approxBytes(c.bytes)} of ${approxBytes(c.budgetBytes)}`,
  });
  line.title =
    'Copies of the Python state before each execution, for "Rewind to here". The memory is what each holds on its own ' +
    '(pages the session changed since); the oldest give way first (codeact.rewind.maxCheckpoints, codeact.rewind.memoryMB).';
  return [line];
}

/** "pandas.core.frame.DataFrame" -> "DataFrame" (the view shows the full name in the tooltip). */
function shortType(type: string): string {
  return type.split('.').pop() || type;
}
