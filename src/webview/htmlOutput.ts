/**
 * HTML outputs (a DataFrame's table, `_repr_html_`, a pandas Styler) under a strict DOMPurify profile: only
 * table, structure and text elements, no attributes but `colspan`/`rowspan`/`span`/`title`, no `style`
 * (a `text-align` becomes one of our own classes), no `class` or `id` of the page's, no links, images, forms,
 * frames, scripts or styles, nothing that loads anything. It runs on its own DOMPurify instance (the
 * markdown pipeline's is configured differently). Bounded: at most `HTML_ROW_CAP` body rows per table ("N more
 * rows" under it) and `HTML_ELEMENT_CAP` elements in all; the parse happens in an inert document, and the
 * rows and elements past the caps are dropped before anything walks them.
 */
import DOMPurify from 'dompurify';
import { formatCount, h } from './dom';
import { revealTextNodes } from './reveal';

/** Body rows rendered per table. */
const HTML_ROW_CAP = 200;
/** Elements rendered per output. */
const HTML_ELEMENT_CAP = 20_000;
/** Characters of HTML parsed at most (the host caps a display at a few MB already). */
const HTML_CHAR_CAP = 4 * 1024 * 1024;

const TAGS = [
  'table',
  'thead',
  'tbody',
  'tfoot',
  'tr',
  'th',
  'td',
  'caption',
  'colgroup',
  'col',
  'p',
  'div',
  'span',
  'br',
  'b',
  'i',
  'strong',
  'em',
  'code',
  'pre',
  'small',
  'sub',
  'sup',
  'ul',
  'ol',
  'li',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
];
const ATTRS = ['colspan', 'rowspan', 'span', 'title'];

const purify = DOMPurify(window);
purify.setConfig({
  ALLOWED_TAGS: TAGS,
  ALLOWED_ATTR: ATTRS,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  ALLOW_UNKNOWN_PROTOCOLS: false,
  KEEP_CONTENT: true,
  ADD_FORBID_CONTENTS: ['ca-style'],
  // The fragment of the inert document DOMPurify parsed into: the nodes its hooks saw (see `rowsCut`).
  RETURN_DOM_FRAGMENT: true,
});

/** What one sanitize call counted (the hooks run synchronously inside it). */
interface Run {
  elements: number;
  cut: boolean;
  /** Body rows kept and dropped per table. */
  rows: Map<Element, { kept: number; dropped: number }>;
  align: WeakMap<Element, string>;
}
let run: Run | undefined;

const ALIGN = /(?:^|;)\s*text-align\s*:\s*(left|right|center)\s*(?:!important\s*)?(?:;|$)/i;

// "before" hooks only: DOMPurify copies its allowlists for every node when "upon" hooks exist.
purify.addHook('beforeSanitizeElements', (node) => {
  if (!run || node.nodeType !== 1) return;
  const el = node as Element;
  if (++run.elements > HTML_ELEMENT_CAP) {
    run.cut = true;
    el.remove();
    return;
  }
  if (el.nodeName !== 'TR') return;
  const table = el.closest('table');
  if (!table || el.parentElement?.nodeName === 'THEAD') return;
  let count = run.rows.get(table);
  if (!count) run.rows.set(table, (count = { kept: 0, dropped: 0 }));
  if (count.kept >= HTML_ROW_CAP) {
    count.dropped++;
    run.elements--;
    // Detached: its cells are never walked.
    el.remove();
  } else count.kept++;
});

/** `text-align` of a `style` (renamed by `neutraliseInline`) or an `align`, remembered before attributes go. */
purify.addHook('beforeSanitizeAttributes', (node) => {
  if (!run || node.nodeType !== 1) return;
  const el = node as Element;
  const style = el.getAttribute(STYLE_ATTR) ?? el.getAttribute('style');
  const align = el.getAttribute('align');
  const m = align !== null ? /^\s*(left|right|center)\s*$/i.exec(align.slice(0, 100)) : style !== null ? ALIGN.exec(style.slice(0, 2000)) : null;
  if (m) run.align.set(el, m[1].toLowerCase());
});

purify.addHook('afterSanitizeAttributes', (node) => {
  const align = run?.align.get(node as Element);
  // Our class only, after every attribute of the input (its own `class` included) was dropped.
  if (align) (node as Element).setAttribute('class', `ca-align-${align}`);
});

const STYLE_ATTR = 'data-ca-style';

/**
 * The HTML with its `style` and `on*` attributes renamed (`data-ca-…`) and `<style>` elements renamed
 * (`<ca-style>`), in one linear pass over the start and end tags. Not a sanitiser (DOMPurify is): the page's
 * Content Security Policy also applies to the inert document DOMPurify parses into, and without this every
 * DataFrame (`<tr style="text-align: right;">`) would log a blocked inline style.
 */
