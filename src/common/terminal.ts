/**
 * Makes untrusted text (the code's output, a tool's error, an MCP server's description) safe to print
 * on a terminal: colours and text styles (SGR, `ESC [ … m`) pass through, except what would hide text
 * (conceal, a foreground the same as the background: see ./sgr); every other control sequence
 * is removed whole: cursor movement and erasing (other CSI), OSC (window titles, clipboard writes,
 * hyperlinks), DCS, SOS/PM/APC, other escape sequences, and the C0 and C1 control characters except
 * newline and tab. Linear in the input; pure.
 *
 * {@link TerminalSanitizer} keeps its state between chunks, so a sequence split across two writes of a
 * stream is handled as one (and a colour split in two still shows).
 */

import { filterSgr, SgrState } from './sgr';

export { SgrState } from './sgr';

const ESC = 0x1b;
const BEL = 0x07;
/** Longest parameter list of a colour sequence that is passed through; longer ones are dropped. */
const MAX_SGR = 64;

type State = 'text' | 'esc' | 'escIntermediate' | 'csi' | 'csiDiscard' | 'string';

export class TerminalSanitizer {
  private state: State = 'text';
  private csi = '';

  /**
   * `colours`: the colours in force, shared by the sanitizers of the streams that reach one terminal.
   * `carriageReturns`: a carriage return passes (for a renderer that redraws the line itself, as a
   * notebook's stream output does, never for a terminal).
   */
  constructor(
    readonly colours = new SgrState(),
    private readonly carriageReturns = false,
  ) {}

  /** The safe part of `chunk`; an unfinished sequence at its end is held (or dropped) for the next chunk. */
  write(chunk: string): string {
    let out = '';
    let runStart = -1;
    const flushRun = (end: number) => {
      if (runStart >= 0) out += chunk.slice(runStart, end);
      runStart = -1;
    };
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      switch (this.state) {
        case 'text':
          if ((c >= 0x20 && c < 0x7f) || c > 0x9f || c === 0x0a || c === 0x09 || (c === 0x0d && this.carriageReturns)) {
            if (runStart < 0) runStart = i;
            continue;
          }
          flushRun(i);
          if (c === ESC) this.state = 'esc';
          else if (c === 0x9b)
            this.state = 'csiDiscard'; // 8-bit CSI: dropped whole, colours included
          else if (c === 0x9d || c === 0x90 || c === 0x98 || c === 0x9e || c === 0x9f) this.state = 'string';
          // Any other C0 or C1 control, and DEL: dropped.
          continue;
        case 'esc':
          if (c === 0x5b) {
            this.state = 'csi';
            this.csi = '';
          } else if (c === 0x5d || c === 0x50 || c === 0x58 || c === 0x5e || c === 0x5f) this.state = 'string';
          else if (c >= 0x20 && c <= 0x2f) this.state = 'escIntermediate';
          else if (c >= 0x30 && c <= 0x7e) this.state = 'text';
          else if (c !== ESC) {
            this.state = 'text';
            i--; // not an escape sequence: the ESC is dropped, the character is read again as text
          }
          continue;
        case 'escIntermediate':
          if (c >= 0x30 && c <= 0x7e) this.state = 'text';
          else if (!(c >= 0x20 && c <= 0x2f)) {
            this.state = 'text';
            i--;
          }
          continue;
        case 'csi':
        case 'csiDiscard':
          if (c >= 0x40 && c <= 0x7e) {
            if (this.state === 'csi' && c === 0x6d && /^[0-9;:]*$/.test(this.csi)) {
              const params = filterSgr(this.csi, this.colours);
              if (params !== undefined) out += `\x1b[${params}m`;
            }
            this.state = 'text';
            this.csi = '';
          } else if (c >= 0x20 && c <= 0x3f) {
            if (this.state === 'csi') {
              this.csi += chunk[i];
              if (this.csi.length > MAX_SGR) {
                this.state = 'csiDiscard';
                this.csi = '';
              }
            }
          } else {
            // A broken sequence: drop what was read, read the character again as text.
            this.state = 'text';
            this.csi = '';
            i--;
          }
          continue;
        case 'string':
          // OSC, DCS, SOS, PM, APC: everything up to BEL, ST (0x9c) or ESC (of ESC \) is dropped.
          if (c === BEL || c === 0x9c) this.state = 'text';
          else if (c === ESC) this.state = 'esc';
          continue;
      }
    }
    flushRun(chunk.length);
    return out;
  }
}

/**
 * {@link TerminalSanitizer} for one whole text: an unfinished sequence at the end is dropped. `colours`:
 * the colours in force on the terminal it goes to (a fresh state when not given).
 */
export function sanitizeTerminal(text: string, colours?: SgrState): string {
  return new TerminalSanitizer(colours).write(text);
}
