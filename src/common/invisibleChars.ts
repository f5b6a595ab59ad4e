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

type InvisibleKind = 'bidi' | 'invisible' | 'control';

export interface InvisibleMark {
  /** Where in the text (UTF-16 offset) and how many code units (2 for an astral character). */
  index: number;
  length: number;
  codePoint: number;
  /** How many times the character repeats here (a run of one character is one mark). */
  count: number;
  kind: InvisibleKind;
  /** `<U+202E>` (`<U+200B×3>` for a run): what is shown instead of the character. */
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
const ONE =
  // eslint-disable-next-line no-misleading-character-class
  /^[\p{Cf}\p{Cc}\p{Zl}\p{Zp}\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2065\u2800\u3164\ufe00-\ufe0f\uffa0\u{1d159}\u{1d173}-\u{1d17a}\u{e0000}-\u{e0fff}]$/u;
const MARKERS = new Map<number, string>();
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

/** `<U+202E>`, or `<U+200B×3>` for a run of the same character. */
export function invisibleMarker(cp: number, count = 1): string {
  let m = MARKERS.get(cp);
  if (m === undefined) {
    m = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
    if (MARKERS.size < 4096) MARKERS.set(cp, m);
  }
  return count > 1 ? `<${m}×${count}>` : `<${m}>`;
}

const DESCRIPTIONS = new Map<number, { kind: InvisibleKind; title: string }>();

function describe(cp: number): { kind: InvisibleKind; title: string } {
  let d = DESCRIPTIONS.get(cp);
  if (!d) {
    d = describeOnce(cp);
    if (DESCRIPTIONS.size < 4096) DESCRIPTIONS.set(cp, d);
  }
  return d;
}

function describeOnce(cp: number): { kind: InvisibleKind; title: string } {
  if (BIDI.has(cp)) return { kind: 'bidi', title: `${NAMES[cp]}: a bidirectional control, it reorders how the text around it is shown` };
  const name = NAMES[cp];
  if (name) return { kind: 'invisible', title: `${name}: an invisible character` };
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return { kind: 'control', title: 'A control character' };
  if (cp >= 0xe0000 && cp <= 0xe0fff) {
    return {
      kind: 'invisible',
      title:
        cp >= 0xe0100 && cp <= 0xe01ef ? 'A variation selector: invisible, it can carry hidden data' : 'A tag character: invisible, it can spell hidden text',
    };
  }
  if (isVariationSelector(cp)) return { kind: 'invisible', title: 'A variation selector: invisible here' };
  return { kind: 'invisible', title: 'An invisible formatting character' };
}

/** A run of one invisible character: where it starts, how many code units it spans, how many times it repeats. */
interface Run {
  index: number;
  length: number;
  cp: number;
  count: number;
}

/**
 * Calls `each` for every run of a character of `text` shown as a marker (the same character repeated is
 * one run), in order, until it returns false. `prev`: the code point just before `text` (a stream's).
 */
function scan(text: string, each: (run: Run) => boolean | void, prev?: number): void {
  let run: Run | undefined;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f) continue; // printable ASCII: most of any text
    let cp = c;
    let len = 1;
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        cp = (c - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000;
        len = 2;
      }
    }
    if (isCandidate(cp) && revealed(cp, i === 0 ? prev : previousCodePoint(text, i))) {
      if (run && run.cp === cp && run.index + run.length === i) {
        run.length += len;
        run.count++;
      } else {
        if (run && each(run) === false) return;
        run = { index: i, length: len, cp, count: 1 };
      }
    }
    i += len - 1;
  }
  if (run) each(run);
}

/** Candidates of the Basic Multilingual Plane, looked up once each: 0 not yet, 1 no, 2 yes. */
const BMP = new Uint8Array(0x10000);

function isCandidate(cp: number): boolean {
  if (cp < 0xa0) return cp < 0x20 || cp >= 0x7f;
  if (cp > 0xffff) return ONE.test(String.fromCodePoint(cp));
  let known = BMP[cp];
  if (!known) BMP[cp] = known = ONE.test(String.fromCharCode(cp)) ? 2 : 1;
  return known === 2;
}

function mark(run: Run): InvisibleMark {
  return { index: run.index, length: run.length, codePoint: run.cp, count: run.count, marker: invisibleMarker(run.cp, run.count), ...describe(run.cp) };
}

