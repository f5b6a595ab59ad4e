/**
 * The text model behind an output pane: raw stdout/stderr (ANSI colours via anser, carriage returns,
 * escapes cut between chunks) kept in blocks of `BLOCK_LINES` lines, so a view can render, drop and trim
 * whole blocks. A block is one string (what its DOM shows, newlines included) plus the styled ranges in it:
 * no object per line. No DOM here.
 */
import Anser from 'anser';
import type { StreamName } from '../common/events';

const BLOCK_LINES = 32;

/** Inline colours that have no class (256-colour palette and truecolor). */
interface RunCss {
  color?: string;
  background?: string;
}

/** A styled range of a block's text: stderr, or ANSI colours and decorations. Plain stdout has none. */
interface Span {
  start: number;
  end: number;
  cls: string;
  css?: RunCss;
}

export interface Block {
  /** The block's text: complete lines, each ending with a newline, then maybe an open line. */
  text: string;
  /** Where the open (unfinished) line starts: just after the last newline. */
  open: number;
  /** Complete lines (newlines) in `text`. */
  done: number;
  spans: Span[];
  /** Bumped on every change (views compare it). */
  rev: number;
  /** Bumped each time the open line is overwritten (a bare carriage return): what a view drew of it is gone. */
  cut: number;
}

/** Lines a block takes on screen at least (its complete lines, and the open one if it has text). */
export function blockLines(b: Block): number {
  return b.done + (b.text.length > b.open ? 1 : 0);
}

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

