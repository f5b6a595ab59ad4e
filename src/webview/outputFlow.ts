/**
 * An execution's output as it happened: text, a display, text (print, plot, print). Without displays it is
 * the one virtualised pane it always was: a flood of text is still one pane, fed from the tail as before. A
 * display cuts the text: the pane before it, the display, a pane after it (made when text comes). Panes hold
 * the text of their stretch only while the model's tail still has it; a stretch the tail dropped goes, so the
 * page holds about what the model holds. Displays are drawn once, and again only when an update replaced one
 * (`update_display_data`), where it stands.
 */
import type { DisplayView, ExecView } from '../common/transcript';
import { formatCount, h, setText } from './dom';
import { isImageDisplay, renderDisplay } from './displayView';
import type { ImageEnv } from './imageOutput';
import { OutputPane } from './outputPane';
import { revealed } from './reveal';

interface Shown {
  el: HTMLElement;
  rev: number;
  /** Its number among the execution's images (for "plot-3.png"), 0 when it is not one. */
  image: number;
}

export class OutputFlow {
  readonly el: HTMLElement;
  /** The first stretch of text: the whole output when there are no displays. */
  first: OutputPane;
  /** Panes by stretch (0: before the first display, k: after display k-1); undefined until text comes. */
  private readonly panes: (OutputPane | undefined)[] = [];
  private readonly shown: Shown[] = [];
  private images = 0;
  /** Stretches before this one were dropped by the tail and removed. */
  private gone = 0;
  private more: HTMLElement | undefined;
  private hasDisplays = false;
  /** Text given to the panes so far, as an offset in all the output (`totalChars`). */
  private fed = 0;
  /** The stretch `fed` falls in (displays only come after the text so far). */
  private cursor = 0;

  constructor(private readonly env: ImageEnv) {
    this.first = new OutputPane();
    this.first.pre.setAttribute('aria-label', 'Output');
    this.panes[0] = this.first;
    this.el = h('div', { class: 'output-flow' }, this.first.el);
  }

  /** Nothing to show yet. */
  isEmpty(x: ExecView): boolean {
    return x.output.totalChars === 0 && this.first.isEmpty && !(x.displays?.length || x.displaysDropped);
  }

  /** Lines of text the panel no longer holds (only "Open full output" has them). */
  hiddenLines(x: ExecView): number {
    return this.hasDisplays ? Math.max(0, x.output.totalLines - x.output.lines) : this.first.hiddenLines;
  }

  /** Every line of text held, in order. */
  text(): string {
    return this.panes.map((p) => (p ? p.text() : '')).join('');
  }

  sync(x: ExecView): void {
    const displays = x.displays ?? [];
    if (!displays.length && !x.displaysDropped) {
      this.first.sync(x.output);
      this.first.el.hidden = false;
      return;
    }
    this.hasDisplays = true;
    // Displays that stand before text already shown (a finished item's, after live text): split again.
    for (let i = this.shown.length; i < displays.length; i++) {
      if (displays[i].at >= this.fed) continue;
      this.restart();
      break;
    }
    this.syncDisplays(displays);
    this.syncText(x, displays);
    this.syncMore(x.displaysDropped ?? 0);
  }

  private syncDisplays(displays: readonly DisplayView[]): void {
    for (let i = 0; i < displays.length; i++) {
      const d = displays[i];
      const s = this.shown[i];
      if (s && s.rev === d.rev) continue;
      const image = s ? s.image : isImageDisplay(d.output) ? ++this.images : 0;
      let el: HTMLElement;
      try {
        el = renderDisplay(d.output, image, this.env);
      } catch (err) {
        el = h('div', { class: 'display display-note' }, revealed(`This output could not be shown: ${err instanceof Error ? err.message : String(err)}`));
      }
      el.dataset.display = String(i);
      if (s) s.el.replaceWith(el);
      else this.el.insertBefore(el, this.more ?? null);
      this.shown[i] = { el, rev: d.rev, image };
    }
  }

  /** Feeds each stretch of text to its pane; removes the stretches the tail no longer has. */
  private syncText(x: ExecView, displays: readonly DisplayView[]): void {
    const tail = x.output;
    const held = tail.totalChars - tail.chars;
    const n = displays.length;
    const to = (k: number) => (k < n ? displays[k].at : Infinity);
    while (this.gone < n && to(this.gone) <= held) {
      const p = this.panes[this.gone];
      if (p) {
        p.el.remove();
        this.panes[this.gone] = undefined;
      }
      this.gone++;
    }
    // Text only grows at the end: what is new starts where the last sync stopped (or where the tail starts).
    let pos = Math.max(this.fed, held);
    let k = Math.max(this.gone, this.stretchOf(displays, pos));
    while (pos < tail.totalChars) {
      const end = Math.min(to(k), tail.totalChars);
      if (end > pos) {
        this.pane(k).syncRange(tail, k === 0 ? 0 : displays[k - 1].at, to(k));
        pos = end;
      }
      if (k >= n) break;
      k++;
    }
    this.fed = tail.totalChars;
    this.first.el.hidden = this.first.isEmpty;
  }

  /** Drops the panes, to cut the text again from the tail. */
  private restart(): void {
    for (const p of this.panes) p?.el.remove();
    this.panes.length = 0;
    this.first = new OutputPane();
    this.first.pre.setAttribute('aria-label', 'Output');
    this.panes[0] = this.first;
    this.el.prepend(this.first.el);
    this.fed = 0;
    this.cursor = 0;
    this.gone = 0;
  }

  /** The stretch position `pos` of the text falls in: the number of displays at or before it. */
  private stretchOf(displays: readonly DisplayView[], pos: number): number {
    let k = Math.min(this.cursor, displays.length);
    while (k < displays.length && displays[k].at <= pos) k++;
    this.cursor = k;
    return k;
  }

  /** Stretch `k`'s pane, made (before display `k`) when its first text comes. */
  private pane(k: number): OutputPane {
    let pane = this.panes[k];
    if (!pane) {
      pane = new OutputPane();
      pane.pre.setAttribute('aria-label', 'Output');
      this.panes[k] = pane;
      this.el.insertBefore(pane.el, this.shown[k]?.el ?? this.more ?? null);
    }
    return pane;
  }

  private syncMore(dropped: number): void {
    if (!dropped) return;
    if (!this.more) {
      this.more = h('div', { class: 'outputs-more', role: 'note' });
      this.el.append(this.more);
    }
    setText(
      this.more,
      `${formatCount(dropped)} more ${dropped === 1 ? 'output' : 'outputs'} not shown (an execution keeps ${formatCount(this.shown.length)}).`,
    );
  }
}
