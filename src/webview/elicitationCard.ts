/**
 * A form an MCP server asked the person to fill in (elicitation), inside the card of the execution whose
 * tool call caused it. Everything in it is the server's text, bounded by the host, drawn through ./reveal
 * (invisible characters as marker boxes; names, titles and labels as one line) and set as text (never HTML). Accept posts the values as typed
 * (numbers and booleans turned into values); the host checks them against the requested schema and, when
 * they do not pass, shows the same form again with a problem under each field (the inputs keep what was
 * typed). Decline and Cancel post only the action.
 */
import { coerceElicitValue, elicitFieldHint, type ElicitField, type ElicitValues } from '../common/elicitation';
import type { ElicitationView } from '../common/transcript';
import { h, uid } from './dom';
import { icon } from './icons';
import { attentionHead, textButton, type ViewContext } from './viewKit';
import { revealed, revealedPlain, setRevealed } from './reveal';
import { lineBreaksShown } from '../common/untrusted';
import { jobAsks } from '../common/tools';

const OUTCOME: Record<string, string> = {
  accept: 'Sent to the server',
  decline: 'Declined: the server was told no',
  cancel: 'Cancelled: nothing was sent',
};

const INPUT_TYPE: Record<string, string> = { email: 'email', uri: 'url', date: 'date' };

type Control = { field: ElicitField; read(): unknown; problem: HTMLElement; inputs: (HTMLInputElement | HTMLSelectElement)[] };

export class ElicitationCard {
  readonly el: HTMLElement;
  private readonly controls: Control[] = [];
  private readonly formProblem: HTMLElement;
  private readonly actions: HTMLElement;
  private readonly outcome: HTMLElement;
  private lastKey = '';
  private sent = false;

  constructor(
    private readonly view: ElicitationView,
    private readonly ctx: ViewContext,
  ) {
    const titleId = uid('elicit');
    const { form } = view;
    const title = h(
      'span',
      { class: 'elicitation-title', id: titleId },
      'The ',
      h('span', { class: 'elicitation-server' }, revealed(form.server, { line: true })),
      ' asks for input',
    );
    const head = attentionHead({ headClass: 'elicitation-head', iconClass: 'elicit-icon', icon: 'person', title, badge: 'Input needed' });
    const body = h('div', { class: 'elicitation-body' });
    const job = view.job === undefined ? '' : `${jobAsks(view.job)}. `;
    if (view.tool) body.append(h('p', { class: 'elicitation-from' }, `${job}While running the tool `, h('code', null, revealed(view.tool, { line: true }))));
    else if (job) body.append(h('p', { class: 'elicitation-from', text: job }));
    body.append(h('p', { class: 'elicitation-message' }, revealed(form.message)));
    if (form.messageClipped)
      body.append(
        h('p', { class: 'elicitation-note', role: 'note' }, icon('info'), h('span', { text: "The server's message is longer; CodeAct shows its start." })),
      );
    const formEl = h('form', {
      class: 'elicitation-form',
      novalidate: true,
      'aria-labelledby': titleId,
      onsubmit: (e: Event) => (e.preventDefault(), this.answer('accept')),
    });
    for (const field of form.fields) formEl.append(this.fieldRow(field));
    this.formProblem = h('p', { class: 'elicit-problem', role: 'alert', hidden: true });
    formEl.append(this.formProblem);
    body.append(formEl);
    body.append(
      h(
        'p',
        { class: 'elicitation-note', role: 'note' },
        icon('lock'),
        h('span', { text: 'Only what you enter here is sent to this server. Do not enter passwords or keys.' }),
      ),
    );
    this.actions = h(
      'div',
      { class: 'approval-actions', role: 'group', 'aria-label': 'Answer' },
      textButton('Accept', () => this.answer('accept'), 'primary', 'check'),
      textButton('Decline', () => this.answer('decline')),
      textButton('Cancel', () => this.answer('cancel'), 'secondary', 'close'),
    );
    this.outcome = h('div', { class: 'approval-outcome', role: 'status', hidden: true });
    this.el = h('section', { class: 'elicitation', 'data-elicitation-id': view.id, 'aria-labelledby': titleId }, head, body, this.actions, this.outcome);
    if (view.status === 'open') ctx.announce(`Input needed: the ${revealedPlain(form.server, { line: true })} asks for input`);
  }

