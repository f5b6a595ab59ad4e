/**
 * Live stdout/stderr of an execution, with ANSI colours (anser), carriage-return progress lines, and a
 * bounded number of visible lines: new text is appended as nodes, old nodes are dropped from the front.
 * The pane pulls from the model's output tail and renders only what it has not shown yet.
 */
import Anser from 'anser';
import type { StreamName } from '../common/events';
import { OUTPUT_TAIL_MAX_CHARS, OUTPUT_TAIL_MAX_LINES, countNewlines, tailSlice, type OutputTail } from '../common/transcript';

interface AnsiStyle {
  fg: string | null;
  bg: string | null;
  fg_truecolor: string | null;
  bg_truecolor: string | null;
  decorations: string[];
}

interface StreamState {
  anser: Anser;
  /** A partial escape sequence cut at the end of the last chunk. */
  pending: string;
  style: AnsiStyle;
}

interface Segment {
  el: HTMLElement;
  chars: number;
  lines: number;
}

interface Piece {
  node: Node;
  seg: Segment;
  chars: number;
  lines: number;
}

const NO_STYLE: AnsiStyle = { fg: null, bg: null, fg_truecolor: null, bg_truecolor: null, decorations: [] };
const PARTIAL_ESC = /\x1b(\[[0-9;?]*)?$/;
const ANSI_BASE = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'];

/** CSS colour for an xterm 256-colour palette index, using the theme's terminal colours for 0-15. */
export function paletteColor(n: number): string {
  if (n < 16) {
    const base = ANSI_BASE[n % 8];
    const name = n >= 8 ? `Bright${base[0].toUpperCase()}${base.slice(1)}` : `${base[0].toUpperCase()}${base.slice(1)}`;
    return `var(--vscode-terminal-ansi${name})`;
  }
  if (n < 232) {
    const i = n - 16;
    const c = (v: number) => (v === 0 ? 0 : 55 + v * 40);
    return `rgb(${c(Math.floor(i / 36))}, ${c(Math.floor(i / 6) % 6)}, ${c(i % 6)})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g}, ${g}, ${g})`;
}

/**
 * Text goes into block segments (one per write, continuing the last one while its line is open), so the
 * browser lays out only the new segment, not everything shown so far; trimming drops whole segments.
 */
export class OutputPane {
  readonly el: HTMLElement;
  readonly pre: HTMLElement;
  private readonly streams: Partial<Record<StreamName, StreamState>> = {};
  private segments: Segment[] = [];
  private head = 0; // index of the first live segment
  private open: Segment | undefined; // the last segment, while its last line has no newline yet
  private currentLine: Piece[] = [];
  private visibleChars = 0;
  private visibleLines = 0;
  private rendered = 0;
  private stick = true;
  /** Lines the model holds in total, including those no longer shown. */
  totalLines = 0;

  constructor(
    private readonly maxLines = OUTPUT_TAIL_MAX_LINES,
    private readonly maxChars = OUTPUT_TAIL_MAX_CHARS,
    /** Runs DOM reads/scrolls after the frame's writes (avoids forced layouts mid-frame). */
    private readonly afterWrite: (fn: () => void) => void = (fn) => fn(),
  ) {
    this.el = document.createElement('div');
    this.el.className = 'output-pane';
    this.pre = document.createElement('pre');
    this.pre.className = 'output';
    this.pre.setAttribute('tabindex', '0');
    this.pre.addEventListener(
      'scroll',
      () => {
        const p = this.pre;
        this.stick = p.scrollHeight - p.scrollTop - p.clientHeight < 24;
      },
      { passive: true },
    );
    this.el.append(this.pre);
  }

  get shownLines(): number {
    return this.visibleLines;
  }

  /** Lines received but no longer shown. */
  get hiddenLines(): number {
    return Math.max(0, this.totalLines - this.visibleLines);
  }

  get isEmpty(): boolean {
    return this.rendered === 0;
  }

  /** Renders what the tail holds beyond what was already shown. Returns true when something changed. */
  sync(tail: OutputTail): boolean {
    const fresh = tail.totalChars - this.rendered;
    if (fresh === 0) return false;
    if (fresh < 0 || fresh > tail.chars) {
      // The model dropped text we never showed, or started over: rebuild from the tail.
      this.clear();
      for (const c of tail.chunks) this.write(c.stream, c.text);
    } else {
      for (const c of tailSlice(tail, fresh)) this.write(c.stream, c.text);
    }
    this.rendered = tail.totalChars;
    this.totalLines = tail.totalLines;
    this.trim();
    if (this.stick) this.afterWrite(() => (this.pre.scrollTop = this.pre.scrollHeight));
    return true;
  }

  clear(): void {
    this.pre.textContent = '';
    this.segments = [];
    this.head = 0;
    this.open = undefined;
    this.currentLine = [];
    this.visibleChars = 0;
    this.visibleLines = 0;
    this.rendered = 0;
    for (const k of Object.keys(this.streams) as StreamName[]) delete this.streams[k];
  }

  private stream(name: StreamName): StreamState {
    let s = this.streams[name];
    if (!s) {
      s = { anser: new Anser(), pending: '', style: NO_STYLE };
      this.streams[name] = s;
    }
    return s;
  }

  /** Appends raw text of one stream (ANSI escapes and carriage returns included). */
  write(streamName: StreamName, raw: string): void {
    const st = this.stream(streamName);
    let text = st.pending + raw;
    st.pending = '';
    const partial = PARTIAL_ESC.exec(text);
    if (partial && partial[0].length < 32) {
      st.pending = partial[0];
      text = text.slice(0, partial.index);
    }
    if (!text) return;
    if (text.length > this.maxChars * 2) text = keepTail(text, this.maxLines, this.maxChars);
    if (text.includes('\r')) text = text.replace(/\r\n/g, '\n');
    let seg = this.open;
    if (!seg) {
      seg = { el: document.createElement('div'), chars: 0, lines: 0 };
      seg.el.className = 'seg';
      this.segments.push(seg);
    }
    const frag = document.createDocumentFragment();
    const parts = text.includes('\r') ? text.split('\r') : [text];
    for (let i = 0; i < parts.length; i++) {
      if (i > 0) this.clearCurrentLine();
      const part = parts[i];
      if (!part) continue;
      if (!part.includes('\x1b') && st.style === NO_STYLE) {
        this.appendText(frag, seg, part, streamName === 'stderr' ? ['stderr'] : null);
      } else {
        this.appendAnsi(frag, seg, st, part, streamName);
      }
    }
    seg.el.append(frag);
    if (!seg.el.parentNode) this.pre.append(seg.el);
    this.open = this.currentLine.length ? seg : undefined;
  }

  private appendAnsi(frag: DocumentFragment, seg: Segment, st: StreamState, text: string, streamName: StreamName): void {
    const entries = st.anser.ansiToJson(text, { json: true, use_classes: true, remove_empty: false });
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (!e.content) continue;
      const style: AnsiStyle = i === 0 ? st.style : { fg: e.fg, bg: e.bg, fg_truecolor: e.fg_truecolor, bg_truecolor: e.bg_truecolor, decorations: e.decorations };
      this.appendText(frag, seg, e.content, streamName === 'stderr' ? ['stderr'] : null, style);
    }
    // Carry the colour state into the next chunk (anser resets it for text before the first escape).
    const a = st.anser as unknown as AnsiStyle;
    const carried: AnsiStyle = { fg: a.fg, bg: a.bg, fg_truecolor: a.fg_truecolor, bg_truecolor: a.bg_truecolor, decorations: [...(a.decorations ?? [])] };
    st.style = carried.fg || carried.bg || carried.fg_truecolor || carried.bg_truecolor || carried.decorations.length ? carried : NO_STYLE;
  }

  private appendText(frag: DocumentFragment, seg: Segment, text: string, classes: string[] | null, style?: AnsiStyle): void {
    const nl = text.lastIndexOf('\n');
    if (nl >= 0 && nl < text.length - 1) {
      this.appendNode(frag, seg, text.slice(0, nl + 1), classes, style);
      this.appendNode(frag, seg, text.slice(nl + 1), classes, style);
    } else {
      this.appendNode(frag, seg, text, classes, style);
    }
  }

  private appendNode(frag: DocumentFragment, seg: Segment, text: string, classes: string[] | null, style?: AnsiStyle): void {
    let node: Node;
    const styled = style && style !== NO_STYLE;
    if (!classes && !styled) {
      node = document.createTextNode(text);
    } else {
      const span = document.createElement('span');
      if (classes) span.className = classes.join(' ');
      if (styled) applyStyle(span, style!);
      span.textContent = text;
      node = span;
    }
    const lines = countNewlines(text);
    const piece: Piece = { node, seg, chars: text.length, lines };
    seg.chars += piece.chars;
    seg.lines += lines;
    this.visibleChars += piece.chars;
    this.visibleLines += lines;
    frag.append(node);
    if (text.endsWith('\n')) this.currentLine = [];
    else this.currentLine.push(piece);
  }

  /** A bare carriage return: the current line is overwritten by what follows. */
  private clearCurrentLine(): void {
    for (const p of this.currentLine) {
      p.node.parentNode?.removeChild(p.node);
      p.seg.chars -= p.chars;
      this.visibleChars -= p.chars;
      p.chars = 0;
    }
    this.currentLine = [];
  }

  private trim(): void {
    while (this.segments.length - this.head > 1 && (this.visibleLines > this.maxLines || this.visibleChars > this.maxChars)) {
      const s = this.segments[this.head++];
      s.el.remove();
      this.visibleChars -= s.chars;
      this.visibleLines -= s.lines;
    }
    if (this.head > 256 && this.head * 2 > this.segments.length) {
      this.segments = this.segments.slice(this.head);
      this.head = 0;
    }
  }

  /** Plain text of what is shown (for tests and copy). */
  text(): string {
    return this.pre.textContent ?? '';
  }
}

function keepTail(text: string, maxLines: number, maxChars: number): string {
  let start = Math.max(0, text.length - maxChars);
  let lines = 0;
  for (let i = text.length - 1; i >= start; i--) {
    if (text.charCodeAt(i) === 10 && ++lines > maxLines) {
      start = i + 1;
      break;
    }
  }
  return text.slice(start);
}

function applyStyle(span: HTMLElement, s: AnsiStyle): void {
  const cls: string[] = [];
  const color = (v: string | null, tc: string | null, prop: 'color' | 'backgroundColor', suffix: 'fg' | 'bg') => {
    if (!v) return;
    if (v === 'ansi-truecolor' && tc) span.style[prop] = `rgb(${tc})`;
    else if (v.startsWith('ansi-palette-')) span.style[prop] = paletteColor(Number(v.slice(13)));
    else cls.push(`${v}-${suffix}`);
  };
  color(s.fg, s.fg_truecolor, 'color', 'fg');
  color(s.bg, s.bg_truecolor, 'backgroundColor', 'bg');
  for (const d of s.decorations) cls.push(`ansi-${d}`);
  if (cls.length) span.classList.add(...cls);
}
