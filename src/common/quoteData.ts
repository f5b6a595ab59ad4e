/**
 * Strings that the model or its code controls (variable names, type names, reprs, shapes, file names,
 * printed output, tool results, notebook cells, a user's message quoted back) inside a message that CodeAct
 * builds for a model: the compaction summary ("these are the user's words"), the text protocol's
 * observations, the notebook digest. Every such string goes in through one of these, so none can start a
 * line of the message: no heading ("## …"), no numbered "User message 3:", no role line ("user:",
 * "Human:", "[SYSTEM]"), no observation header, no closing fence. Whatever the data says, the lines that
 * begin at the margin are the builder's own.
 *
 * - `quoteInline`: one line, a JSON string literal. Lossless: `JSON.parse` gives the string back.
 * - `quoteName`: a name as it is when it is a plain identifier, else as `quoteInline`.
 * - `jsonData`: a value as JSON on one line, with the same escapes.
 * - `quoteBlock`: text of many lines, each behind the gutter `│ ` (so every line break of the data is
 *   visible), with line and paragraph separators, other control and invisible characters shown as
 *   markers (`<U+2028>`, the same markers the panel shows).
 * In all three, `<|` (how chat templates spell their special tokens, `<|im_start|>`) is escaped, so a
 * local server that tokenises the whole prompt does not read a token the data spelled.
 *
 * Pure: no Node, no DOM.
 */
import { revealInvisible } from './invisibleChars';

/** What begins each line of a quoted block. */
export const GUTTER = '│ ';

/** Characters JSON.stringify leaves as they are although a reader would see a line break, or nothing. */
const JSON_UNSEEN = /[\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\u{e0000}-\u{e007f}]|<(?=\|)/gu;

/** `\uXXXX` for each UTF-16 unit of `c` (a surrogate pair for a tag character). */
function unicodeEscape(c: string): string {
  let out = '';
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/** `value` as JSON text on one line: control, separator and invisible characters and `<|` as `\u` escapes (JSON.parse gives the value back). */
export function jsonData(value: unknown): string {
  return (JSON.stringify(value ?? null) ?? 'null').replace(JSON_UNSEEN, unicodeEscape);
}

/** A string as data on one line: a JSON string literal (`"a\nb"`), cut to `max` characters first when given. */
export function quoteInline(text: unknown, max?: number): string {
  const s = typeof text === 'string' ? text : String(text ?? '');
  return jsonData(max !== undefined && s.length > max ? `${s.slice(0, Math.max(0, max - 1))}…` : s);
}

/** A name (a tool's, an exception type's): as it is when it is a plain dotted identifier, else quoted as a string. */
export function quoteName(name: unknown): string {
  return typeof name === 'string' && /^[A-Za-z_][\w.-]{0,99}$/.test(name) ? name : quoteInline(name, 100);
}

/**
 * Text of any number of lines as data: each line behind the gutter `│ `, nothing at the margin. A lone
 * carriage return, the line and paragraph separators and other control or invisible characters are
 * markers (`<U+000D>`); `<|` is `<\|`. One final line break is left out; an empty text is one gutter line.
 */
export function quoteBlock(text: string): string {
  const shown = revealInvisible(text.replace(/\r\n/g, '\n').replace(/\n$/, '')).replace(/\r/g, '<U+000D>').replace(/<\|/g, '<\\|');
  return GUTTER + shown.replace(/\n/g, `\n${GUTTER}`);
}

/** A Markdown code fence for `text`: more backticks than its longest run, and at least three, so nothing in it closes the fence. */
export function fenceFor(text: string): string {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return '`'.repeat(Math.max(3, longest + 1));
}
