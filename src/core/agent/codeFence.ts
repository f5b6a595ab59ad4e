/**
 * Recognises the first fenced Python block of a model message while the message streams in, for the
 * text protocol (./textProtocol). Feed it text deltas; it hands back what to show as prose, when the
 * block opens, its code line by line, and when it closes.
 *
 * Linear and bounded: every character is looked at a constant number of times. Only the start of a
 * line that may still be a fence (up to 3 spaces, then a backtick) is held back, and at most
 * HOLD_LIMIT characters of it; everything else passes straight through. Newlines are passed on lazily
 * (with the next text of the same kind), so prose never ends with the blank line before a block and
 * the code never ends with the newline before its closing fence.
 *
 * Recognised: an opening line of 3+ backticks with the info string `python`, `python3` or `py`
 * (case-insensitive, optionally followed by more info), up to 3 spaces of indentation; a closing line of
 * at least as many backticks and nothing else. Text after the closing fence is not shown: the model is
 * asked to stop and wait for the observation there. Further python blocks are only counted.
 */

export type FenceSegment = { kind: 'prose'; text: string } | { kind: 'open' } | { kind: 'code'; text: string } | { kind: 'close' };

/** Longest line start held back while it may still be a fence. */
export const HOLD_LIMIT = 120;

const OPENER = /^ {0,3}(`{3,})[ \t]*(?:python3?|py)(?:[ \t{][^`]*)?$/i;
const CLOSER = /^ {0,3}(`{3,})[ \t]*$/;
/** A line start that may still become an opening fence. */
const MAY_OPEN = /^ {0,3}(?:`[^\n]*)?$/;
/** A line start that may still become a closing fence. */
const MAY_CLOSE = /^ {0,3}`*[ \t\r]*$/;

type State = 'prose' | 'code' | 'after';

export class CodeFenceScanner {
  private state: State = 'prose';
  /** The held start of the current line (while `holding`). */
  private line = '';
  private holding = true;
  /** Newlines seen but not passed on yet. */
  private pendingNl = '';
  private fence = 0;
  private proseStarted = false;
  /** The block's code so far (what the code deltas add up to). */
  code = '';
  /** True once a block has opened (it may be unclosed). */
  opened = false;
  /** True once the block's closing fence arrived. */
  closed = false;
  /** Further ```python blocks after the first (not run). */
  extraBlocks = 0;

  /** Feeds a text delta; appends what it produced to `out`. */
  push(text: string, out: FenceSegment[]): void {
    let i = 0;
    while (i <= text.length) {
      const nl = text.indexOf('\n', i);
      const end = nl < 0 ? text.length : nl;
      if (end > i) this.take(text.slice(i, end), out);
      if (nl < 0) return;
      this.endLine(out);
      i = nl + 1;
    }
  }

  /** A boundary between two text items of one response: the current line ends there. */
  boundary(out: FenceSegment[]): void {
    if (this.line || !this.holding) this.endLine(out);
  }

  /** The end of the message: decides the last (partial) line; trailing newlines are dropped. */
  finish(out: FenceSegment[]): void {
    if (this.holding && this.line) this.decide(out);
    this.line = '';
    this.holding = true;
    this.pendingNl = '';
  }

  private take(piece: string, out: FenceSegment[]): void {
    if (!this.holding) {
      this.emit(piece, out);
      return;
    }
    this.line += piece;
    const may = this.state === 'code' ? MAY_CLOSE : MAY_OPEN;
    if (this.line.length > HOLD_LIMIT || !may.test(this.line.slice(0, HOLD_LIMIT + 1))) {
      const held = this.line;
      this.line = '';
      this.holding = false;
      this.emit(held, out);
    }
  }

  private endLine(out: FenceSegment[]): void {
    const wasCode = this.state;
    const changed = this.holding && this.line ? this.decide(out) : false;
    this.line = '';
    this.holding = true;
    if (!changed && wasCode !== 'after') this.pendingNl += '\n';
  }

  /** Decides a complete held line. Returns true when it opened or closed the block. */
  private decide(out: FenceSegment[]): boolean {
    const line = this.line.endsWith('\r') ? this.line.slice(0, -1) : this.line;
    if (this.state === 'prose') {
      const m = OPENER.exec(line);
      if (m) {
        this.state = 'code';
        this.fence = m[1].length;
        this.opened = true;
        this.pendingNl = '';
        out.push({ kind: 'open' });
        return true;
      }
    } else if (this.state === 'code') {
      const m = CLOSER.exec(line);
      if (m && m[1].length >= this.fence) {
        this.state = 'after';
        this.closed = true;
        this.pendingNl = '';
        out.push({ kind: 'close' });
        return true;
      }
    } else {
      if (OPENER.test(line)) this.extraBlocks++;
      return false;
    }
    this.emit(this.line, out);
    return false;
  }

  private emit(text: string, out: FenceSegment[]): void {
    if (!text) return;
    if (this.state === 'prose') {
      const piece = this.proseStarted ? this.pendingNl + text : text;
      this.pendingNl = '';
      this.proseStarted = true;
      pushMerged(out, 'prose', piece);
    } else if (this.state === 'code') {
      const piece = this.code ? this.pendingNl + text : text.replace(/^\n+/, '');
      this.pendingNl = '';
      this.code += piece;
      pushMerged(out, 'code', piece);
    }
  }
}

function pushMerged(out: FenceSegment[], kind: 'prose' | 'code', text: string): void {
  const last = out[out.length - 1];
  if (last && last.kind === kind) last.text += text;
  else out.push({ kind, text });
}
