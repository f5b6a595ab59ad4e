/**
 * "Stick to the bottom while the user is at the bottom", without reading layout on every frame.
 *
 * A 1 px sentinel is the last child of the scroller. An IntersectionObserver says whether it is in view
 * (within `slack` px of the bottom). While stuck, the scroller has the class `stuck`, whose CSS rule takes
 * every other child out of scroll anchoring (`overflow-anchor: none`): the sentinel is then the browser's
 * scroll anchor, so content that grows above it keeps the view at the bottom during layout, in the same
 * frame, with no script at all. When the sentinel still leaves the view without the user scrolling (the
 * browser does not anchor at scroll offset 0), the observer's callback, which runs after layout, puts the
 * view back at the bottom; so does a ResizeObserver when the scroller is first laid out or changes size.
 * When the user scrolls (wheel, keys, scrollbar, touch, selection drag) and the sentinel leaves the view,
 * the scroller is no longer stuck: it keeps its position (ordinary scroll anchoring) until the user comes
 * back to the bottom. A restored position is held (`hold`): until it ends, the bottom coming into view is not
 * the user's doing and is not followed.
 */

/** Past the end: browsers clamp scroll offsets, so this reaches the bottom without reading scrollHeight. */
const BOTTOM = Number.MAX_SAFE_INTEGER;
/** How long after an input event a lost sentinel counts as the user's doing. */
const INTENT_MS = 800;
const NAV_KEYS = new Set(['PageUp', 'PageDown', 'ArrowUp', 'ArrowDown', 'Home', 'End', ' ', 'Tab']);

/** When a pointer was last released anywhere (one listener for the page, not one per scroller). */
let lastPointerUp = 0;
let pointerUpListening = false;
function listenPointerUp(): void {
  if (pointerUpListening) return;
  pointerUpListening = true;
  window.addEventListener('pointerup', () => (lastPointerUp = performance.now()), { passive: true, capture: true });
  window.addEventListener('pointercancel', () => (lastPointerUp = performance.now()), { passive: true, capture: true });
}

interface StickOptions {
  /** Distance from the bottom, in px, that still counts as "at the bottom". */
  slack?: number;
  /** Follows the bottom from the start (default true). */
  stuck?: boolean;
  /** Called when the stuck state changes. */
  onChange?: (stuck: boolean) => void;
}

export class StickToBottom {
  readonly sentinel: HTMLElement;
  private stuckNow: boolean;
  private active = true;
  private holding = false;
  private intentUntil = 0;
  /** When a pointer went down in this scroller (a scrollbar drag, a selection that scrolls it). */
  private pointerDownAt = -1;
  private readonly io: IntersectionObserver;
  private readonly ro: ResizeObserver;
  private readonly onChange?: (stuck: boolean) => void;
  private readonly cleanup: (() => void)[] = [];

  constructor(
    readonly scroller: HTMLElement,
    options: StickOptions = {},
  ) {
    this.stuckNow = options.stuck ?? true;
    this.onChange = options.onChange;
    this.sentinel = document.createElement('div');
    this.sentinel.className = 'stick-sentinel';
    this.sentinel.setAttribute('aria-hidden', 'true');
    scroller.append(this.sentinel);
    scroller.classList.add('stick-scroller');
    scroller.classList.toggle('stuck', this.stuckNow);
    this.io = new IntersectionObserver((entries) => this.onIntersect(entries[entries.length - 1]), {
      root: scroller,
      rootMargin: `0px 0px ${options.slack ?? 24}px 0px`,
      threshold: 0,
    });
    this.io.observe(this.sentinel);
    // The scroller got its first layout (it was hidden, or in an offscreen turn) or changed size: back to
    // the bottom before it is painted. Layout is fresh in a ResizeObserver callback.
    this.ro = new ResizeObserver(() => {
      if (this.active && this.stuckNow) this.scroller.scrollTop = BOTTOM;
    });
    this.ro.observe(scroller);

    const intent = () => {
      this.intentUntil = performance.now() + INTENT_MS;
    };
    const listen = (target: EventTarget, type: string, fn: (e: Event) => void) => {
      target.addEventListener(type, fn, { passive: true });
      this.cleanup.push(() => target.removeEventListener(type, fn));
    };
    listen(scroller, 'wheel', intent);
    listen(scroller, 'touchstart', intent);
    listen(scroller, 'touchmove', intent);
    listen(scroller, 'focusin', intent);
    listenPointerUp();
    listen(scroller, 'pointerdown', () => {
      this.pointerDownAt = performance.now();
      intent();
    });
    listen(scroller, 'keydown', (e) => {
      if (NAV_KEYS.has((e as KeyboardEvent).key)) intent();
    });
  }

  /** Whether the view follows the bottom. */
  get stuck(): boolean {
    return this.stuckNow;
  }

  /** Follows the bottom again and goes there (the user asked for the latest). */
  toBottom(): void {
    this.holding = false;
    this.setStuck(true);
    this.scroller.scrollTop = BOTTOM;
  }

  /**
   * Stops following the bottom, and follows it again only when the user scrolls there (or `toBottom`), not
   * when it comes into view by itself: a restored position is held while the turns around it are rendered.
   */
  hold(): void {
    this.holding = true;
    this.setStuck(false);
  }

  /** Ends `hold`: if the bottom is in view now, it is followed (observing again reports where it is). */
  endHold(): void {
    if (!this.holding) return;
    this.holding = false;
    this.io.unobserve(this.sentinel);
    this.io.observe(this.sentinel);
  }

  /** Turns following on or off (a code block follows only while the model writes it). */
  setActive(active: boolean): void {
    if (active === this.active) return;
    this.active = active;
    if (!active) this.setStuck(false);
  }

  dispose(): void {
    this.io.disconnect();
    this.ro.disconnect();
    for (const fn of this.cleanup) fn();
    this.cleanup.length = 0;
  }

  /** Whether the user is scrolling this scroller (an input event a moment ago, or a pointer held in it). */
  userScrolling(): boolean {
    const now = performance.now();
    if (now < this.intentUntil) return true;
    if (this.pointerDownAt < 0) return false;
    // Still pressed, or released a moment ago.
    return this.pointerDownAt > lastPointerUp || now - lastPointerUp < INTENT_MS;
  }

  private onIntersect(entry: IntersectionObserverEntry | undefined): void {
    if (!entry || !this.active) return;
    const r = entry.boundingClientRect;
    // Not laid out (a hidden section, an offscreen turn whose rendering the browser skips): nothing to follow.
    if (!entry.isIntersecting && r.width === 0 && r.height === 0) return;
    if (entry.isIntersecting) {
      if (this.holding && !this.userScrolling()) return;
      this.holding = false;
      this.setStuck(true);
      return;
    }
    if (!this.stuckNow) return;
    if (this.userScrolling()) this.setStuck(false);
    // Lost without the user: layout is fresh here (observers run after it), so this costs no extra layout.
    else this.scroller.scrollTop = BOTTOM;
  }

  private setStuck(stuck: boolean): void {
    if (stuck === this.stuckNow) return;
    this.stuckNow = stuck;
    this.scroller.classList.toggle('stuck', stuck);
    this.onChange?.(stuck);
  }
}
