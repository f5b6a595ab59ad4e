/**
 * An HTML page as the text a person reads, for error messages: a proxy's "502 Bad Gateway" page, a
 * JupyterHub error page. Bounded and linear: at most `MAX_SCAN` characters of the input are looked at,
 * one pass with `indexOf` (no backtracking regex), and the result is at most `max` characters.
 */

/** How much of a page is read. */
const MAX_SCAN = 64 * 1024;

/** Elements whose content is not text a person reads. */
const SKIPPED = ['script', 'style', 'head', 'noscript', 'template', 'svg'];

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };

/** Whether `s` looks like HTML markup (a page or a fragment of one), not text that happens to hold a `<`. */
export function looksLikeHtml(s: string): boolean {
  return /^\s*(?:<!doctype\s+html|<html\b|<head\b|<body\b|<title\b|<h[1-6]\b|<p\b|<center\b|<div\b|<pre\b|<!--)/i.test(s.slice(0, 512));
}

/**
 * The text of an HTML page or fragment: tags dropped, `<head>` (except its `<title>`), scripts and styles
 * skipped, entities decoded, whitespace collapsed, the title not repeated when the body starts with it.
 * At most `max` characters, with "…" when cut.
 */
export function htmlToText(html: string, max = 300): string {
  const src = html.length > MAX_SCAN ? html.slice(0, MAX_SCAN) : html;
  const lower = src.toLowerCase();
  let title = '';
  const t0 = lower.indexOf('<title');
  if (t0 >= 0) {
    const open = lower.indexOf('>', t0);
    const close = open >= 0 ? lower.indexOf('</title', open) : -1;
    if (close > open) title = squash(decode(src.slice(open + 1, close)));
  }
  const out: string[] = [];
  let i = 0;
  while (i < src.length) {
    const lt = src.indexOf('<', i);
    if (lt < 0) {
      out.push(src.slice(i));
      break;
    }
    out.push(src.slice(i, lt));
    if (lower.startsWith('<!--', lt)) {
      const end = lower.indexOf('-->', lt + 4);
      i = end < 0 ? src.length : end + 3;
      continue;
    }
    const gt = src.indexOf('>', lt + 1);
    if (gt < 0) break; // a cut tag: nothing after it is text
    const name = /^<\/?\s*([a-z][a-z0-9-]*)/.exec(lower.slice(lt, Math.min(gt + 1, lt + 40)))?.[1] ?? '';
    i = gt + 1;
    if (lower[lt + 1] !== '/' && SKIPPED.includes(name) && lower[gt - 1] !== '/') {
      const end = lower.indexOf(`</${name}`, i);
      i = end < 0 ? src.length : Math.max(i, lower.indexOf('>', end) + 1 || src.length);
    }
    out.push(' ');
  }
  let text = squash(decode(out.join('')));
  if (title && !text.startsWith(title)) text = text ? `${title}: ${text}` : title;
  return text.length > max ? `${text.slice(0, Math.max(0, max - 1)).trimEnd()}…` : text;
}

function decode(s: string): string {
  return s.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8}|#39);/gi, (m, e: string) => {
    const k = e.toLowerCase();
    if (k.startsWith('#x') || /^#[0-9]/.test(k)) {
      const code = k.startsWith('#x') ? parseInt(k.slice(2), 16) : parseInt(k.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
    }
    return ENTITIES[k] ?? m;
  });
}

function squash(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}
