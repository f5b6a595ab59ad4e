/**
 * Invisible and bidirectional characters made visible in the panel (the classifier is
 * ../common/invisibleChars, shared with the CLI): each one is replaced by a marker, `<U+202E>`, drawn as a
 * small outlined box (bidi controls in the error colour, the others in the warning colour) with its name
 * as a tooltip. The character itself never reaches the DOM, so it cannot reorder or hide what is around
 * it; what is copied or sent (Copy, Insert, Run) is still the text as it was.
 */
import { findInvisible, hasInvisible, revealInvisible, type InvisibleMark } from '../common/invisibleChars';
import { forDisplay, lineBreaksShown, type ShowOptions } from '../common/untrusted';

export { countInvisible } from '../common/invisibleChars';

function markClass(m: InvisibleMark): string {
  return m.kind === 'bidi' ? 'uc-mark uc-bidi' : 'uc-mark';
}

/** One marker box. */
export function markElement(m: InvisibleMark): HTMLElement {
  const el = document.createElement('span');
  el.className = markClass(m);
  el.title = m.title;
  el.textContent = m.marker;
  return el;
}

/** Marks of one text drawn as styled boxes; past them the markers are plain text (a bounded DOM). */
const STYLED_MARKS = 1_000;

/**
 * `text` as DOM: the text itself when it has nothing to reveal, else text nodes and marker boxes.
 * `{ line: true }` for a name, a title or a label: its line breaks are shown as `⏎` (../common/untrusted).
 */
export function revealed(raw: string, options?: ShowOptions): string | DocumentFragment {
  const text = lineBreaksShown(raw, options);
  const marks = findInvisible(text, STYLED_MARKS + 1);
  if (!marks.length) return text;
  const frag = document.createDocumentFragment();
  let at = 0;
  for (const m of marks.slice(0, STYLED_MARKS)) {
    if (m.index > at) frag.append(document.createTextNode(text.slice(at, m.index)));
    frag.append(markElement(m));
    at = m.index + m.length;
  }
  if (at < text.length) frag.append(document.createTextNode(revealInvisible(text.slice(at))));
  return frag;
}

/** Sets `el`'s text to `text`, revealed. */
export function setRevealed(el: Element, text: string, options?: ShowOptions): void {
  el.textContent = '';
  el.append(revealed(text, options));
}

/** The text each element was last given through {@link updateRevealed}. */
const lastRevealed = new WeakMap<Element, string>();

/** {@link setRevealed}, only when `text` differs from what `el` was last given here (no needless layout work). */
export function updateRevealed(el: Element, text: string, options?: ShowOptions): void {
  if (lastRevealed.get(el) === text && el.firstChild) return;
  lastRevealed.set(el, text);
  setRevealed(el, text, options);
}

/** The text each element was last given through {@link growRevealed}. */
const grown = new WeakMap<Element, string>();

/**
 * {@link setRevealed} for text that grows at the end (a streamed block): when `text` only extends what `el`
 * was last given here, only the new part is revealed and appended (into the last text node when it has no
 * marker), so a long stream costs what it adds. A CR or a high surrogate at the old end may pair with what
 * follows: then the whole is drawn again.
 */
export function growRevealed(el: Element, text: string): void {
  const old = grown.get(el);
  grown.set(el, text);
  if (old !== undefined && text.startsWith(old) && !/[\r\ud800-\udbff]$/.test(old)) {
    if (text.length === old.length) return;
    const rest = revealed(text.slice(old.length));
    const last = el.lastChild;
    if (typeof rest === 'string') {
      if (last instanceof Text) last.appendData(rest);
      else el.append(rest);
      return;
    }
    // The text before the first marker joins the last text node.
    if (last instanceof Text && rest.firstChild instanceof Text) {
      last.appendData(rest.firstChild.data);
      rest.firstChild.remove();
    }
    el.append(rest);
    return;
  }
  setRevealed(el, text);
}

/**
 * Reveals in place every text node under `root` that holds an invisible or bidirectional character (HTML
 * made from outside text: rendered markdown's paragraphs, inline code, link text), and the tooltips and
 * alternative texts there. Linear: each text node is scanned once; nodes without such a character stay.
 */
export function revealTextNodes(root: Node): void {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const found: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (hasInvisible((n as Text).data)) found.push(n as Text);
  for (const t of found) t.replaceWith(revealed(t.data));
  if (!('querySelectorAll' in root)) return;
  for (const el of Array.from((root as ParentNode).querySelectorAll('[title], [alt]')))
    for (const name of ['title', 'alt']) {
      const v = el.getAttribute(name);
      if (v && hasInvisible(v)) el.setAttribute(name, forDisplay(v));
    }
}

const ATTR_ESCAPE = /[&<>"']/g;
const escapeAttr = (s: string) => s.replace(ATTR_ESCAPE, (c) => `&#${c.charCodeAt(0)};`);

/**
 * HTML whose text may hold invisible characters (the highlighter's output: escaped text in spans with
 * class names, no attribute holds text), with each one replaced by a marker box.
 */
export function revealHtml(html: string): string {
  const marks = findInvisible(html);
  if (!marks.length) return html;
  let out = '';
  let at = 0;
  for (const m of marks) {
    out += html.slice(at, m.index) + `<span class="${markClass(m)}" title="${escapeAttr(m.title)}">&lt;${m.marker.slice(1, -1)}&gt;</span>`;
    at = m.index + m.length;
  }
  return out + html.slice(at);
}

/** For attributes (title, aria-label) and announcements, which cannot hold a styled box: ../common/untrusted's forDisplay. */
export const revealedPlain = forDisplay;
