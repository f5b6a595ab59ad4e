/**
 * Characters a reader cannot see, or that change what the reader sees without being seen themselves:
 * bidirectional controls (Trojan Source, CVE-2021-42574), zero-width and other format characters, tag
 * characters (which can spell out hidden ASCII), variation selectors other than the one an emoji takes,
 * fillers that draw nothing, line and paragraph separators, and control characters other than tab,
 * newline and carriage return. Wherever a person decides on text (approval and code-review cards, code
 * cards, tool names, the CLI's tool and value lines), each one is shown as a visible marker, `<U+202E>`,
 * the way VS Code's editor shows them, instead of being passed through to do its work unseen.
 *
 * One place for the panel and the CLI. Pure, linear in the input, no Node and no DOM.
 */

export type InvisibleKind = 'bidi' | 'invisible' | 'control';

export interface InvisibleMark {
  /** Where in the text (UTF-16 offset) and how many code units (2 for an astral character). */
  index: number;
  length: number;
  codePoint: number;
  kind: InvisibleKind;
  /** `<U+202E>`: what is shown instead of the character. */
  marker: string;
  /** `RIGHT-TO-LEFT OVERRIDE: a bidirectional control, it reorders the text after it` (a tooltip). */
  title: string;
}

/**
 * Candidates, by Unicode property and by list: format characters (Cf: bidi controls, zero-width
 * characters, the BOM, the soft hyphen, tags), controls (Cc), line/paragraph separators, and the
 * characters that draw nothing although Unicode does not call them format characters (combining
 * grapheme joiner, Hangul fillers, Khmer vowel inherents, Mongolian selectors, the braille blank,
 * variation selectors, the unassigned rest of the tag block, musical-symbol formatting).
 */
// Combining characters listed one by one on purpose: each is a match of its own.
const CANDIDATE =
  // eslint-disable-next-line no-misleading-character-class
  /[\p{Cf}\p{Cc}\p{Zl}\p{Zp}\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2065\u2800\u3164\ufe00-\ufe0f\uffa0\u{1d159}\u{1d173}-\u{1d17a}\u{e0000}-\u{e0fff}]/gu;
const ONE = new RegExp(CANDIDATE.source, 'u');
const PICTOGRAPHIC = /^\p{Extended_Pictographic}$/u;

const BIDI = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);

const NAMES: Record<number, string> = {
  0x00ad: 'SOFT HYPHEN',
  0x034f: 'COMBINING GRAPHEME JOINER',
  0x061c: 'ARABIC LETTER MARK',
  0x115f: 'HANGUL CHOSEONG FILLER',
  0x1160: 'HANGUL JUNGSEONG FILLER',
  0x180e: 'MONGOLIAN VOWEL SEPARATOR',
  0x200b: 'ZERO WIDTH SPACE',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x2028: 'LINE SEPARATOR',
  0x2029: 'PARAGRAPH SEPARATOR',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2061: 'FUNCTION APPLICATION',
  0x2062: 'INVISIBLE TIMES',
  0x2063: 'INVISIBLE SEPARATOR',
  0x2064: 'INVISIBLE PLUS',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0x2800: 'BRAILLE PATTERN BLANK',
  0x3164: 'HANGUL FILLER',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE (BOM)',
  0xffa0: 'HALFWIDTH HANGUL FILLER',
};

function isVariationSelector(cp: number): boolean {
  return (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xe0100 && cp <= 0xe01ef) || (cp >= 0x180b && cp <= 0x180d) || cp === 0x180f;
}

/** The code point that ends just before `index` (undefined at the start). */
function previousCodePoint(text: string, index: number): number | undefined {
  if (index <= 0) return undefined;
  const low = text.charCodeAt(index - 1);
  if (low >= 0xdc00 && low <= 0xdfff && index >= 2) {
    const high = text.charCodeAt(index - 2);
    if (high >= 0xd800 && high <= 0xdbff) return text.codePointAt(index - 2);
  }
  return low;
}

/**
 * Is `cp` (a candidate) shown as a marker, given the code point before it? Three are left alone because
 * they belong to what is visible: tab, newline and carriage return; one emoji variation selector
 * (U+FE00–FE0F) directly after a visible character; a zero-width joiner inside an emoji sequence (after a
 * pictograph, a skin tone or U+FE0F).
 */
