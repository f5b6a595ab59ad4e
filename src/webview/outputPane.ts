/**
 * Live stdout/stderr of an execution, virtualised. The text (ANSI colours, carriage-return progress lines)
 * lives in `OutputLines`, in blocks of 32 lines. Only the blocks in or near view hold their text in the DOM;
 * the others are empty placeholders with the height they had (or their line count times the line height).
 * What is near view comes from an IntersectionObserver. While the pane follows its bottom (`StickToBottom`)
 * the last lines are shown without asking, and the blocks above them are not even elements: one spacer
 * stands for them, so a program printing thousands of lines a frame costs a few elements a frame. Nothing
 * here reads layout on the frame path.
 *
 * Text stays selectable and copyable: the blocks holding the ends of a selection are kept, and copying a
 * selection inside one pane (or Ctrl+A in the focused pane, then copy) gives the text of every line in
 * between, shown or not; "Copy output" copies all of it. The model keeps the tail of the output; the whole
 * of it is behind "Open full output".
 *
 * Invisible and bidirectional characters are drawn as marker boxes (./outputNodes), and a selection still
 * copies the text as the code wrote it. What is in the DOM for good is never drawn again: a paint draws
 * what came since the last, and redraws only the end of the open line that may still change (a run of
 * one invisible character, half a surrogate pair) or that a carriage return overwrote.
 */
import type { StreamName } from '../common/events';
import { OUTPUT_TAIL_MAX_CHARS, OUTPUT_TAIL_MAX_LINES, tailSlice, type OutputTail } from '../common/transcript';
import { OutputLines, blockLines, type Block } from './ansiLines';
import { StickToBottom } from './scrollAnchor';
import { drawText, textOffset, STYLED_MARKS, type MarkBudget } from './outputNodes';
import { findInvisibleIn, settledEnd } from '../common/invisibleChars';

/** Rows a pane shows at most (styles.css sets its max-height to this many line heights). */
const OUTPUT_ROWS = 16;

interface BlockView {
  block: Block;
  el: HTMLElement;
  rendered: boolean;
  rev: number;
  /** Characters of the text in the DOM for good (complete lines, and the settled part of the open line). */
  shown: number;
  /** The open line's start when last painted, its settled nodes (gone if a carriage return overwrites it). */
  lineStart: number;
  lineNodes: Node[];
  /** `block.cut` when last painted. */
  cut: number;
  /** Nodes of the end of the open line that may still change (./outputNodes: a marker's run, a surrogate pair). */
  openNodes: Node[];
  /** Marker boxes the block may still draw, and could when the open line started. */
  budget: MarkBudget;
  lineBudget: number;
  visible: boolean;
  /** Watched by the observers (only while the pane is scrolled up: at the bottom, the tail is shown anyway). */
  observed: boolean;
  pinned: boolean;
  /** The placeholder height last set. */
  height: string;
}

const paneOf = new WeakMap<Element, OutputPane>();

export class OutputPane {
  readonly el: HTMLElement;
  readonly pre: HTMLElement;
  private readonly lines: OutputLines;
  private readonly views = new WeakMap<Block, BlockView>();
  private readonly byEl = new WeakMap<Element, BlockView>();
  /** Heights of blocks as last laid out with their text (ResizeObserver), for placeholders. */
  private readonly measured = new WeakMap<Block, { px: number; rev: number }>();
  private readonly stick: StickToBottom;
  private readonly io: IntersectionObserver;
  private readonly ro: ResizeObserver;
  /** Stands for the first `front` blocks, which have no element. */
  private readonly spacer: HTMLElement;
  private front = 0;
  private spacerHeight = '';
  private pins: BlockView[] = [];
  private taken = 0;
  private full = false;
  /** Lines the model holds in total, including those no longer shown. */
  totalLines = 0;

