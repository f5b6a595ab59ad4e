/**
 * Where the transcript is scrolled to, kept per conversation: following the bottom (`StickToBottom`), or a
 * place the user left it at, measured when scrolling stops, saved with the page's state and told to the host,
 * and brought back after a reload or a `reset` of the same conversation (`HeldPosition`).
 */
import type { WebviewToHost } from '../common/protocol';
import type { TranscriptModel } from '../common/transcript';
import { HeldPosition } from './heldPosition';
import { measurePosition, type ScrollPosition } from './persistence';
import { StickToBottom } from './scrollAnchor';
import type { TranscriptView } from './transcriptView';

/** What the scroll memory asks of the panel. */
interface ScrollMemoryHost {
  hasTurns(): boolean;
  conversationId(): string | undefined;
  /** Saves the page's state now (it reads `forSave`). */
  saveNow(): void;
  post(message: WebviewToHost): void;
  /** The view started or stopped following the bottom. */
  stuckChanged(): void;
}

/** A saved place worth restoring: a turn the model has. */
export function restorable(pos: ScrollPosition | undefined, model: TranscriptModel): ScrollPosition | undefined {
  const turnId = pos && !pos.stuck ? pos.turnId : undefined;
  return turnId && model.turns.some((t) => t.id === turnId) ? pos : undefined;
}

export class ScrollMemory {
  private readonly stick: StickToBottom;
  /** A saved position being restored: applied once its turn is laid out, held while the turns around it go in. */
  private readonly restore: HeldPosition;
  /** Where the user left the transcript while not at the bottom (measured when scrolling stops). */
  private position: ScrollPosition | undefined;
  private positionTimer: ReturnType<typeof setTimeout> | undefined;
  private settlePending = false;
  /** The scroll position last saved (a settled scroll saves again only when it moved). */
  private savedScroll: ScrollPosition | undefined;
  /** The scroll position last told to the host. */
  private toldHost: ScrollPosition | undefined;

  /** `saved`: a place to come back to (see `restorable`), or undefined to follow the bottom. */
  constructor(
    private readonly scroller: HTMLElement,
    private readonly transcript: HTMLElement,
    view: TranscriptView,
    saved: ScrollPosition | undefined,
    private readonly host: ScrollMemoryHost,
  ) {
    scroller.addEventListener('scroll', () => this.onScroll(), { passive: true });
    this.stick = new StickToBottom(scroller, { slack: 48, stuck: !saved, onChange: (stuck) => this.onStickChange(stuck) });
    this.restore = new HeldPosition(scroller, transcript, this.stick, view, () => this.measureWhenSettled());
    this.restore.set(saved);
  }

  /** Whether the view follows the bottom. */
  get stuck(): boolean {
    return this.stick.stuck;
  }

  /** The turn a saved place being restored is in (render the transcript around it). */
  get restoringTurn(): string | undefined {
    return this.restore.position?.turnId;
  }

  toBottom(): void {
    this.stick.toBottom();
  }

  /** Following the bottom is off while there is nothing to follow (the empty state is read from its top). */
  setActive(active: boolean): void {
    this.stick.setActive(active);
  }

  /**
   * Before the transcript is replaced by the same conversation's (the host came back after a reload): the
   * reader keeps their place, the page's own or, when the page kept nothing (a new window, a view reset), the
   * one the host remembers.
   */
  placeToKeep(sameConversation: boolean, hostScroll?: ScrollPosition): ScrollPosition | undefined {
    if (sameConversation && !this.stick.stuck) return this.restore.position ?? (this.position ??= measurePosition(this.scroller, this.transcript));
    return hostScroll?.stuck === false ? hostScroll : undefined;
  }

  /** A new transcript: `pos` (see `restorable`) is the place to restore, undefined to forget the old one. */
  restoreTo(pos: ScrollPosition | undefined): void {
    this.restore.set(pos);
    this.position = undefined;
  }

  /** The scroll position to save with the page's state. */
  forSave(): ScrollPosition {
    const scroll =
      this.restore.position ??
      (this.stick.stuck || !this.host.hasTurns() ? { stuck: true } : (this.position ??= measurePosition(this.scroller, this.transcript)));
    this.savedScroll = scroll;
    return scroll;
  }

  /**
   * Once the transcript is laid out: back to the saved position, or to the latest message while the view
   * follows the bottom. One frame does it however many renders asked (the page's saved state and the host's
   * replay after a reload both do): a second request must not throw away the position the first restored.
   */
  settleSoon(): void {
    if (this.settlePending) return;
    this.settlePending = true;
    requestAnimationFrame(() => {
      this.settlePending = false;
      if (this.restore.position) {
        if (!this.restore.apply()) this.jumpToLatest();
      } else if (this.stick.stuck || !this.host.hasTurns()) this.jumpToLatest();
    });
  }

  jumpToLatest(): void {
    // An empty conversation shows the empty state from its top.
    if (this.host.hasTurns()) this.stick.toBottom();
    else this.scroller.scrollTop = 0;
  }

  private onStickChange(stuck: boolean): void {
    this.host.stuckChanged();
    // Let go by the user: the scroll that did it may have been handled while still following, so the
    // place is measured (and saved) once it settles, as for any scroll.
    if (!stuck) return this.measureWhenSettled();
    this.restore.set(undefined);
    this.position = undefined;
    // Back at the bottom: a reload follows the latest again (the host forgets the old place).
    if (this.toldHost && !this.toldHost.stuck) this.tellHost({ stuck: true });
  }

  /** The user scrolled: remember where to, once scrolling stops (a reload comes back there). */
  private onScroll(): void {
    if (this.stick.stuck || this.restore.ownsScroll()) return;
    this.measureWhenSettled();
  }

  private measureWhenSettled(): void {
    this.position = undefined; // measured again when scrolling stops, or when saving before that
    if (this.positionTimer) clearTimeout(this.positionTimer);
    this.positionTimer = setTimeout(() => {
      this.positionTimer = undefined;
      if (this.stick.stuck || this.restore.position) return;
      const pos = (this.position = measurePosition(this.scroller, this.transcript));
      const moved = (was: ScrollPosition | undefined) => was?.turnId !== pos.turnId || was?.offset !== pos.offset;
      // Saved now rather than with the next change: a reload can come any moment. The host keeps it too.
      if (moved(this.savedScroll)) this.host.saveNow();
      if (this.host.conversationId() && moved(this.toldHost)) this.tellHost(pos);
    }, 200);
  }

  private tellHost(scroll: ScrollPosition): void {
    const conversationId = this.host.conversationId();
    if (!conversationId) return;
    this.toldHost = scroll;
    this.host.post({ type: 'scrolled', conversationId, scroll });
  }
}
