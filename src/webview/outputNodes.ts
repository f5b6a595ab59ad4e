/**
 * The DOM of an output pane's text (./outputPane), and the way back from a DOM point to the text.
 *
 * The code's stdout and stderr are text from outside: each invisible or bidirectional character in it is
 * drawn as the marker box the rest of the panel draws (./reveal, on ../common/invisibleChars), and never
 * reaches the DOM itself, so it cannot reorder or hide what is around it. Past {@link STYLED_MARKS} boxes
 * in one block the markers are plain text (a bounded DOM), as ./reveal does.
 *
 * Each node drawn remembers which part of the block's text it stands for, so a selection maps back to the
 * text as the code wrote it (what "Copy" gives, as everywhere in the panel): a selection that takes any
 * part of a marker takes its whole character.
 */
import { findInvisibleIn, type InvisibleMark } from '../common/invisibleChars';
import type { Block } from './ansiLines';
import { markElement } from './reveal';

/** Marker boxes in one block; past them, markers are plain text. */
export const STYLED_MARKS = 1_000;

/**
 * What a node stands for in its block's text, `[start, end)`: the text itself (`text`), one marker
 * (`mark`: a box, or its text node), or text with markers in it (`revealed`).
 */
interface Piece {
  start: number;
  end: number;
  kind: 'text' | 'mark' | 'revealed';
}

const pieces = new WeakMap<Node, Piece>();

/** How many marker boxes a block may still draw. */
export interface MarkBudget {
  styled: number;
}

/**
 * The nodes of `b.text` from `from` to `to`: plain text as text nodes, one span per styled range, each of
 * `marks` (the marks of the text in that range, in order) as a marker. A mark that starts in the range is
 * drawn whole.
 */
export function drawText(b: Block, from: number, to: number, marks: readonly InvisibleMark[], budget: MarkBudget): DocumentFragment {
  const frag = document.createDocumentFragment();
  const spans = b.spans;
  let si = 0;
  let mi = 0;
  let pos = from;
  let box: HTMLElement | undefined;
  let boxOf = -1;
  let revealed: Text | undefined;
  while (pos < to) {
    while (si < spans.length && spans[si].end <= pos) si++;
    const sp = spans[si];
    const inSpan = sp !== undefined && sp.start <= pos;
    const limit = Math.min(to, inSpan ? sp.end : (sp?.start ?? to));
    let parent: Node = frag;
    if (inSpan) {
      if (boxOf !== si) {
        box = document.createElement('span');
        if (sp.cls) box.className = sp.cls;
        if (sp.css?.color) box.style.color = sp.css.color;
        if (sp.css?.background) box.style.backgroundColor = sp.css.background;
        frag.append(box);
        boxOf = si;
        revealed = undefined;
      }
      parent = box!;
    } else if (boxOf !== -1) {
      boxOf = -1;
      revealed = undefined;
    }
    const m = marks[mi];
    const end = m && m.index === pos ? m.index + m.length : Math.min(limit, m ? m.index : to);
    const piece: Piece = { start: pos, end, kind: m && m.index === pos ? 'mark' : 'text' };
    const shown = piece.kind === 'mark' ? m.marker : b.text.slice(pos, end);
    if (piece.kind === 'mark') mi++;
    if (piece.kind === 'mark' && budget.styled > 0) {
      budget.styled--;
      const el = markElement(m);
      pieces.set(el, piece);
      parent.appendChild(el);
      revealed = undefined;
    } else if (revealed || (piece.kind === 'mark' && budget.styled <= 0)) {
      // Past the boxes: one text node for the text and its markers, until the style changes.
      if (revealed) {
        revealed.appendData(shown);
        pieces.get(revealed)!.end = end;
      } else {
        revealed = document.createTextNode(shown);
        pieces.set(revealed, { start: pos, end, kind: 'revealed' });
        parent.appendChild(revealed);
      }
    } else {
      const t = document.createTextNode(shown);
      pieces.set(t, piece);
      parent.appendChild(t);
    }
    pos = end;
  }
  return frag;
}

/** The first node at or under `n` that stands for a part of the text. */
function first(n: Node | null): Piece | undefined {
  for (; n; n = n.nextSibling) {
    const p = pieces.get(n) ?? first(n.firstChild);
    if (p) return p;
  }
  return undefined;
}

/** The last node at or under `n` (going back) that stands for a part of the text. */
function last(n: Node | null): Piece | undefined {
  for (; n; n = n.previousSibling) {
    const p = pieces.get(n) ?? last(n.lastChild);
    if (p) return p;
  }
  return undefined;
}

/**
 * The offset in `text` (a block's) of a DOM point inside the block's element `el`: `start` for the start of
 * a selection, else its end. A point inside a marker is before its character at a selection's start and
 * after it at its end, unless the point is at the marker's very edge.
 */
export function textOffset(el: Element, text: string, node: Node, offset: number, start: boolean): number {
  const own = pieces.get(node);
  const boxed = node.nodeType === Node.TEXT_NODE && !own && node.parentNode ? pieces.get(node.parentNode) : undefined;
  const piece = own ?? boxed;
  if (piece && (node.nodeType === Node.TEXT_NODE || piece.kind === 'mark')) {
    const length = node.nodeType === Node.TEXT_NODE ? (node as Text).length : node.childNodes.length;
    if (piece.kind === 'text') return piece.start + offset;
    if (piece.kind === 'mark') return offset === 0 ? piece.start : offset >= length || !start ? piece.end : piece.start;
    return revealedOffset(text, piece, offset, start);
  }
  if (node !== el && !el.contains(node)) return 0;
  const child = node.childNodes[offset] ?? null;
  const after = first(child);
  if (after) return after.start;
  const before = child ? last(child.previousSibling) : last(node.lastChild);
  return before ? before.end : 0;
}

/** The offset in `text` of a point `shown` characters into a node of text with markers in it. */
function revealedOffset(text: string, piece: Piece, shown: number, start: boolean): number {
  let at = piece.start;
  let seen = 0;
  for (const m of findInvisibleIn(text, piece.start, piece.end)) {
    if (seen + (m.index - at) >= shown) return at + (shown - seen);
    seen += m.index - at;
    const width = m.marker.length;
    if (shown < seen + width) return shown === seen || start ? m.index : m.index + m.length;
    seen += width;
    at = m.index + m.length;
  }
  return Math.min(piece.end, at + (shown - seen));
}