  constructor(maxLines = OUTPUT_TAIL_MAX_LINES, maxChars = OUTPUT_TAIL_MAX_CHARS) {
    this.el = document.createElement('div');
    this.el.className = 'output-pane';
    this.pre = document.createElement('pre');
    this.pre.className = 'output';
    this.pre.setAttribute('tabindex', '0');
    this.spacer = document.createElement('div');
    this.spacer.className = 'out-spacer';
    this.pre.append(this.spacer);
    this.el.append(this.pre);
    paneOf.set(this.pre, this);
    installDocumentHandlers();
    this.lines = new OutputLines(maxLines, maxChars, (b) => this.dropped(b));
    this.stick = new StickToBottom(this.pre, { slack: 8, onChange: () => this.render() });
    this.io = new IntersectionObserver((entries) => this.onVisibility(entries), { root: this.pre, rootMargin: '50% 0px', threshold: 0 });
    this.ro = new ResizeObserver((entries) => {
      for (const e of entries) {
        const v = this.byEl.get(e.target);
        const size = e.borderBoxSize?.[0];
        if (v?.rendered && size && size.blockSize > 0) this.measured.set(v.block, { px: size.blockSize, rev: v.block.rev });
      }
    });
    this.pre.addEventListener('keydown', (e) => {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === 'a') {
        e.preventDefault();
        document.getSelection()?.selectAllChildren(this.pre);
      }
    });
  }

  /** Lines received but no longer held (only "Open full output" has them). */
  get hiddenLines(): number {
    return Math.max(0, this.totalLines - this.lines.lines);
  }

  get isEmpty(): boolean {
    return this.taken === 0;
  }

  /** Takes what the tail holds beyond what was already taken. Returns true when something changed. */
  sync(tail: OutputTail): boolean {
    const fresh = tail.totalChars - this.taken;
    if (fresh === 0) return false;
    if (fresh < 0 || fresh > tail.chars) {
      // The model dropped text we never took, or started over: rebuild from the tail.
      this.lines.clear();
      for (const c of tail.chunks) this.lines.write(c.stream, c.text);
    } else {
      for (const c of tailSlice(tail, fresh)) this.lines.write(c.stream, c.text);
    }
    this.taken = tail.totalChars;
    this.totalLines = tail.totalLines;
    this.lines.trim();
    this.render();
    return true;
  }

  /**
   * Takes the part of the tail's text between the absolute offsets `from` and `to` (counted in all the
   * output ever appended, as `totalChars`) beyond what it took: the text between two displays. Returns true
   * when something changed.
   */
  syncRange(tail: OutputTail, from: number, to: number): boolean {
    const end = Math.min(to, tail.totalChars);
    const pos = Math.max(this.taken, from, tail.totalChars - tail.chars);
    if (pos >= end) return false;
    let need = end - pos;
    for (const c of tailSlice(tail, tail.totalChars - pos)) {
      if (need <= 0) break;
      const text = c.text.length <= need ? c.text : c.text.slice(0, need);
      this.lines.write(c.stream, text);
      need -= text.length;
    }
    this.taken = end;
    this.lines.trim();
    this.render();
    return true;
  }

  /** Appends raw text of one stream and shows it (a pane not fed from the model: the traceback). */
  write(stream: StreamName, raw: string): void {
    this.lines.write(stream, raw);
    this.taken += raw.length;
    this.lines.trim();
    this.render();
  }

  /** The plain text of every line the pane holds (shown or not). */
  text(): string {
    return this.lines.text();
  }

  /** The plain text between two DOM points of this pane (a selection), with the lines not shown in between. */
  textBetween(startNode: Node, startOffset: number, endNode: Node, endOffset: number): string {
    const a = this.position(startNode, startOffset, true);
    const b = this.position(endNode, endOffset, false);
    const blocks = this.lines.blocks;
    if (a.i > b.i || (a.i === b.i && a.o >= b.o)) return '';
    let out = '';
    for (let i = Math.max(0, a.i); i <= b.i && i < blocks.length; i++) {
      const t = blocks[i].text;
      out += t.slice(i === a.i ? a.o : 0, i === b.i ? b.o : t.length);
    }
    return out;
  }

  /** Keeps the blocks holding these nodes (the ends of a selection) in the DOM. */
  pinNodes(nodes: Node[]): void {
    const next: BlockView[] = [];
    for (const n of nodes) {
      const v = this.viewAt(n);
      if (v && !next.includes(v)) next.push(v);
    }
    if (next.length === this.pins.length && next.every((v) => this.pins.includes(v))) return;
    for (const v of this.pins) v.pinned = false;
    for (const v of next) v.pinned = true;
    this.pins = next;
    this.render();
  }

  /** Brings the DOM in line with the text: shows the blocks that should be shown, empties the others. */
  private render(): void {
    const blocks = this.lines.blocks;
    const n = blocks.length;
    // With at least as many lines as rows the pane is at its full height whatever the text: a fixed size
    // lets the browser lay out and paint the pane on its own, not the card and the transcript around it.
    if (!this.full && this.lines.lines >= OUTPUT_ROWS) {
      this.full = true;
      this.pre.classList.add('full');
    }
    const stuck = this.stick.stuck;
    // At the bottom: the last block and, when it has fewer lines than the pane has rows, the one before.
    const tailFrom = n >= 2 && blockLines(blocks[n - 1]) < OUTPUT_ROWS + 1 ? n - 2 : n - 1;
    // Blocks before `front` live in the spacer: at the bottom, all but the tail and the pinned ones;
    // scrolled up, none (each block needs its own element for the observer to say what is in view).
    let front = 0;
    if (stuck) {
      front = Math.max(0, tailFrom);
      for (const v of this.pins) front = Math.min(front, blocks.indexOf(v.block));
      front = Math.max(0, front);
    }
    this.setFront(front);
    for (let i = this.front; i < n; i++) {
      const b = blocks[i];
      const v = this.views.get(b) ?? this.create(b);
      if (!stuck && !v.observed) this.observe(v);
      const want = v.visible || v.pinned || (stuck && i >= tailFrom);
      if (want) {
        if (!v.rendered || v.rev !== b.rev) this.paint(v);
      } else if (v.rendered) {
        this.evict(v);
      } else {
        this.setHeight(v);
      }
    }
  }

  /** Moves blocks between the spacer and elements of their own. */
  private setFront(front: number): void {
    const blocks = this.lines.blocks;
    if (front < this.front) {
      // Give blocks back their elements, in order, right after the spacer.
      const els: HTMLElement[] = [];
      for (let i = front; i < this.front; i++) els.push(this.create(blocks[i], false).el);
      this.spacer.after(...els);
    } else {
      for (let i = this.front; i < front; i++) this.removeView(blocks[i]);
    }
    this.front = front;
    let px = 0;
    let rows = 0;
    for (let i = 0; i < front; i++) {
      const m = this.measured.get(blocks[i]);
      if (m && m.rev === blocks[i].rev) px += m.px;
      else rows += blockLines(blocks[i]);
    }
    const height = px || rows ? `calc(${px}px + ${rows} * 1lh)` : '';
    if (height !== this.spacerHeight) {
      this.spacerHeight = height;
      this.spacer.style.height = height;
    }
  }

  private create(b: Block, append = true): BlockView {
    const el = document.createElement('div');
    el.className = 'out-blk';
    const v: BlockView = {
      block: b,
      el,
      rendered: false,
      rev: -1,
      shown: 0,
      lineStart: 0,
      lineNodes: [],
      cut: b.cut,
      openNodes: [],
      budget: { styled: STYLED_MARKS },
      lineBudget: STYLED_MARKS,
      visible: false,
      observed: false,
      pinned: false,
      height: '',
    };
    this.views.set(b, v);
    this.byEl.set(el, v);
    this.setHeight(v);
    if (append) this.pre.insertBefore(el, this.stick.sentinel);
    return v;
  }

  /** What is in view (IntersectionObserver) and how tall shown blocks are (ResizeObserver, for placeholders). */
  private observe(v: BlockView): void {
    v.observed = true;
    this.io.observe(v.el);
    if (v.rendered) this.ro.observe(v.el);
  }

  /**
   * Adds what the block gained since it was last painted: text in the DOM for good is never drawn twice,
   * so a long line streamed in many chunks costs its length, not its length times its chunks.
   */
  private paint(v: BlockView): void {
    const b = v.block;
    if (!v.rendered) {
      v.el.textContent = '';
      v.el.style.height = '';
      v.height = '';
      v.shown = v.lineStart = 0;
      v.lineNodes = [];
      v.openNodes = [];
      v.cut = b.cut;
      v.budget = { styled: STYLED_MARKS };
      v.lineBudget = STYLED_MARKS;
      v.rendered = true;
      if (v.observed) this.ro.observe(v.el);
    }
    for (const node of v.openNodes) node.parentNode?.removeChild(node);
    v.openNodes = [];
    if (v.cut !== b.cut) {
      // A carriage return overwrote the open line: what was drawn of it from where it started goes.
      for (const node of v.lineNodes) node.parentNode?.removeChild(node);
      v.lineNodes = [];
      v.shown = v.lineStart;
      v.budget.styled = v.lineBudget;
      v.cut = b.cut;
    }
    const marks = findInvisibleIn(b.text, v.shown, b.text.length);
    const settled = settledEnd(b.text, marks[marks.length - 1]);
    let m = 0;
    const draw = (to: number, budget = v.budget): DocumentFragment => {
      const from = m;
      while (m < marks.length && marks[m].index < to) m++;
      const frag = drawText(b, v.shown, to, marks.slice(from, m), budget);
      v.shown = to;
      return frag;
    };
    if (v.shown < b.open) {
      // Lines completed: drawn for good; the open line starts anew.
      v.el.append(draw(b.open));
      v.lineStart = b.open;
      v.lineNodes = [];
      v.lineBudget = v.budget.styled;
    }
    if (v.shown < settled) {
      const frag = draw(settled);
      v.lineNodes.push(...frag.childNodes);
      v.el.append(frag);
    }
    // The unsettled end, drawn until the next paint (a half of a surrogate pair waits for the other).
    const end = b.text.length - (settled < b.text.length && isHighSurrogate(b.text.charCodeAt(b.text.length - 1)) ? 1 : 0);
    if (end > settled) {
      const frag = draw(end, { ...v.budget });
      v.shown = settled;
      v.openNodes = Array.from(frag.childNodes);
      v.el.append(frag);
    }
    v.rev = b.rev;
  }

  private evict(v: BlockView): void {
    this.ro.unobserve(v.el);
    v.rendered = false;
    v.openNodes = [];
    v.lineNodes = [];
    v.el.textContent = '';
    this.setHeight(v);
  }

  /** A placeholder's height: as measured with its text, or its line count times the line height. */
  private setHeight(v: BlockView): void {
    const m = this.measured.get(v.block);
    const height = m && m.rev === v.block.rev ? `${m.px}px` : `calc(${blockLines(v.block)} * 1lh)`;
    if (height !== v.height) {
      v.height = height;
      v.el.style.height = height;
    }
  }

  private removeView(b: Block): void {
    const v = this.views.get(b);
    if (!v) return;
    this.io.unobserve(v.el);
    this.ro.unobserve(v.el);
    v.el.remove();
    if (v.pinned) this.pins = this.pins.filter((x) => x !== v);
    this.views.delete(b);
  }

  /** A block trimmed from the front: its element goes, or it leaves the spacer. */
  private dropped(b: Block): void {
    if (this.views.has(b)) this.removeView(b);
    else if (this.front > 0) this.front--;
  }

  private onVisibility(entries: IntersectionObserverEntry[]): void {
    for (const e of entries) {
      const v = this.byEl.get(e.target);
      if (v) v.visible = e.isIntersecting;
    }
    this.render();
  }

  private viewAt(node: Node): BlockView | undefined {
    const el = (node.nodeType === Node.ELEMENT_NODE ? (node as Element) : node.parentElement)?.closest('.out-blk');
    return el ? this.byEl.get(el) : undefined;
  }

  /** A DOM point of this pane as (block index, character offset in the block's text); `start`: a selection's start. */
  private position(node: Node, offset: number, start: boolean): { i: number; o: number } {
    const blocks = this.lines.blocks;
    const last = blocks.length - 1;
    const end = { i: last, o: last >= 0 ? blocks[last].text.length : 0 };
    if (node === this.pre) {
      const child = this.pre.childNodes[offset];
      if (child === this.spacer) return { i: 0, o: 0 };
      const v = child ? this.byEl.get(child as Element) : undefined;
      return v ? { i: blocks.indexOf(v.block), o: 0 } : end;
    }
    if (node === this.spacer) return { i: 0, o: 0 };
    const v = this.viewAt(node);
    if (!v) return end;
    const i = blocks.indexOf(v.block);
    if (i < 0) return { i: 0, o: 0 };
    return { i, o: textOffset(v.el, v.block.text, node, offset, start) };
  }
}

