/**
 * A managed-tool call as a row of a card's tool list (an execution's, a background job's): status, name and
 * arguments in one line, and on opening its arguments and result or error.
 */
import type { ToolCallView } from '../common/transcript';
import { isDiscoveryCall } from '../common/tools';
import { discoveryText, toolsSectionLabel } from './discoveryCall';
import { formatElapsed } from '../common/format';
import { argsPreview, h, setText } from './dom';
import { icon, spinner } from './icons';
import { renderJson } from './jsonTree';
import { revealed, revealedPlain, setRevealed } from './reveal';

class ToolCallRow {
  readonly el: HTMLLIElement;
  private readonly details: HTMLDetailsElement;
  private readonly statusIcon: HTMLElement;
  private readonly duration: HTMLElement;
  private readonly body: HTMLElement;
  private lastRev = -1;
  private bodyRev = -1;
  private call: ToolCallView;

  /** A discovery call (search_tools, describe_tool): a quieter row that never looks like a tool that ran. */
  private readonly discovery: boolean;
  private readonly outcome: HTMLElement | undefined;
  private outcomeText = '';

  constructor(call: ToolCallView) {
    this.call = call;
    this.discovery = isDiscoveryCall(call.name);
    this.statusIcon = h('span', { class: 'tool-status' });
    this.duration = h('span', { class: 'tool-duration' });
    this.body = h('div', { class: 'tool-body' });
    let what: HTMLElement[];
    if (this.discovery) {
      const t = discoveryText(call);
      this.outcome = h('span', { class: 'discovery-outcome' });
      what = [
        h('span', { class: 'discovery-action', text: t.subject ? `${t.action}:` : t.action }),
        h('span', { class: 'discovery-what' }, h('span', { class: 'discovery-subject' }, revealed(t.subject, { line: true })), this.outcome),
      ];
    } else {
      // Invisible and bidirectional characters in a tool's name or arguments show as <U+…> boxes.
      what = [
        h('span', { class: 'tool-name', title: revealedPlain(call.name, { line: true }) }, revealed(call.name, { line: true })),
        h('span', { class: 'tool-args' }, revealed(`(${argsPreview(call.arguments)})`)),
      ];
    }
    this.details = h(
      'details',
      { class: 'tool-details' },
      h(
        'summary',
        null,
        h('span', { class: 'chevron', 'aria-hidden': 'true' }, icon('chevron')),
        this.statusIcon,
        ...what,
        h('span', { class: 'spacer' }),
        this.duration,
      ),
      this.body,
    );
    this.details.addEventListener('toggle', () => {
      if (this.details.open) this.renderBody();
    });
    this.el = h('li', { class: this.discovery ? 'tool-call discovery' : 'tool-call', 'data-name': call.name }, this.details);
  }

  sync(call: ToolCallView): void {
    this.call = call;
    if (call.rev === this.lastRev) return;
    this.lastRev = call.rev;
    this.el.dataset.status = call.status;
    this.statusIcon.textContent = '';
    const label =
      call.status === 'running' ? 'running' : call.status === 'ok' ? (this.discovery ? 'done' : 'succeeded') : call.status === 'error' ? 'failed' : 'stopped';
    // A finished lookup gets a magnifier, not the green tick of a tool that ran.
    const done = this.discovery ? 'search' : 'pass';
    this.statusIcon.append(call.status === 'running' ? spinner(label) : icon(call.status === 'ok' ? done : call.status === 'error' ? 'error' : 'stop', label));
    if (this.outcome) {
      const t = discoveryText(call);
      if (t.outcome !== this.outcomeText) setRevealed(this.outcome, (this.outcomeText = t.outcome));
      if (t.title) this.outcome.title = revealedPlain(t.title);
    }
    setText(this.duration, call.durationMs !== undefined ? formatElapsed(call.durationMs) : '');
    if (this.details.open) this.renderBody();
  }

  private renderBody(): void {
    if (this.bodyRev === this.call.rev) return;
    this.bodyRev = this.call.rev;
    const c = this.call;
    this.body.textContent = '';
    this.body.append(h('div', { class: 'kv-label', text: 'Arguments' }), renderJson(c.arguments ?? null, { expandDepth: 2 }));
    if (c.status === 'error') {
      this.body.append(h('div', { class: 'kv-label error', text: 'Error' }), h('pre', { class: 'tool-error' }, revealed(c.error ?? 'Unknown error')));
    } else if (c.status === 'ok') {
      this.body.append(h('div', { class: 'kv-label', text: 'Result' }), renderJson(c.output ?? null, { expandDepth: 2 }));
    } else if (c.status === 'running') {
      this.body.append(h('div', { class: 'kv-label muted', text: 'Waiting for the result…' }));
    } else {
      this.body.append(h('div', { class: 'kv-label muted', text: 'Stopped before it returned.' }));
    }
  }
}

/** A card's section of tool calls: hidden until the first, a row per call updated in place (rows the list no longer has go). */
export class ToolCallList {
  readonly el: HTMLElement;
  private readonly label = h('span', { text: 'Tool calls' });
  private readonly list: HTMLOListElement;
  private readonly rows = new Map<string, ToolCallRow>();

  constructor(ariaLabel: string) {
    this.list = h('ol', { class: 'tool-list', 'aria-label': ariaLabel });
    this.el = h('div', { class: 'section tools-section', hidden: true }, h('div', { class: 'section-label' }, icon('tools'), this.label), this.list);
  }

  sync(calls: readonly ToolCallView[]): void {
    if (!calls.length && !this.rows.size) return;
    this.el.hidden = !calls.length;
    const keep = new Set(calls.map((c) => c.callId));
    for (const [id, row] of this.rows)
      if (!keep.has(id)) {
        row.el.remove();
        this.rows.delete(id);
      }
    for (const call of calls) {
      let row = this.rows.get(call.callId);
      if (!row) {
        row = new ToolCallRow(call);
        this.rows.set(call.callId, row);
        this.list.append(row.el);
      }
      row.sync(call);
    }
    setText(this.label, toolsSectionLabel(calls));
  }
}
