/**
 * The readable text of an HTML error page (a hub's or a proxy's), for error messages: no markup, no
 * script or style, entities decoded, whitespace collapsed to one line. A linear scan (indexOf, no
 * backtracking regex) over a bounded prefix of the input, so any page is cheap to read.
 */

/** Only the start of a page is read. */
const MAX_INPUT = 256 * 1024;
/** Elements whose content is not text a reader sees. */
const HIDDEN = new Set(['script', 'style', 'head', 'template', 'noscript', 'svg', 'iframe', 'object']);
const NAMED: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  times: '×',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  copy: '©',
};

/** True when a body is an HTML page (by its content type, or by how it starts). */
export function isHtml(body: string, contentType?: string | null): boolean {
  if (contentType && /\btext\/html\b|application\/xhtml/i.test(contentType)) return true;
  return /^\s*(?:<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(body.slice(0, 512));
}

/** The text of an HTML page on one line, at most `maxLength` characters (an ellipsis marks a cut). */
export function htmlToText(html: string, maxLength = 500): string {
  const s = html.slice(0, MAX_INPUT);
  const lower = s.toLowerCase();
  const parts: string[] = [];
  let size = 0;
  let i = 0;
  const push = (text: string): void => {
    parts.push(text);
    size += text.length;
  };
  while (i < s.length && size <= maxLength * 4) {
    const lt = s.indexOf('<', i);
    if (lt < 0) {
      push(s.slice(i));
      break;
    }
    push(s.slice(i, lt));
    if (lower.startsWith('<!--', lt)) {
      const end = lower.indexOf('-->', lt + 4);
      i = end < 0 ? s.length : end + 3;
      continue;
    }
    const gt = s.indexOf('>', lt + 1);
    if (gt < 0) break; // an unterminated tag: the rest is markup
    const name = /^<\/?\s*([a-z][a-z0-9-]*)/.exec(lower.slice(lt, Math.min(gt + 1, lt + 40)))?.[1];
    const closing = lower[lt + 1] === '/';
    i = gt + 1;
    if (name && !closing && HIDDEN.has(name) && lower[gt - 1] !== '/') {
      const end = lower.indexOf(`</${name}`, i);
      const endGt = end < 0 ? -1 : lower.indexOf('>', end);
      i = endGt < 0 ? s.length : endGt + 1;
    }
    push(' ');
  }
  const text = decodeEntities(parts.join('')).replace(/\s+/g, ' ').trim();
  return text.length > maxLength ? `${text.slice(0, maxLength - 1).trimEnd()}…` : text;
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8});/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED[ref.toLowerCase()] ?? whole;
  });
}