/** Every run of a character of `text` shown as a marker, in order (at most `max` runs). */
export function findInvisible(text: string, max = Number.POSITIVE_INFINITY): InvisibleMark[] {
  const out: InvisibleMark[] = [];
  scan(text, (run) => {
    out.push(mark(run));
    return out.length < max;
  });
  return out;
}

/**
 * The marks of `text` between `from` and `to` (indexes in `text`), read as a part of the whole: the
 * character before `from` counts as it does in {@link findInvisible} of all of `text`.
 */
export function findInvisibleIn(text: string, from: number, to: number): InvisibleMark[] {
  const out: InvisibleMark[] = [];
  scan(text.slice(from, to), (run) => void out.push(mark({ ...run, index: run.index + from })), previousCodePoint(text, from));
  return out;
}

/** Does `text` hold a character that {@link revealInvisible} would show as a marker? */
export function hasInvisible(text: string): boolean {
  let found = false;
  scan(text, () => ((found = true), false));
  return found;
}

/** How many invisible characters `text` holds, and how many of them are bidirectional controls. */
export function countInvisible(text: string): { total: number; bidi: number } {
  let total = 0;
  let bidi = 0;
  scan(text, (run) => {
    total += run.count;
    if (BIDI.has(run.cp)) bidi += run.count;
  });
  return { total, bidi };
}

function reveal(text: string, prev?: number, stopAt = text.length): { out: string; end: number } {
  const parts: string[] = [];
  let at = 0;
  scan(
    text,
    (run) => {
      if (run.index >= stopAt) return false;
      if (run.index > at) parts.push(text.slice(at, run.index));
      parts.push(invisibleMarker(run.cp, run.count));
      at = run.index + run.length;
    },
    prev,
  );
  if (at < stopAt) parts.push(text.slice(at, stopAt));
  return { out: parts.join(''), end: stopAt };
}

/** `text` with each invisible character replaced by its marker (`a<U+202E>b`): for a terminal, a tooltip, a dialog. */
export function revealInvisible(text: string): string {
  return hasInvisible(text) ? reveal(text).out : text;
}

/** `text` split into plain runs and marks, in order: for a renderer that styles the marks. */
export function splitInvisible(text: string): Array<string | InvisibleMark> {
  const out: Array<string | InvisibleMark> = [];
  let at = 0;
  scan(text, (run) => {
    if (run.index > at) out.push(text.slice(at, run.index));
    out.push(mark(run));
    at = run.index + run.length;
  });
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** A stream holds back a trailing run of one invisible character up to this many code units. */
const HOLD_MAX = 64 * 1024;

/**
 * Where the settled part of a stream's `text` (so far) ends, given its last mark: what comes after may
 * still change with the next chunk. That is a trailing high surrogate (its pair may follow) and a
 * trailing run of one invisible character (it may go on; a run of 64 K code units or more is settled and
 * shown in more than one marker).
 */
export function settledEnd(text: string, last: { index: number; length: number } | undefined): number {
  let stop = text.length;
  const c = text.charCodeAt(stop - 1);
  if (c >= 0xd800 && c <= 0xdbff) stop--;
  if (last && last.index + last.length === stop && stop - last.index < HOLD_MAX) stop = last.index;
  return stop;
}

/**
 * {@link revealInvisible} for a stream (the code as the model writes it): the character before each chunk
 * is remembered, and a chunk that ends inside a surrogate pair or in a run of one invisible character
 * keeps that end for the next chunk, so the result is the same however the text is cut (a run longer
 * than 64 K code units is shown in more than one marker).
 */
export class InvisibleRevealer {
  private held = '';
  private prev: number | undefined;

  write(chunk: string): string {
    const text = this.held + chunk;
    let tail: Run | undefined;
    scan(text, (run) => void (tail = run), this.prev);
    const stop = settledEnd(text, tail);
    const { out } = reveal(text, this.prev, stop);
    this.held = text.slice(stop);
    if (stop > 0) this.prev = previousCodePoint(text, stop);
    return out;
  }

  /** The end of the stream: what is held, revealed. */
  end(): string {
    const { out } = reveal(this.held, this.prev);
    this.held = '';
    return out;
  }
}