  private fieldRow(field: ElicitField): HTMLElement {
    const id = uid('ef');
    const problem = h('p', { class: 'elicit-problem', id: `${id}-problem`, role: 'alert', hidden: true });
    const label = h(
      'label',
      { for: id, class: 'elicit-label' },
      h('span', null, revealed(field.title, { line: true })),
      field.required ? h('span', { class: 'elicit-required', text: ' *', title: 'Required', 'aria-label': 'required' }) : null,
    );
    const desc = field.description ? h('p', { class: 'elicit-desc', id: `${id}-desc` }, revealed(field.description)) : null;
    const described = [desc ? `${id}-desc` : '', `${id}-problem`].filter(Boolean).join(' ');
    const common = { id, 'aria-describedby': described, 'aria-required': field.required ? 'true' : undefined, name: field.key };
    let control: Control;
    const row = h('div', { class: `elicit-field elicit-${field.kind}`, 'data-key': field.key });
    if (field.kind === 'boolean') {
      const box = h('input', { ...common, type: 'checkbox' });
      box.checked = field.default === true;
      control = { field, read: () => box.checked, problem, inputs: [box] };
      row.append(h('div', { class: 'elicit-check' }, box, label), desc ?? '', problem);
    } else if (field.kind === 'enum') {
      const select = h('select', common);
      if (!(field.required && field.default !== undefined)) select.append(h('option', { value: '', text: field.required ? 'Choose…' : '(none)' }));
      for (const o of field.options ?? []) select.append(h('option', { value: o.value, text: revealedPlain(o.label, { line: true }) }));
      select.value = typeof field.default === 'string' ? field.default : '';
      control = { field, read: () => select.value, problem, inputs: [select] };
      row.append(label, desc ?? '', select, problem);
    } else if (field.kind === 'multi') {
      const chosen = new Set(Array.isArray(field.default) ? field.default : []);
      const boxes = (field.options ?? []).map((o) => {
        const box = h('input', { type: 'checkbox', value: o.value, name: field.key });
        box.checked = chosen.has(o.value);
        return { box, el: h('label', { class: 'elicit-choice' }, box, h('span', null, revealed(o.label, { line: true }))) };
      });
      const group = h('div', { class: 'elicit-choices', role: 'group', id, 'aria-describedby': described }, ...boxes.map((b) => b.el));
      control = { field, read: () => boxes.filter((b) => b.box.checked).map((b) => b.box.value), problem, inputs: boxes.map((b) => b.box) };
      // The label's own nodes (the title with its marker boxes, the required mark): a group has no <label for>.
      row.append(h('span', { class: 'elicit-label' }, ...Array.from(label.childNodes)), desc ?? '', group, problem);
    } else {
      const numeric = field.kind === 'number' || field.kind === 'integer';
      const input = h('input', {
        ...common,
        type: numeric ? 'number' : (field.format && INPUT_TYPE[field.format]) || 'text',
        step: field.kind === 'integer' ? '1' : numeric ? 'any' : undefined,
        min: field.minimum,
        max: field.maximum,
        // A number's range is short enough to stay whole in a narrow panel ("a whole number from 18 to 130" was cut to "…to 13").
        placeholder: numeric ? numberRange(field) : field.format === 'date-time' ? 'YYYY-MM-DDTHH:MM:SSZ' : elicitFieldHint(field),
        autocomplete: 'off',
        spellcheck: 'false',
      });
      if (field.default !== undefined) input.value = String(field.default);
      control = { field, read: () => input.value, problem, inputs: [input] };
      row.append(label, desc ?? '', input, problem);
    }
    this.controls.push(control);
    return row;
  }

  private answer(action: 'accept' | 'decline' | 'cancel'): void {
    if (this.sent) return;
    this.sent = true;
    const content: ElicitValues = {};
    if (action === 'accept') {
      for (const c of this.controls) {
        const v = coerceElicitValue(c.field, c.read());
        if (v !== undefined && !(Array.isArray(v) && !v.length && !c.field.required)) content[c.field.key] = v;
      }
    }
    this.ctx.post({ type: 'elicitation', elicitationId: this.view.id, action, ...(action === 'accept' ? { content } : {}) });
    this.setEnabled(false);
    this.showOutcome(action === 'accept' ? 'Checking and sending…' : action === 'decline' ? 'Declining…' : 'Cancelling…', 'pending');
  }

  private setEnabled(on: boolean): void {
    for (const b of Array.from(this.actions.querySelectorAll('button'))) b.disabled = !on;
    for (const c of this.controls) for (const i of c.inputs) i.disabled = !on;
  }

  private showOutcome(text: string, kind: string): void {
    this.outcome.hidden = false;
    this.outcome.dataset.kind = kind;
    this.outcome.textContent = '';
    this.outcome.append(icon(kind === 'deny' ? 'close' : kind === 'pending' || kind === 'expired' ? 'clock' : 'check'), h('span', { text }));
  }

  /** `active`: the execution still runs (an open form of a finished run is no longer wanted). */
  sync(v: ElicitationView, active: boolean): void {
    const key = `${v.rev}|${v.status}|${active}`;
    if (key === this.lastKey) return;
    this.lastKey = key;
    const open = v.status === 'open' && active;
    this.el.dataset.status = open ? 'open' : v.status === 'open' ? 'expired' : v.status;
    if (open) {
      // Shown again with what was wrong: each field says it, and the form takes input again.
      const problems = v.problems ?? {};
      for (const c of this.controls) {
        const p = problems[c.field.key];
        c.problem.hidden = !p;
        setRevealed(c.problem, p ? `${lineBreaksShown(c.field.title, { line: true })} ${p}.` : '');
        for (const i of c.inputs) i.setAttribute('aria-invalid', p ? 'true' : 'false');
      }
      this.formProblem.hidden = !problems[''];
      setRevealed(this.formProblem, problems[''] ?? '');
      if (v.problems && Object.keys(v.problems).length) {
        this.sent = false;
        this.setEnabled(true);
        this.outcome.hidden = true;
        this.controls.find((c) => problems[c.field.key])?.inputs[0]?.focus();
      }
      return;
    }
    this.sent = true;
    this.setEnabled(false);
    this.actions.hidden = true;
    this.formProblem.hidden = true;
    for (const c of this.controls) {
      c.problem.hidden = true;
      for (const i of c.inputs) i.removeAttribute('aria-invalid');
    }
    this.el.querySelector('.badge.attention')?.remove();
    if (v.status === 'open') this.showOutcome('No longer needed: the run ended before an answer.', 'expired');
    else this.showOutcome(OUTCOME[v.status], v.status === 'accept' ? 'allow' : 'deny');
  }
}

/** A number field's placeholder: its range ("18–130", "≥ 0", "≤ 10"), else what it takes. */
function numberRange(f: ElicitField): string {
  const lo = f.minimum;
  const hi = f.maximum;
  if (lo !== undefined && hi !== undefined) return `${lo}–${hi}`;
  if (lo !== undefined) return `≥ ${lo}`;
  if (hi !== undefined) return `≤ ${hi}`;
  return elicitFieldHint(f);
}
