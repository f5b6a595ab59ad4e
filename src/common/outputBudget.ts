/**
 * The output budget: how much of an observation the model reads (codeact.outputs.modelChars). A text over
 * its budget keeps its beginning and its end (40/60, cut at line ends where it can), with one note in the
 * middle that says exactly how many characters and lines were left out, and where the whole text is. The
 * parts of one execution (stdout, stderr, the error, the displays' text, the value) share one budget:
 * parts smaller than their fair share keep everything, and what they leave goes to the larger ones.
 *
 * The cut is made once, when the result is stored (core/agent/executionResult.ts); every protocol sends
 * that text.
 */

/** The default of codeact.outputs.modelChars (src/core/config/keys.ts reads it here). */
export const DEFAULT_OUTPUT_CHARS = 20_000;
/** The smallest budget a setting may give (room for a note and a little text on each side). */
export const MIN_OUTPUT_CHARS = 1000;
/** Share of a cut text's room that goes to its beginning; the end gets the rest. */
const HEAD_SHARE = 0.4;
/** How far back (or forward) from the cut point a line end may be, as a share of that side. */
const SNAP_SHARE = 0.5;

/** What was left out of a text: characters (UTF-16 code units, as JavaScript counts) and line breaks. */
interface Omitted {
  chars: number;
  lines: number;
}

/** The note that stands where the middle was left out. */
type CutNote = (omitted: Omitted) => string;

function countLines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** "41,234 characters (812 lines)". */
export function omittedText(o: Omitted): string {
  return `${o.chars.toLocaleString('en-US')} character${o.chars === 1 ? '' : 's'} (${o.lines.toLocaleString('en-US')} line${o.lines === 1 ? '' : 's'})`;
}

/**
 * The text within `max` characters: whole, or its beginning and end around `note`. The note is counted
 * in `max`; the counts it gets are exact. Line breaks left out are counted as lines: when both cuts fall
 * at line ends (as they do unless a line is very long) that is the number of whole lines left out.
 */
export function headTail(text: string, max: number, note: CutNote): string {
  if (text.length <= max) return text;
  // The note's longest form bounds its length (no more lines than characters can be left out).
  const room = Math.max(0, max - note({ chars: text.length, lines: text.length }).length - 2);
  const headRoom = Math.floor(room * HEAD_SHARE);
  const tailRoom = room - headRoom;
  let h = headRoom;
  const nl = h > 0 ? text.lastIndexOf('\n', h - 1) : -1;
  if (nl >= 0 && nl + 1 >= h - headRoom * SNAP_SHARE) h = nl + 1;
  else if (h > 0 && isHigh(text.charCodeAt(h - 1))) h--;
  let t = text.length - tailRoom;
  const next = text.indexOf('\n', t - 1);
  if (next >= 0 && next + 1 <= t + tailRoom * SNAP_SHARE) t = next + 1;
  else if (t < text.length && isLow(text.charCodeAt(t))) t++;
  if (t < h) t = h;
  const head = text.slice(0, h);
  const tail = text.slice(t);
  const middle = note({ chars: t - h, lines: countLines(text, h, t) });
  return `${head}${head && !head.endsWith('\n') && !middle.startsWith('\n') ? '\n' : ''}${middle}${tail && !middle.endsWith('\n') ? '\n' : ''}${tail}`;
}

/**
 * Splits `budget` among parts of the given sizes: a part that fits in an equal share of what is left
 * keeps its size, the rest share the remainder equally. The allocations add up to at most `budget`.
 */
export function shareBudget(sizes: readonly number[], budget: number): number[] {
  const alloc = sizes.map(() => 0);
  let left = Math.max(0, Math.floor(budget));
  let open = sizes.map((_, i) => i).filter((i) => sizes[i] > 0);
  while (open.length) {
    const share = Math.floor(left / open.length);
    const fit = open.filter((i) => sizes[i] <= share);
    if (!fit.length) {
      for (const i of open) alloc[i] = share;
      break;
    }
    for (const i of fit) {
      alloc[i] = sizes[i];
      left -= sizes[i];
    }
    open = open.filter((i) => sizes[i] > share);
  }
  return alloc;
}

/** The note inside a cut part of an execution's result. `where` tells the model how to read the rest. */
export function partNote(what: string, where: string): CutNote {
  return (o) => `…[codeact: ${omittedText(o)} of ${what} left out here${where ? `; ${where}` : ''}]…\n`;
}
