/**
 * "Rewind to here" on a finished execution card of a local Python session (issue 35): the host asks the person what
 * goes back: the session's Python state and the workspace files to before this execution (core/runtime/local/
 * checkpoints), the conversation to before its turn (core/agent/conversationRewind), or both. What was done is said on the card, with Redo (back to the state just before the
 * rewind) while the host offers it.
 */
import type { RewoundMessage } from '../common/outputMessages';
import type { ExecView } from '../common/transcript';
import { h, setText } from './dom';
import { icon } from './icons';
import { iconButton, textButton, type ViewContext } from './viewKit';

const TITLE = 'Rewind to here: back to before this execution (you choose the code, the conversation, or both)';

export class RewindControls {
  /** The card's header button. */
  readonly button: HTMLButtonElement;
  /** Under the card's outputs: what the last rewind from this card did. */
  readonly note: HTMLElement;
  private readonly text: HTMLElement;
  private readonly redo: HTMLButtonElement;
  private redoPoint?: string;

  constructor(
    private readonly ctx: ViewContext,
    private readonly item: () => ExecView,
  ) {
    this.button = iconButton('history', TITLE, () => {
      this.ctx.post({ type: 'exec.rewind', itemId: this.item().id });
    });
    this.button.classList.add('rewind-here');
    this.button.hidden = true;
    this.text = h('span', { class: 'rewound-text' });
    this.redo = textButton('Redo', () => {
      if (this.redoPoint) this.ctx.post({ type: 'exec.rewind', itemId: this.item().id, redo: this.redoPoint });
    });
    this.redo.title = 'Go back to the state just before this rewind';
    this.note = h('div', { class: 'rewound-note', role: 'status', hidden: true }, icon('history'), this.text, this.redo);
  }

  /** Shown on a finished card that ran in a local session. */
  sync(x: ExecView): void {
    const show = !!x.rewindable && (x.status === 'done' || x.status === 'failed' || x.status === 'stopped');
    if (this.button.hidden === show) this.button.hidden = !show;
  }

  /** The host did a rewind (or a redo) from this card. */
  rewound(m: RewoundMessage): void {
    setText(this.text, `${m.redone ? 'Redone' : 'Rewound to before this execution'}. ${m.lines.join(' ')}`);
    // After a redo, the point offered is the rewound state again.
    setText(this.redo.querySelector('span')!, m.redone ? 'Rewind again' : 'Redo');
    this.redo.title = m.redone ? 'Go back to the state before this execution again' : 'Go back to the state just before this rewind';
    this.redoPoint = m.redo;
    this.redo.hidden = !m.redo;
    this.note.hidden = false;
    this.ctx.announce(m.redone ? 'Redone' : 'Rewound to before this execution');
  }
}
