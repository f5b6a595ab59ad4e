/**
 * Renders the transcript model into the DOM, one view object per turn and per item. Views pull from the
 * model when marked dirty and update only what changed since they last looked (appended text, appended
 * code, appended output, new tool calls): nothing is ever rendered twice and the whole transcript is
 * never re-rendered.
 *
 * A whole model (a reopened conversation, a reload) is rendered latest first: the newest turns at once,
 * within a small time budget, the older ones in idle-time slices inserted above them (the app holds a restored
 * position meanwhile: heldPosition.ts; scroll anchoring keeps a following view still), so a 500-turn conversation never blocks the page for long. Offscreen turns cost
 * no style, layout or paint (`content-visibility: auto` on their bodies).
 */
import type { RewoundMessage } from '../common/outputMessages';
import { execKey, findTurn, type ItemView, type TranscriptModel, type TurnView } from '../common/transcript';
import type { TurnSource } from '../common/transcript/events';
import { formatElapsed } from '../common/format';
import { formatCount, formatTokens, h, setText } from './dom';
import { formatCost, PRICES_AS_OF } from '../common/prices';
import { CompactionRenderer } from './compactionCard';
import { ExecRenderer } from './execCard';
import type { IdleQueue } from './frameLoop';
import { icon, spinner, type IconName } from './icons';
import { ApprovalRenderer, EditorRenderer, ErrorRenderer, FunctionRenderer, MessageRenderer, NoticeRenderer } from './itemCards';
import { iconButton, type ItemRenderer, type ViewContext } from './viewKit';
import { revealed, revealedPlain } from './reveal';
import { JobNotesRenderer, JobRenderer } from './jobCard';

/** How a turn's prompt is headed, by who started the turn (its source). */
const ASKERS: Partial<Record<TurnSource, { label: string; icon: IconName; run?: boolean }>> & { chat: { label: string; icon: IconName } } = {
  chat: { label: 'You', icon: 'person' },
  run_with_tools: { label: 'Run with Tools', icon: 'play', run: true },
  mcp: { label: 'MCP client', icon: 'tools', run: true },
};

// ---- turn -----------------------------------------------------------------------------------------

const REWIND_TITLE = 'Rewind to here: back to before this message (you choose the conversation, the code, or both)';

class TurnRenderer {
  readonly el: HTMLElement;
  readonly items: HTMLElement;
  private readonly body: HTMLElement;
  private readonly footer: HTMLElement;
  private readonly statusEl: HTMLElement;
  private readonly usageEl: HTMLElement;
  private readonly metaEl: HTMLElement;
  private lastRev = -1;
  private lastStatus = '';
  /** "Rewind to here" on the message, offered once the turn has ended. */
  private readonly rewind?: HTMLButtonElement;

  constructor(turn: TurnView, index: number, ctx: ViewContext) {
    this.el = h('article', { class: 'turn', 'data-turn-id': turn.id, 'aria-label': `Turn ${index + 1}` });
    const body = (this.body = h('div', { class: 'turn-body' }));
    this.el.append(body);
    if (turn.prompt !== undefined) {
      // Who asked: the person, Run with Tools, or another agent through CodeAct's MCP server (never shown as "You").
      // (A source read from a file is data: only ASKERS' own keys pick a heading.)
      const asker = (turn.source && Object.prototype.hasOwnProperty.call(ASKERS, turn.source) ? ASKERS[turn.source] : undefined) ?? ASKERS.chat;
      const label = asker.label;
      this.rewind = iconButton('history', REWIND_TITLE, () => ctx.post({ type: 'turn.rewind', turnId: turn.id }), 'turn-rewind');
      this.rewind.hidden = true;
      const bubble = h(
        'div',
        { class: `user-msg${asker.run ? ' run' : ''}` },
        h('div', { class: 'avatar', 'aria-hidden': 'true' }, icon(asker.icon)),
        h('div', { class: 'user-body' }, h('div', { class: 'who', text: label }), this.rewind, h('div', { class: 'user-text' }, revealed(turn.prompt))),
      );
      body.append(bubble);
    }
    this.items = h('div', { class: 'turn-items' });
    this.statusEl = h('span', { class: 'turn-status' });
    this.usageEl = h('span', { class: 'turn-usage' });
    this.metaEl = h('span', { class: 'turn-meta' });
    this.footer = h('footer', { class: 'turn-footer' }, this.statusEl, this.usageEl, h('span', { class: 'spacer' }), this.metaEl);
    body.append(this.items, this.footer);
  }

  /** Puts an item's view in the turn: a compaction before the turn's first request goes above its prompt (the boundary). */
  place(item: ItemView, el: HTMLElement, turn: TurnView): void {
    if (item.kind === 'compaction' && turn.itemKeys[0] === item.key) this.body.prepend(el);
    else this.items.append(el);
  }