const NO_STYLE: AnsiStyle = { fg: null, bg: null, fg_truecolor: null, bg_truecolor: null, decorations: [] };
const PARTIAL_ESC = /\x1b(\[[0-9;?]*)?$/;
const ANSI_BASE = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'];

/** CSS colour for an xterm 256-colour palette index, using the theme's terminal colours for 0-15. */
function paletteColor(n: number): string {
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

export class OutputLines {
  /** Live blocks (the first ones are dropped by `trim`). */
  blocks: Block[] = [];
  /** Lines (newlines) and characters held in `blocks`. */
  lines = 0;
  chars = 0;
  private readonly streams: Partial<Record<StreamName, StreamState>> = {};

  constructor(
    private readonly maxLines: number,
    private readonly maxChars: number,
    /** Called with each block dropped from the front. */
    private readonly onDrop: (b: Block) => void = () => {},
  ) {}

  get last(): Block | undefined {
    return this.blocks[this.blocks.length - 1];
  }

  clear(): void {
    for (const b of this.blocks) this.onDrop(b);
    this.blocks = [];
    this.lines = 0;
    this.chars = 0;
    for (const k of Object.keys(this.streams) as StreamName[]) delete this.streams[k];
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
    const cls = streamName === 'stderr' ? 'stderr' : undefined;
    const parts = text.includes('\r') ? text.split('\r') : [text];
    for (let i = 0; i < parts.length; i++) {
      if (i > 0) this.clearOpenLine();
      const part = parts[i];
      if (!part) continue;
      if (!part.includes('\x1b') && st.style === NO_STYLE) this.append(part, cls);
      else this.appendAnsi(st, part, cls);
    }
  }

  /** Drops whole blocks from the front while more than the caps are held. */
  trim(): void {
    let n = 0;
    while (this.blocks.length - n > 1 && (this.lines > this.maxLines || this.chars > this.maxChars)) {
      const b = this.blocks[n++];
      this.lines -= b.done;
      this.chars -= b.text.length;
      this.onDrop(b);
    }
    if (n) this.blocks = this.blocks.slice(n);
  }

  text(): string {
    let s = '';
    for (const b of this.blocks) s += b.text;
    return s;
  }

  private stream(name: StreamName): StreamState {
    let s = this.streams[name];
    if (!s) {
      s = { anser: new Anser(), pending: '', style: NO_STYLE };
      this.streams[name] = s;
    }
    return s;
  }

  private appendAnsi(st: StreamState, text: string, streamCls: string | undefined): void {
    const entries = st.anser.ansiToJson(text, { json: true, use_classes: true, remove_empty: false });
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (!e.content) continue;
      const style: AnsiStyle =
        i === 0 ? st.style : { fg: e.fg, bg: e.bg, fg_truecolor: e.fg_truecolor, bg_truecolor: e.bg_truecolor, decorations: e.decorations };
      if (style === NO_STYLE || (!style.fg && !style.bg && !style.decorations.length)) this.append(e.content, streamCls);
      else {
        const { cls, css } = styleOf(style);
        this.append(e.content, streamCls ? `${streamCls} ${cls}`.trim() : cls, css);
      }
    }
    // Carry the colour state into the next chunk (anser resets it for text before the first escape).
    const a = st.anser as unknown as AnsiStyle;
    const carried: AnsiStyle = { fg: a.fg, bg: a.bg, fg_truecolor: a.fg_truecolor, bg_truecolor: a.bg_truecolor, decorations: [...(a.decorations ?? [])] };
    st.style = carried.fg || carried.bg || carried.fg_truecolor || carried.bg_truecolor || carried.decorations.length ? carried : NO_STYLE;
  }

  /** Appends text of one style, splitting it into blocks of `BLOCK_LINES` lines. */
  private append(text: string, cls: string | undefined, css?: RunCss): void {
    let pos = 0;
    while (pos < text.length) {
      let b = this.last;
      if (!b || b.done >= BLOCK_LINES) {
        b = { text: '', open: 0, done: 0, spans: [], rev: 0, cut: 0 };
        this.blocks.push(b);
      }
      // Take text up to the newline that fills the block, or all of it.
      const room = BLOCK_LINES - b.done;
      let nl = 0;
      let end = text.length;
      for (let i = text.indexOf('\n', pos); i >= 0; i = text.indexOf('\n', i + 1)) {
        if (++nl === room) {
          end = i + 1;
          break;
        }
      }
      const piece = pos === 0 && end === text.length ? text : text.slice(pos, end);
      const start = b.text.length;
      b.text += piece;
      if (cls !== undefined) {
        const prev = b.spans[b.spans.length - 1];
        // stderr continues its previous range; coloured ranges stay apart (one span per escape sequence).
        if (prev && prev.end === start && cls === 'stderr' && prev.cls === cls && !css && !prev.css) prev.end = b.text.length;
        else b.spans.push(css ? { start, end: b.text.length, cls, css } : { start, end: b.text.length, cls });
      }
      if (nl) {
        b.done += nl;
        this.lines += nl;
        b.open = b.text.lastIndexOf('\n') + 1;
      }
      this.chars += piece.length;
      b.rev++;
      pos = end;
    }
  }

  /** A bare carriage return: the open line is overwritten by what follows. */
  private clearOpenLine(): void {
    const b = this.last;
    if (!b || b.text.length === b.open) return;
    this.chars -= b.text.length - b.open;
    b.text = b.text.slice(0, b.open);
    b.spans = b.spans.filter((sp) => sp.start < b.open);
    for (const sp of b.spans) if (sp.end > b.open) sp.end = b.open;
    b.rev++;
    b.cut++;
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

function styleOf(s: AnsiStyle): { cls: string; css?: RunCss } {
  const cls: string[] = [];
  const css: RunCss = {};
  const color = (v: string | null, tc: string | null, prop: 'color' | 'background', suffix: 'fg' | 'bg') => {
    if (!v) return;
    if (v === 'ansi-truecolor' && tc) css[prop] = `rgb(${tc})`;
    else if (v.startsWith('ansi-palette-')) css[prop] = paletteColor(Number(v.slice(13)));
    else cls.push(`${v}-${suffix}`);
  };
  color(s.fg, s.fg_truecolor, 'color', 'fg');
  color(s.bg, s.bg_truecolor, 'background', 'bg');
  for (const d of s.decorations) cls.push(`ansi-${d}`);
  return css.color || css.background ? { cls: cls.join(' '), css } : { cls: cls.join(' ') };
}