function paneAt(node: Node | null): OutputPane | undefined {
  const el = node ? (node.nodeType === Node.ELEMENT_NODE ? (node as Element) : node.parentElement) : null;
  const pre = el?.closest('pre.output');
  return pre ? paneOf.get(pre) : undefined;
}

let installed = false;
let pinnedPanes: OutputPane[] = [];

/** One listener per page: keep the blocks a selection ends in, and copy whole lines between them. */
function installDocumentHandlers(): void {
  if (installed) return;
  installed = true;
  document.addEventListener('selectionchange', () => {
    const sel = document.getSelection();
    const ends = sel && sel.rangeCount > 0 && !sel.isCollapsed ? [sel.anchorNode, sel.focusNode].filter((n): n is Node => n !== null) : [];
    const next: OutputPane[] = [];
    for (const node of ends) {
      const p = paneAt(node);
      if (p && !next.includes(p)) next.push(p);
    }
    for (const p of pinnedPanes) if (!next.includes(p)) p.pinNodes([]);
    for (const p of next) p.pinNodes(ends.filter((n) => paneAt(n) === p));
    pinnedPanes = next;
  });
  document.addEventListener('copy', (e) => {
    const sel = document.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
    const r = sel.getRangeAt(0);
    const p = paneAt(r.startContainer);
    if (!p || p !== paneAt(r.endContainer)) return;
    e.clipboardData?.setData('text/plain', p.textBetween(r.startContainer, r.startOffset, r.endContainer, r.endOffset));
    e.preventDefault();
  });
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
