/**
 * A saved scroll position brought back after a reload: the turn that was at the top of the view, as far into
 * it as it was. One scroll in one frame cannot do it: `TranscriptView.renderAll` puts only a few turns in the
 * DOM at first (from the saved turn down, within a time budget) and inserts the others in idle time. While
 * the turns below are missing, the view cannot scroll that far (it is clamped at the end of what is there),
 * and the bottom is in view, so following the bottom would take over; turns inserted above move the view
 * unless the browser's scroll anchoring catches every insertion.
 *
 * So the position is held: `StickToBottom.hold` keeps the bottom from taking over, and after every layout
 * that changes the transcript's size (a ResizeObserver: layout is fresh there, and it runs before paint) the
 * turn is put back where it belongs. The hold ends two frames after every turn is in (turns near the view
 * get their real size a frame late: `content-visibility: auto`), when the user scrolls, or when the view
 * goes to the bottom.
 */
import type { ScrollPosition } from './persistence';
import type { StickToBottom } from './scrollAnchor';
import type { TranscriptView } from './transcriptView';

export class HeldPosition {
  private wanted: ScrollPosition | undefined;
  private held = false;
  /** Counts holds, so that an end planned for one hold does not end the next one. */
  private epoch = 0;
  /** The hold whose end is planned (-1: none). */
  private ending = -1;
  private readonly ro = new ResizeObserver(() => this.keep());

  constructor(
    private readonly scroller: HTMLElement,
    private readonly transcript: HTMLElement,
    private readonly stick: StickToBottom,
    private readonly view: TranscriptView,
    /** Called when a hold ends (the place the view is at can be measured and saved again). */
    private readonly ended: () => void,
  ) {}

  /** The position being restored: to apply once the transcript is laid out, or held now. */
  get position(): ScrollPosition | undefined {
    return this.wanted;
  }

  /** The position to restore at the next `apply`; undefined: none (a held one is let go). */
  set(pos: ScrollPosition | undefined): void {
    if (pos) this.wanted = pos;
    else this.end();
  }

  /** Once the transcript is laid out: goes to the position and holds it. False when its turn is not there. */
  apply(): boolean {
    const el = this.element();
    if (!el) {
      this.end();
      return false;
    }
    this.stick.hold();
    this.held = true;
    this.place(el);
    this.ro.observe(this.transcript); // its first report comes after this frame's layout
    return true;
  }

  /** Whether a scroll now belongs to the restoring. A scroll of the user's own ends the hold (and says no). */
  ownsScroll(): boolean {
    if (this.held && this.stick.userScrolling()) this.end();
    return this.wanted !== undefined;
  }

  private keep(): void {
    const el = this.held ? this.element() : undefined;
    // The user's scroll may not have moved the view yet (wheel scrolling is animated): it wins.
    if (!el || this.stick.userScrolling()) return this.end();
    this.place(el);
    if (!this.view.complete || this.ending === this.epoch) return;
    const epoch = (this.ending = this.epoch);
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        if (this.ending !== epoch) return;
        this.ending = -1;
        // A reset may have rendered the transcript again meanwhile: its next resize plans the end again.
        if (this.view.complete) this.end();
      }),
    );
  }

  private end(): void {
    const was = this.held;
    this.wanted = undefined;
    this.held = false;
    this.epoch++;
    this.ro.disconnect();
    if (!was) return;
    this.stick.endHold();
    this.ended();
  }

  private element(): HTMLElement | undefined {
    return this.wanted?.turnId ? this.view.turnElement(this.wanted.turnId) : undefined;
  }

  private place(el: HTMLElement): void {
    const delta = el.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top + (this.wanted?.offset ?? 0);
    if (delta) this.scroller.scrollTop += delta;
  }
}
