/**
 * Live stdout/stderr of an execution, virtualised. The text (ANSI colours, carriage-return progress lines)
 * lives in `OutputLines`, in blocks of 64 lines; the pane's DOM holds one element per block, and only the
 * blocks in or near view hold their text. The others are empty placeholders with the height they had (or
 * their line count times the line height). What is near view comes from an IntersectionObserver; while the
 * pane follows its bottom (`StickToBottom`), the last lines are shown without asking. Nothing here
 * reads layout on the frame path.
 *
 * Text stays selectable and copyable: the blocks holding the ends of a selection are kept, and copying a
 * selection inside one pane (or Ctrl+A in the focused pane, then copy) gives the text of every line in
 * between, shown or not. The model keeps the tail of the output; the whole of it is behind "Open full output".
 */
import type { StreamName } from '../common/events';
import { OUTPUT_TAIL_MAX_CHARS, OUTPUT_TAIL_MAX_LINES, tailSlice, type OutputTail } from '../common/transcript';
import { OutputLines, type Block } from './ansiLines';
import { StickToBottom } from './scrollAnchor';

export { paletteColor } from './ansiLines';

interface BlockView {
  block: Block;
  el: HTMLElement;
  rendered: boolean;
  rev: number;
  /** Complete lines in the DOM. */
  doneShown: number;
  /** Nodes of the open (unfinished) line in the DOM. */
  openNodes: Node[];
  visible: boolean;
  pinned: boolean;
  placeholderLines: number;
  measured?: { height: number; rev: number };
}

const paneOf = new WeakMap<Element, OutputPane>();

/** Rows a pane shows at most (styles.css sets its max-height to this many line heights). */
export const OUTPUT_ROWS = 16;

export class OutputPane {
  readonly el: HTMLElement;
  readonly pre: HTMLElement;
  private readonly lines: OutputLines;
  private readonly views = new WeakMap<Block, BlockView>();
  private readonly byEl = new WeakMap<Element, BlockView>();
  private readonly stick: StickToBottom;
  private readonly io: IntersectionObserver;
  private readonly ro: ResizeObserver;
  private pins: BlockView[] = [];
  private rendered = 0;
  /** Lines the model holds in total, including those no longer shown. */
  totalLines = 0;

  constructor(maxLines = OUTPUT_TAIL_MAX_LINES, maxChars = OUTPUT_TAIL_MAX_CHARS) {
    this.el = document.createElement('div');
    this.el.className = 'output-pane';
    this.pre = document.createElement('pre');
    this.pre.className = 'output';
    this.pre.setAttribute('tabindex', '0');
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
        if (v?.rendered && size && size.blockSize > 0) v.measured = { height: size.blockSize, rev: v.block.rev };
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
    return this.rendered === 0;
  }

  /** Elements holding text right now (the rest are placeholders). */
  get shownBlocks(): number {
    let n = 0;
    for (const b of this.lines.blocks) if (this.views.get(b)?.rendered) n++;
    return n;
  }

  /** Takes what the tail holds beyond what was already taken. Returns true when something changed. */
  sync(tail: OutputTail): boolean {
    const fresh = tail.totalChars - this.rendered;
    if (fresh === 0) return false;
    if (fresh < 0 || fresh > tail.chars) {
      // The model dropped text we never took, or started over: rebuild from the tail.
      this.lines.clear();
      for (const c of tail.chunks) this.lines.write(c.stream, c.text);
    } else {
      for (const c of tailSlice(tail, fresh)) this.lines.write(c.stream, c.text);
    }
    this.rendered = tail.totalChars;
    this.totalLines = tail.totalLines;
    this.lines.trim();
    this.render();
    return true;
  }

  /** Appends raw text of one stream and shows it (a pane not fed from the model: the traceback). */
  write(stream: StreamName, raw: string): void {
    this.lines.write(stream, raw);
    this.rendered += raw.length;
    this.lines.trim();
    this.render();
  }

  /** The plain text of every line the pane holds (shown or not). */
  text(): string {
    return this.lines.text();
  }

  /** The plain text between two DOM points of this pane (a selection), with the lines not shown in between. */
  textBetween(startNode: Node, startOffset: number, endNode: Node, endOffset: number): string {
    const a = this.position(startNode, startOffset);
    const b = this.position(endNode, endOffset);
    const blocks = this.lines.blocks;
    if (a.i > b.i || (a.i === b.i && a.o >= b.o)) return '';
    let out = '';
    for (let i = a.i; i <= b.i && i < blocks.length; i++) {
      const t = OutputLines.blockText(blocks[i]);
      out += t.slice(i === a.i ? a.o : 0, i === b.i ? b.o : t.length);
    }
    return out;
  }

