/**
 * Text from outside on its way to a screen, one helper per medium. "From outside" is everything CodeAct
 * did not write itself: an MCP server's strings (titles, messages, field names, default values, choice
 * labels, descriptions, errors), file and artifact names, tool names, the model's text, tools' results and
 * errors, and the code's output. Every place that shows such text goes through one of these
 * (test/security/untrustedSinks.test.ts enumerates them in the source):
 *
 * - {@link forTerminal}: a terminal (the CLI). No escape sequence of any kind (CSI, OSC, DCS, …): every
 *   control character, ESC and BEL included, is shown as a marker (`<U+001B>`), as are backspace and a
 *   bare carriage return; invisible and bidirectional characters are shown as `<U+202E>` markers
 *   (./invisibleChars). Colours do not pass either.
 * - {@link TerminalStream} / {@link forTerminalOutput}: the code's own stdout and stderr (and what stands
 *   for them: a traceback, a hosted sandbox's logs, a display's text). Safe colours pass (./terminal,
 *   ./sgr), every other control sequence and control character (bare CR and backspace too) is removed,
 *   invisible and bidirectional characters are shown as markers.
 * - `{ carriageReturns: true }` of the two: the code's own output for a renderer that draws colours and
 *   carriage returns itself (a notebook's stream and error outputs): the same, but a carriage return passes.
 * - {@link forDisplay}: plain text in VS Code (dialogs, notifications, quick inputs, notebook outputs) and
 *   the panel's attributes and announcements: the same markers. The panel's DOM draws them as styled
 *   boxes through ../webview/reveal, which is built on the same classifier.
 *
 * One-line strings (`{ line: true }`: a name, a title, a label, a value in a prompt or a list) cannot start
 * a line of their own, which could pass for CodeAct's own text ("Allow? [y/N]"): every line break (LF,
 * CR LF, a bare CR) is shown as `⏎`. Multi-line text (a message, a description, an error) keeps its line
 * breaks: CR LF becomes LF, and a bare CR, which would let a line overwrite itself, is a `<U+000D>` marker.
 *
 * Pure, linear in the input, no Node and no DOM (the CLI, the extension host and the panel all use it).
 */
import { invisibleMarker, revealInvisible } from './invisibleChars';
import { SgrState, TerminalSanitizer } from './terminal';

export { SgrState, sanitizeTerminal, TerminalSanitizer } from './terminal';
export { InvisibleRevealer, revealInvisible } from './invisibleChars';

export interface ShowOptions {
  /** One line: line breaks are shown as `⏎` (names, titles, labels, values). */
  line?: boolean;
}

/** What a line break in a one-line string is shown as. */
export const LINE_BREAK_MARK = '⏎';

const BREAKS = /\r\n|\r|\n/g;
const CRLF = /\r\n/g;
const BARE_CR = /\r/g;
const CR_MARK = invisibleMarker(0x0d);

/** Anything as text: a string as it is, other values as String() does (a field's default may be a number). */
const asText = (value: unknown): string => (typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value));

/**
 * Text from outside as plain text for a person: invisible, bidirectional and control characters shown as
 * markers; see the module's comment for line breaks. For VS Code's dialogs, notifications, quick inputs
 * and notebook outputs, and the panel's attributes.
 */
export function forDisplay(text: unknown, options: ShowOptions = {}): string {
  return revealInvisible(lineBreaksShown(text, options));
}

/**
 * Only the line-break step of {@link forDisplay} (`⏎` in one line, CR LF as LF, a bare CR as its marker):
 * for a renderer that draws the other markers itself (../webview/reveal).
 */
export function lineBreaksShown(text: unknown, options: ShowOptions = {}): string {
  const s = asText(text);
  if (options.line) return s.replace(BREAKS, LINE_BREAK_MARK);
  return s.includes('\r') ? s.replace(CRLF, '\n').replace(BARE_CR, CR_MARK) : s;
}

/**
 * Text from outside for a terminal: {@link forDisplay}, and nothing a terminal would act on is left (no
 * escape sequence, no control character but newline and tab; colours do not pass).
 */
export function forTerminal(text: unknown, options: ShowOptions = {}): string {
  // forDisplay leaves no control character but LF and tab; the sanitiser is the terminal's last word.
  return new TerminalSanitizer().write(forDisplay(text, options));
}

/** The colour sequences the sanitiser lets through: they are kept whole, the text between them is revealed. */
const SGR = /\x1b\[[0-9;:]*m/g;

/**
 * A stream of text from outside on a terminal, chunk by chunk, so that a sequence, a CR LF or a surrogate
 * pair split between two chunks is handled as one (an emoji sequence split between chunks may show a
 * marker for its joiner).
 *
 * - `{ colours }`: the code's own stdout or stderr. {@link TerminalSanitizer} (safe colours pass, every
 *   other sequence and control character is removed, bare CR and backspace too), then invisible and
 *   bidirectional characters shown as markers between the colours. `colours`: the colours in force,
 *   shared by the streams that reach one terminal.
 * - `{ plain: true }`: any other stream (the model's answer): {@link forTerminal}, chunk by chunk.
 *
 * `carriageReturns` (with `colours`): a carriage return passes, for a renderer that redraws the line
 * itself (a notebook's stream output), never for a terminal.
 */
export class TerminalStream {
  private readonly clean: TerminalSanitizer | undefined;
  /** The end of the last chunk, held for the next: a high surrogate, or (plain) a CR that may start CR LF. */
  private held = '';

  constructor(options: { colours: SgrState; carriageReturns?: boolean } | { plain: true }) {
    this.clean = 'colours' in options ? new TerminalSanitizer(options.colours, options.carriageReturns === true) : undefined;
  }

  write(chunk: string): string {
    let text = this.held + (this.clean ? this.clean.write(chunk) : chunk);
    this.held = '';
    let keep = 0;
    const last = text.charCodeAt(text.length - 1);
    if ((last >= 0xd800 && last <= 0xdbff) || (!this.clean && last === 0x0d)) keep = 1;
    if (keep) {
      this.held = text.slice(-keep);
      text = text.slice(0, -keep);
    }
    return this.clean ? revealBetweenColours(text) : forTerminal(text);
  }

  /** The end of the stream: what is held. */
  end(): string {
    const rest = forTerminal(this.held);
    this.held = '';
    return rest;
  }
}

function revealBetweenColours(text: string): string {
  if (!text.includes('\x1b')) return revealInvisible(text);
  let out = '';
  let at = 0;
  for (const m of text.matchAll(SGR)) {
    out += revealInvisible(text.slice(at, m.index)) + m[0];
    at = m.index + m[0].length;
  }
  return out + revealInvisible(text.slice(at));
}

/** One whole text of the code's output (a traceback, a hosted sandbox's logs) as {@link TerminalStream} shows it. */
export function forTerminalOutput(text: string, colours = new SgrState(), options: { carriageReturns?: boolean } = {}): string {
  const stream = new TerminalStream({ colours, ...options });
  return stream.write(text) + stream.end();
}