  sync(turn: TurnView): void {
    if (turn.rev === this.lastRev) return;
    this.lastRev = turn.rev;
    if (turn.status !== this.lastStatus) {
      this.lastStatus = turn.status;
      this.statusEl.textContent = '';
      this.el.dataset.status = turn.status;
      if (this.rewind) this.rewind.hidden = turn.status === 'running';
      if (turn.status === 'running') this.statusEl.append(spinner(), h('span', { text: 'Working…' }));
      // The reason is said once, in the turn's error card; the footer names the outcome.
      else if (turn.interrupted) this.statusEl.append(icon('warning'), h('span', { text: 'Interrupted by a reload' }));
      else if (turn.status === 'stopped') this.statusEl.append(icon('stop'), h('span', { text: 'Stopped' }));
      else if (turn.status === 'failed') this.statusEl.append(icon('error'), h('span', { text: 'Failed' }));
      else this.statusEl.append(icon('check'), h('span', { text: 'Done' }));
      this.statusEl.title = turn.message ?? '';
      if (turn.interrupted) this.el.dataset.interrupted = 'true';
    }
    const u = turn.usage;
    if (u) {
      const cost = u.cost_usd !== undefined ? formatCost(u.cost_usd) : '';
      setText(this.usageEl, `${formatTokens(u.input_tokens)} in · ${formatTokens(u.output_tokens)} out${cost ? ` · ${cost}` : ''}`);
      const cached = u.cached_tokens ? `\nCached input tokens: ${formatCount(u.cached_tokens)}` : '';
      this.usageEl.title = `Input tokens: ${formatCount(u.input_tokens)}${cached}\nOutput tokens: ${formatCount(u.output_tokens)}${turn.responses > 1 ? `\nModel calls: ${turn.responses}` : ''}${cost ? `\nCost: about ${cost} (list prices as of ${PRICES_AS_OF})` : ''}`;
      this.usageEl.setAttribute(
        'aria-label',
        `Usage: ${formatCount(u.input_tokens)} input tokens${u.cached_tokens ? ` (${formatCount(u.cached_tokens)} cached)` : ''}, ${formatCount(u.output_tokens)} output tokens${cost ? `, about ${cost}` : ''}`,
      );
    }
    // The model and the duration are words of their own: a narrow footer wraps between them, never inside one.
    const meta = [turn.model, turn.durationMs !== undefined ? formatElapsed(turn.durationMs) : ''].filter((x): x is string => !!x);
    // The model's id comes from the provider's server or a saved conversation: markers as boxes.
    if (meta.map((m) => revealedPlain(m)).join('') !== this.metaEl.textContent) {
      this.metaEl.textContent = '';
      for (const m of meta) this.metaEl.append(h('span', { class: 'meta-part' }, revealed(m, { line: true })));
    }
  }
}

// ---- the transcript ---------------------------------------------------------------------------------

/** Time for the newest turns of a reopened conversation, in ms, before the rest goes to idle time. */
const FIRST_BUDGET_MS = 12;
/** Turns rendered at once whatever the budget (the view must not open empty). */
const FIRST_MIN_TURNS = 2;

interface RenderAllOptions {
  /** Start from this turn (a restored scroll position) instead of the latest turns. */
  around?: string;
}

export class TranscriptView {
  private readonly turns = new Map<string, TurnRenderer>();
  private readonly items = new Map<string, ItemRenderer>();
  /** Turns of the model that wait for idle time. */
  private readonly pending = new Set<string>();
  private generation = 0;

  constructor(
    readonly root: HTMLElement,
    private readonly ctx: ViewContext,
    private readonly idle: IdleQueue,
  ) {}

  clear(): void {
    this.generation++;
    this.pending.clear();
    this.turns.clear();
    this.items.clear();
    this.root.textContent = '';
  }

  get turnCount(): number {
    return this.turns.size;
  }

  /** Whether every turn of the model is in the DOM. */
  get complete(): boolean {
    return this.pending.size === 0;
  }

  turnElement(id: string): HTMLElement | undefined {
    return this.turns.get(id)?.el;
  }

  /** Creates the view of a new turn (appended at the end). */
  addTurn(model: TranscriptModel, turn: TurnView): void {
    if (this.turns.has(turn.id) || this.pending.has(turn.id)) return;
    const r = new TurnRenderer(turn, model.turns[model.turns.length - 1] === turn ? model.turns.length - 1 : model.turns.indexOf(turn), this.ctx);
    this.turns.set(turn.id, r);
    this.root.append(r.el);
  }