function revealed(cp: number, prev: number | undefined): boolean {
  if (cp === 0x09 || cp === 0x0a || cp === 0x0d) return false;
  if (cp >= 0xfe00 && cp <= 0xfe0f) {
    return prev === undefined || prev === 0x0a || isVariationSelector(prev) || ONE.test(String.fromCodePoint(prev));
  }
  if (cp === 0x200d && prev !== undefined) {
    return !(PICTOGRAPHIC.test(String.fromCodePoint(prev)) || (prev >= 0x1f3fb && prev <= 0x1f3ff) || prev === 0xfe0f);
  }
  return true;
}

export function invisibleMarker(cp: number): string {
  return `<U+${cp.toString(16).toUpperCase().padStart(4, '0')}>`;
}

function describe(cp: number): { kind: InvisibleKind; title: string } {
  if (BIDI.has(cp)) return { kind: 'bidi', title: `${NAMES[cp]}: a bidirectional control, it reorders how the text around it is shown` };
  const name = NAMES[cp];
  if (name) return { kind: 'invisible', title: `${name}: an invisible character` };
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return { kind: 'control', title: 'A control character' };
  if (cp >= 0xe0000 && cp <= 0xe0fff) {
    return { kind: 'invisible', title: cp >= 0xe0100 && cp <= 0xe01ef ? 'A variation selector: invisible, it can carry hidden data' : 'A tag character: invisible, it can spell hidden text' };
  }
  if (isVariationSelector(cp)) return { kind: 'invisible', title: 'A variation selector: invisible here' };
  return { kind: 'invisible', title: 'An invisible formatting character' };
}

/** Every character of `text` that is shown as a marker, in order (at most `max`; the rest are not listed). */
export function findInvisible(text: string, max = Number.POSITIVE_INFINITY): InvisibleMark[] {
  const out: InvisibleMark[] = [];
  if (!text) return out;
  CANDIDATE.lastIndex = 0;
  for (let m = CANDIDATE.exec(text); m && out.length < max; m = CANDIDATE.exec(text)) {
    const cp = m[0].codePointAt(0)!;
    if (!revealed(cp, previousCodePoint(text, m.index))) continue;
    out.push({ index: m.index, length: m[0].length, codePoint: cp, marker: invisibleMarker(cp), ...describe(cp) });
  }
  CANDIDATE.lastIndex = 0;
  return out;
}

/** Does `text` hold a character that {@link revealInvisible} would show as a marker? */
export function hasInvisible(text: string): boolean {
  return findInvisible(text, 1).length > 0;
}

/** How many invisible characters `text` holds, and how many of them are bidirectional controls. */
export function countInvisible(text: string): { total: number; bidi: number } {
  let bidi = 0;
  const all = findInvisible(text);
  for (const m of all) if (m.kind === 'bidi') bidi++;
  return { total: all.length, bidi };
}

/** `text` with each invisible character replaced by its marker (`a<U+202E>b`): for a terminal, a tooltip, a dialog. */
export function revealInvisible(text: string): string {
  const marks = findInvisible(text);
  if (!marks.length) return text;
  let out = '';
  let at = 0;
  for (const m of marks) {
    out += text.slice(at, m.index) + m.marker;
    at = m.index + m.length;
  }
  return out + text.slice(at);
}

/** `text` split into plain runs and marks, in order: for a renderer that styles the marks. */
export function splitInvisible(text: string): Array<string | InvisibleMark> {
  const marks = findInvisible(text);
  if (!marks.length) return text ? [text] : [];
  const out: Array<string | InvisibleMark> = [];
  let at = 0;
  for (const m of marks) {
    if (m.index > at) out.push(text.slice(at, m.index));
    out.push(m);
    at = m.index + m.length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/**
 * {@link revealInvisible} for a stream (the code as the model writes it): a chunk that ends inside a
 * surrogate pair keeps its last half for the next chunk, and the character before each chunk is
 * remembered, so the result is the same however the text is cut.
 */
export class InvisibleRevealer {
  private held = '';
  private before = '';

  write(chunk: string): string {
    let text = this.held + chunk;
    this.held = '';
    const last = text.charCodeAt(text.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      this.held = text.slice(-1);
      text = text.slice(0, -1);
    }
    if (!text) return '';
    const context = this.before;
    const revealedText = revealInvisible(context + text).slice(revealInvisible(context).length);
    const prev = previousCodePoint(text, text.length);
    this.before = prev === undefined ? '' : String.fromCodePoint(prev);
    return revealedText;
  }

  /** What is held at the end of the stream (half a surrogate pair), revealed as it is. */
  end(): string {
    const rest = this.held;
    this.held = '';
    return rest ? revealInvisible(rest) : '';
  }
}
