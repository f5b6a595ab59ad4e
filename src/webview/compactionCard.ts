/**
 * The compaction boundary in the transcript: an "Earlier turns summarised" divider with the token counts
 * before and after, whose summary opens and closes with a button (aria-expanded). The turns above it stay
 * in the transcript as they were; only what the model is sent got shorter.
 */
import type { CompactionView, ItemView } from '../common/transcript';
import { formatCount, h, setText, uid } from './dom';
import { icon } from './icons';
import { renderMarkdownFragment } from './markdown';
import type { ItemRenderer } from './viewKit';

const METHOD_TEXT: Record<CompactionView['method'], string> = {
  summary: 'Summarised by the model',
  'stand-ins': 'Old tool results shortened to stand-ins',
  fallback: 'The summary call failed: a plain digest instead',
};

export class CompactionRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly toggleButton: HTMLButtonElement;
  private readonly tokens: HTMLElement;
  private readonly body: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly meta: HTMLElement;
  private lastRev = -1;

  constructor(item: CompactionView) {
    const id = uid('compaction');
    // Stand-ins summarise nothing: the old tool results were shortened.
    const label = item.method === 'stand-ins' ? 'Earlier tool results shortened' : 'Earlier turns summarised';
    this.toggleButton = h(
      'button',
      { class: 'compaction-toggle', type: 'button', 'aria-expanded': 'false', 'aria-controls': id, onclick: () => this.setOpen(this.body.hidden) },
      icon('chevron'),
      h('span', { text: label }),
    );
    this.tokens = h('span', { class: 'compaction-tokens' });
    this.summary = h('div', { class: 'compaction-text md' });
    this.meta = h('div', { class: 'compaction-meta' });
    this.body = h('div', { class: 'compaction-body', id, hidden: true }, this.meta, this.summary);
    this.el = h(
      'section',
      { class: 'compaction', 'aria-label': label, 'data-compaction': item.method },
      h(
        'div',
        { class: 'compaction-rule' },
        h('span', { class: 'compaction-line', 'aria-hidden': 'true' }),
        this.toggleButton,
        this.tokens,
        h('span', { class: 'compaction-line', 'aria-hidden': 'true' }),
      ),
      this.body,
    );
  }

  setOpen(open: boolean): void {
    this.body.hidden = !open;
    this.toggleButton.setAttribute('aria-expanded', String(open));
    this.el.classList.toggle('open', open);
  }

  sync(raw: ItemView): void {
    const item = raw as CompactionView;
    if (item.rev === this.lastRev) return;
    this.lastRev = item.rev;
    setText(this.tokens, `${formatCount(item.beforeTokens)} → ${formatCount(item.afterTokens)} tokens`);
    this.tokens.title = `The request had ${formatCount(item.beforeTokens)} tokens before compaction and ${formatCount(item.afterTokens)} after.`;
    setText(
      this.meta,
      `${METHOD_TEXT[item.method]}; the last ${item.keptTurns === 1 ? 'step stays' : `${formatCount(item.keptTurns)} steps stay`} verbatim. Everything above is kept in full here and in the saved conversation.`,
    );
    // The model's markdown, through the panel's one sanitising markdown pipeline (as its answers). Stand-ins have none.
    this.summary.replaceChildren(item.summary ? renderMarkdownFragment(item.summary) : '');
    this.summary.hidden = !item.summary;
  }
}