  /** Creates the view of an item in its turn (appended at the end of that turn). */
  addItem(model: TranscriptModel, key: string): void {
    if (this.items.has(key)) return;
    const item = model.items[key];
    if (!item || this.pending.has(item.turnId)) return; // rendered whole when its turn's time comes
    const t = findTurn(model, item.turnId);
    if (!t) return;
    if (!this.turns.has(item.turnId)) this.addTurn(model, t);
    const turn = this.turns.get(item.turnId)!;
    const r = this.createRenderer(item, model);
    this.items.set(key, r);
    turn.place(item, r.el, t);
  }

  syncTurn(turn: TurnView): void {
    this.turns.get(turn.id)?.sync(turn);
  }

  /** The host found a file of an execution gone: its chip says so. */
  fileMissing(model: TranscriptModel, itemId: string, path: string, message: string): void {
    const key = execKey(itemId);
    const r = this.items.get(model.aliases[key] ?? key);
    if (r instanceof ExecRenderer) r.fileMissing(path, message);
  }

  /** A revert of an execution's workspace changes ended: its card marks the rows. */
  changesReverted(model: TranscriptModel, itemId: string, reverted: readonly string[], failed: readonly { path: string; why: string }[], kept = false): void {
    const key = execKey(itemId);
    const r = this.items.get(model.aliases[key] ?? key);
    if (r instanceof ExecRenderer) r.changesReverted(reverted, failed, kept);
  }

  rewound(model: TranscriptModel, m: RewoundMessage): void {
    const key = execKey(m.itemId);
    const r = this.items.get(model.aliases[key] ?? key);
    if (r instanceof ExecRenderer) r.rewound(m);
  }

  syncItem(item: ItemView): void {
    this.items.get(item.key)?.sync(item);
  }

  /**
   * Renders a whole model (after a reload or a reset), latest first: the newest turns now (or the turns from
   * `around` on), within a small budget, then the others in idle time. Afterwards, only deltas.
   */
  renderAll(model: TranscriptModel, options: RenderAllOptions = {}): void {
    this.clear();
    const turns = model.turns;
    const n = turns.length;
    if (!n) return;
    for (const t of turns) this.pending.add(t.id);
    const t0 = performance.now();
    const enough = (count: number) => count >= FIRST_MIN_TURNS && performance.now() - t0 > FIRST_BUDGET_MS;
    const at = options.around ? turns.findIndex((t) => t.id === options.around) : -1;
    let before: number;
    let after: number;
    let last: HTMLElement;
    if (at >= 0) {
      // From the saved position downwards; what is above it comes later.
      const els: HTMLElement[] = [];
      let i = at;
      while (i < n && !enough(els.length)) els.push(this.build(model, turns[i], i++));
      this.root.append(...els);
      before = at;
      after = i;
      last = els[els.length - 1];
    } else {
      const els: HTMLElement[] = [];
      let i = n;
      while (i > 0 && !enough(els.length)) els.push(this.build(model, turns[--i], i));
      els.reverse();
      this.root.append(...els);
      before = i;
      after = n;
      last = els[els.length - 1];
    }
    const end = n;
    if (before === 0 && after >= end) return;
    const generation = this.generation;
    this.idle.add((more) => {
      if (generation !== this.generation) return false;
      // Turns below the first run (only with `around`), in order; new turns were appended after them.
      while (after < end && more()) {
        const el = this.build(model, turns[after], after++);
        last.after(el);
        last = el;
      }
      const els: HTMLElement[] = [];
      while (after >= end && before > 0 && more()) els.push(this.build(model, turns[--before], before));
      if (els.length) this.root.prepend(...els.reverse());
      return before > 0 || after < end;
    });
  }

  /** The view of a whole turn with its items, in their current state. */
  private build(model: TranscriptModel, turn: TurnView, index: number): HTMLElement {
    this.pending.delete(turn.id);
    const r = new TurnRenderer(turn, index, this.ctx);
    this.turns.set(turn.id, r);
    for (const key of turn.itemKeys) {
      const item = model.items[key];
      if (!item || this.items.has(key)) continue;
      const ir = this.createRenderer(item, model);
      this.items.set(key, ir);
      r.place(item, ir.el, turn);
      ir.sync(item);
    }
    r.sync(turn);
    return r.el;
  }

  private createRenderer(item: ItemView, model: TranscriptModel): ItemRenderer {
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
        return new ErrorRenderer(
          item,
          this.ctx,
          model.turns.find((t) => t.id === item.turnId),
        );
      case 'notice':
        return new NoticeRenderer(item);
      case 'compaction':
        return new CompactionRenderer(item);
      case 'job':
        return new JobRenderer(item, this.ctx);
      case 'jobNotes':
        return new JobNotesRenderer(item);
    }
  }
}