function neutraliseInline(html: string): string {
  const n = html.length;
  const parts: string[] = [];
  let copied = 0;
  const isSpace = (c: string) => c === ' ' || c === '\n' || c === '\t' || c === '\f' || c === '\r';
  const rename = (from: number, to: number, name: string) => {
    parts.push(html.slice(copied, from), name);
    copied = to;
  };
  let i = html.indexOf('<');
  while (i >= 0 && i < n) {
    let j = i + 1;
    const end = html[j] === '/';
    if (end) j++;
    if (!/[A-Za-z]/.test(html[j] ?? '')) {
      i = html.indexOf('<', i + 1);
      continue;
    }
    const nameStart = j;
    while (j < n && !isSpace(html[j]) && html[j] !== '/' && html[j] !== '>') j++;
    if (html.slice(nameStart, j).toLowerCase() === 'style') rename(nameStart, j, 'ca-style');
    // Attributes, up to the end of the tag.
    while (j < n && html[j] !== '>') {
      if (isSpace(html[j]) || html[j] === '/') {
        j++;
        continue;
      }
      const a = j;
      while (j < n && !isSpace(html[j]) && html[j] !== '/' && html[j] !== '>' && (html[j] !== '=' || j === a)) j++;
      const attr = html.slice(a, j).toLowerCase();
      if (!end && (attr === 'style' || attr.startsWith('on'))) rename(a, j, attr === 'style' ? STYLE_ATTR : `data-ca-${attr}`);
      while (j < n && isSpace(html[j])) j++;
      if (html[j] !== '=') continue;
      j++;
      while (j < n && isSpace(html[j])) j++;
      const q = html[j];
      if (q === '"' || q === "'") {
        const close = html.indexOf(q, j + 1);
        j = close < 0 ? n : close + 1;
      } else while (j < n && !isSpace(html[j]) && html[j] !== '>') j++;
    }
    i = j < n ? html.indexOf('<', j + 1) : -1;
  }
  if (!parts.length) return html;
  parts.push(html.slice(copied));
  return parts.join('');
}

/** Sanitised DOM for untrusted HTML, with the row notes; `cut` when the element cap dropped the rest. */
function sanitizeHtml(html: string): { fragment: DocumentFragment; cut: boolean; rowsDropped: number } {
  const r: Run = { elements: 0, cut: false, rows: new Map(), align: new WeakMap() };
  run = r;
  let fragment: DocumentFragment;
  try {
    fragment = purify.sanitize(neutraliseInline(html.length > HTML_CHAR_CAP ? html.slice(0, HTML_CHAR_CAP) : html)) as unknown as DocumentFragment;
  } finally {
    run = undefined;
  }
  let rowsDropped = 0;
  for (const [table, count] of r.rows) {
    if (!count.dropped || !fragment.contains(table)) continue;
    rowsDropped += count.dropped;
    table.after(h('div', { class: 'html-more', text: `${formatCount(count.dropped)} more ${count.dropped === 1 ? 'row' : 'rows'} not shown` }));
  }
  return { fragment, cut: r.cut || html.length > HTML_CHAR_CAP, rowsDropped };
}

/** How tall a table of this HTML will be, roughly (its rows, to the box's max height): the placeholder's height. */
function estimateHeight(html: string): number {
  let rows = 0;
  for (let i = html.indexOf('<tr'); i >= 0 && rows < HTML_ROW_CAP; i = html.indexOf('<tr', i + 3)) rows++;
  return rows ? Math.min(420, 30 + rows * 22) : 40;
}

let observer: IntersectionObserver | undefined;
const pending = new WeakMap<Element, () => void>();

/** Draws placeholders that come within a screen of the view (scroll containers' clips widened too). */
function nearView(): IntersectionObserver {
  observer ??= new IntersectionObserver(
    (entries) => {
      for (const e of entries) {
        if (!e.isIntersecting && e.target.isConnected) continue;
        observer!.unobserve(e.target);
        const draw = pending.get(e.target);
        pending.delete(e.target);
        if (e.target.isConnected) draw?.();
      }
    },
    { rootMargin: '100% 0px', scrollMargin: '100% 0px' } as IntersectionObserverInit,
  );
  return observer;
}

/**
 * An HTML output drawn when it comes near the view: sanitising a table is the costliest part of a card, and a
 * reopened conversation or a turn with several tables then spends it only on those the user can see. Until
 * then, a box of about the table's height.
 */
export function lazyHtmlOutput(html: string): HTMLElement {
  const box = h('div', { class: 'html-output html-pending', role: 'group', 'aria-label': 'HTML output', 'aria-busy': 'true' });
  // Through CSSOM (the page's CSP refuses style attributes, not this).
  box.style.height = `${estimateHeight(html)}px`;
  pending.set(box, () => box.replaceWith(renderHtmlOutput(html)));
  nearView().observe(box);
  return box;
}

/** An HTML output in its own box: it scrolls sideways (and down, past a height), headers stick. */
function renderHtmlOutput(html: string): HTMLElement {
  const { fragment, cut } = sanitizeHtml(html);
  const box = h('div', { class: 'html-output', tabindex: '0', role: 'group', 'aria-label': 'HTML output' });
  // The code's words in its HTML: invisible and bidirectional characters as marker boxes (./reveal).
  revealTextNodes(fragment);
  box.append(fragment);
  if (cut) box.append(h('div', { class: 'html-more', text: 'The rest of this output is not shown (it is too large).' }));
  return box;
}
