/**
 * The context meter in the composer: how full the model's window was at the latest request, as a small
 * gauge with a tick where compaction starts, and the tokens (cached included) and cost of the running or
 * last turn and of the whole conversation in its tooltip. Hidden until the host reports a window.
 */
import type { TranscriptModel } from '../common/transcript';
import { contextFill, contextText, totalsText, type UsageTotals } from '../common/usage';
import { PRICES_AS_OF } from '../common/prices';
import { h, setText } from './dom';

export class ContextMeter {
  readonly el: HTMLElement;
  private readonly fill: HTMLElement;
  private readonly tick: HTMLElement;
  private readonly label: HTMLElement;
  private last = '';

  constructor() {
    this.fill = h('span', { class: 'meter-fill' });
    this.tick = h('span', { class: 'meter-tick', 'aria-hidden': 'true' });
    this.label = h('span', { class: 'meter-label', 'aria-hidden': 'true' });
    this.el = h(
      'div',
      { class: 'context-meter', role: 'meter', tabindex: '0', 'aria-valuemin': '0', 'aria-valuemax': '100', hidden: true },
      h('span', { class: 'meter-bar', 'aria-hidden': 'true' }, this.fill, this.tick),
      this.label,
    );
  }

  /** Cheap when nothing changed (called with every frame). */
  update(model: TranscriptModel): void {
    const fill = model.context ? contextFill(model.context) : undefined;
    let turn = model.turns[model.turns.length - 1];
    for (let i = model.turns.length - 1; i >= 0 && !turn?.usage; i--) turn = model.turns[i];
    const key = `${model.context?.used_tokens}/${model.context?.window_tokens}/${model.context?.compact_at_tokens}|${turn?.id}:${turn?.rev}|${model.usage?.total_tokens}`;
    if (key === this.last) return;
    this.last = key;
    this.el.hidden = !fill;
    if (!fill) return;
    const percent = Math.round(fill.fraction * 100);
    this.fill.style.width = `${fill.fraction * 100}%`;
    this.tick.style.left = `${fill.compactFraction * 100}%`;
    setText(this.label, `${percent}%`);
    this.el.classList.toggle('past-compaction', fill.used >= fill.compactAt);
    this.el.setAttribute('aria-valuenow', String(percent));
    const lines = [contextText(fill)];
    const usage = turn?.usage as UsageTotals | undefined;
    if (usage) lines.push(`This turn: ${totalsText(withCached(usage))}`);
    if (model.usage) lines.push(`Conversation: ${totalsText(model.usage)}`);
    if (usage?.cost_usd !== undefined || model.usage?.cost_usd !== undefined) lines.push(`Costs at list prices as of ${PRICES_AS_OF}.`);
    const text = lines.join('\n');
    this.el.title = text;
    this.el.setAttribute('aria-label', `Context window: ${lines.join('. ')}`);
    this.el.setAttribute('aria-valuetext', lines[0]);
  }
}

/** A turn saved before cached tokens were counted has none. */
function withCached(u: UsageTotals): UsageTotals {
  return { ...u, cached_tokens: u.cached_tokens || 0, unpriced: u.unpriced || 0 };
}
