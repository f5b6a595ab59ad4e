/** The conversation history dialog: saved conversations to reopen, export or delete, and "Clear history…". */
import type { ConversationSummary, WebviewToHost } from '../common/protocol';
import { relativeTime } from '../common/format';
import { h } from './dom';
import { icon } from './icons';
import { button, toolbarButton } from './viewKit';
import { revealed, revealedPlain } from './reveal';

export class HistoryPanel {
  readonly el: HTMLElement;
  private readonly historyList: HTMLElement;
  private conversations?: ConversationSummary[];
  private conversationId?: string;

  constructor(
    private readonly post: (m: WebviewToHost) => void,
    /** Where focus goes back when the dialog closes. */
    private readonly returnFocus: () => void,
  ) {
    this.historyList = h('ul', { class: 'history-list', 'aria-label': 'Saved conversations' });
    this.el = h(
      'aside',
      { class: 'history-panel', role: 'dialog', 'aria-label': 'Conversation history', hidden: true },
      h(
        'header',
        { class: 'history-head' },
        icon('history'),
        h('span', { class: 'history-title', text: 'Conversations' }),
        h('span', { class: 'spacer' }),
        toolbarButton('close', 'Close history', () => this.close()),
      ),
      this.historyList,
      h('div', { class: 'history-foot' }),
    );
    this.el.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        this.close();
      }
    });
  }

  open(conversations: ConversationSummary[] | undefined, conversationId: string | undefined): void {
    this.el.hidden = false;
    this.update(conversations, conversationId);
    this.post({ type: 'history.list' });
    const first = this.el.querySelector<HTMLElement>('.history-open, button');
    first?.focus();
  }

  close(): void {
    this.el.hidden = true;
    this.returnFocus();
  }

  update(conversations: ConversationSummary[] | undefined, conversationId: string | undefined): void {
    this.conversations = conversations;
    this.conversationId = conversationId;
    this.render();
  }

  private render(): void {
    const historyPanel = this.el;
    if (historyPanel.hidden) return;
    const list = this.conversations;
    this.historyList.textContent = '';
    const foot = historyPanel.querySelector('.history-foot')!;
    foot.textContent = '';
    if (!list) {
      this.historyList.append(h('li', { class: 'history-empty', text: 'Loading…' }));
      return;
    }
    // Conversations of `codeact chat` and ACP editors are the host's to list (its picker).
    const fromCli = button(
      'From the terminal…',
      'terminal',
      () => {
        this.post({ type: 'history.fromCli' });
        this.close();
      },
      'button secondary',
      'Continue a conversation of codeact chat or an ACP editor in this workspace',
    );
    if (!list.length) {
      this.historyList.append(h('li', { class: 'history-empty', text: 'No saved conversations yet. Each conversation is saved when its first turn ends.' }));
      foot.append(fromCli);
      return;
    }
    for (const c of list) {
      const current = c.id === this.conversationId;
      const open = h(
        'button',
        {
          class: 'history-open',
          type: 'button',
          'aria-current': current ? 'true' : undefined,
          onclick: () => {
            this.post({ type: 'history.open', conversationId: c.id });
            this.close();
          },
        },
        h('span', { class: 'history-name' }, revealed(c.title || 'Untitled', { line: true })),
        // The model's id comes from a saved conversation: markers as boxes.
        h(
          'span',
          { class: 'history-meta' },
          revealed([relativeTime(c.updatedAt), `${c.turns} ${c.turns === 1 ? 'turn' : 'turns'}`, c.model].filter(Boolean).join(' · '), { line: true }),
        ),
      );
      const exp = toolbarButton('notebook', `Export “${revealedPlain(c.title, { line: true })}” as notebook`, () =>
        this.post({ type: 'exportNotebook', conversationId: c.id }),
      );
      const del = toolbarButton('trash', `Delete “${revealedPlain(c.title, { line: true })}”`, () =>
        this.post({ type: 'history.delete', conversationId: c.id }),
      );
      this.historyList.append(h('li', { class: `history-item${current ? ' current' : ''}` }, open, h('span', { class: 'history-actions' }, exp, del)));
    }
    // The host confirms (a modal) before it deletes anything.
    const clear = button('Clear history…', 'trash', () => this.post({ type: 'history.clear' }), 'button secondary', 'Delete every saved conversation');
    foot.append(fromCli, clear);
  }
}