  /** Keeps the blocks holding these nodes (the ends of a selection) in the DOM. */
  pinNodes(nodes: Node[]): void {
    const next: BlockView[] = [];
    for (const n of nodes) {
      const el = (n.nodeType === Node.ELEMENT_NODE ? (n as Element) : n.parentElement)?.closest('.out-blk');
      const v = el ? this.byEl.get(el) : undefined;
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
    const stuck = this.stick.stuck;
    for (let i = 0; i < n; i++) {
      const b = blocks[i];
      let v = this.views.get(b);
      if (!v) v = this.create(b);
      // At the bottom, the last block and, when it has fewer lines than the pane has rows, the one before.
      const tail = i === n - 1 || (i === n - 2 && blocks[n - 1].lines.length < OUTPUT_ROWS + 1);
      const want = v.visible || v.pinned || (stuck && tail);
      if (want) {
        if (!v.rendered || v.rev !== b.rev) this.paint(v);
      } else if (v.rendered) {
        this.evict(v);
      } else if (v.placeholderLines !== b.lines.length) {
        v.placeholderLines = b.lines.length;
        v.el.style.height = `calc(${b.lines.length} * 1lh)`;
      }
    }
  }

  private create(b: Block): BlockView {
    const el = document.createElement('div');
    el.className = 'out-blk';
    const v: BlockView = { block: b, el, rendered: false, rev: -1, doneShown: 0, openNodes: [], visible: false, pinned: false, placeholderLines: -1 };
    this.views.set(b, v);
    this.byEl.set(el, v);
    this.pre.insertBefore(el, this.stick.sentinel);
    this.io.observe(el);
    return v;
  }

  /** Adds what the block gained since it was last painted (complete lines are never painted twice). */
  private paint(v: BlockView): void {
    const b = v.block;
    if (!v.rendered) {
      v.el.textContent = '';
      v.el.style.height = '';
      v.doneShown = 0;
      v.openNodes = [];
      v.rendered = true;
      v.placeholderLines = -1;
      this.ro.observe(v.el);
    }
    for (const node of v.openNodes) node.parentNode?.removeChild(node);
    const out = new NodeBuilder();
    for (let i = v.doneShown; i < b.done; i++) out.line(b.lines[i], true);
    v.el.append(out.take());
    v.doneShown = b.done;
    if (b.lines.length > b.done) {
      out.line(b.lines[b.lines.length - 1], false);
      const frag = out.take();
      v.openNodes = Array.from(frag.childNodes);
      v.el.append(frag);
    } else {
      v.openNodes = [];
    }
    v.rev = b.rev;
  }

  private evict(v: BlockView): void {
    const b = v.block;
    this.ro.unobserve(v.el);
    v.rendered = false;
    v.openNodes = [];
    v.el.textContent = '';
    v.placeholderLines = b.lines.length;
    v.el.style.height = v.measured && v.measured.rev === b.rev ? `${v.measured.height}px` : `calc(${b.lines.length} * 1lh)`;
  }

  private dropped(b: Block): void {
    const v = this.views.get(b);
    if (!v) return;
    this.io.unobserve(v.el);
    this.ro.unobserve(v.el);
    v.el.remove();
    if (v.pinned) this.pins = this.pins.filter((x) => x !== v);
    this.views.delete(b);
  }

  private onVisibility(entries: IntersectionObserverEntry[]): void {
    for (const e of entries) {
      const v = this.byEl.get(e.target);
      if (v) v.visible = e.isIntersecting;
    }
    this.render();
  }

  /** A DOM point of this pane as (block index, character offset in the block's text). */
  private position(node: Node, offset: number): { i: number; o: number } {
    const blocks = this.lines.blocks;
    const end = { i: blocks.length - 1, o: blocks.length ? OutputLines.blockText(blocks[blocks.length - 1]).length : 0 };
    if (node === this.pre) {
      const child = this.pre.childNodes[offset];
      const v = child ? this.byEl.get(child as Element) : undefined;
      return v ? { i: blocks.indexOf(v.block), o: 0 } : end;
    }
    const el = (node.nodeType === Node.ELEMENT_NODE ? (node as Element) : node.parentElement)?.closest('.out-blk');
    const v = el ? this.byEl.get(el) : undefined;
    if (!el || !v) return end;
    const i = blocks.indexOf(v.block);
    if (i < 0) return { i: 0, o: 0 };
    const r = document.createRange();
    r.setStart(el, 0);
    r.setEnd(node, offset);
    return { i, o: r.toString().length };
  }
}

/** Builds the nodes of lines: plain text merged into text nodes, one span per styled run. */
class NodeBuilder {
  private frag = document.createDocumentFragment();
  private buf = '';

  line(line: { runs: { text: string; cls?: string; css?: { color?: string; background?: string } }[] }, complete: boolean): void {
    for (const r of line.runs) {
      if (r.cls === undefined) {
        this.buf += r.text;
        continue;
      }
      this.flush();
      const span = document.createElement('span');
      if (r.cls) span.className = r.cls;
      if (r.css?.color) span.style.color = r.css.color;
      if (r.css?.background) span.style.backgroundColor = r.css.background;
      span.textContent = r.text;
      this.frag.append(span);
    }
    if (complete) this.buf += '\n';
  }

  take(): DocumentFragment {
    this.flush();
    const f = this.frag;
    this.frag = document.createDocumentFragment();
    return f;
  }

  private flush(): void {
    if (!this.buf) return;
    this.frag.append(document.createTextNode(this.buf));
    this.buf = '';
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
    const next: OutputPane[] = [];
    if (sel && sel.rangeCount > 0 && !sel.isCollapsed) {
      for (const node of [sel.anchorNode, sel.focusNode]) {
        const p = paneAt(node);
        if (p && !next.includes(p)) next.push(p);
      }
    }
    for (const p of pinnedPanes) if (!next.includes(p)) p.pinNodes([]);
    for (const p of next) p.pinNodes([sel!.anchorNode, sel!.focusNode].filter((n): n is Node => n !== null && paneAt(n) === p));
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
