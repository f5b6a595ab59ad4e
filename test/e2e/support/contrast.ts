/**
 * WCAG 2.x contrast of what a page shows, from the browser's computed styles: every visible text (and so
 * every badge, chip and button label) against the background it is painted on, with the backgrounds of its
 * ancestors composited (colour-mixed tints are translucent) and opacity applied. The page function runs in
 * the webview's frame (`frame.evaluate(textContrast)`); it is self-contained for that reason.
 */

export interface ContrastSample {
  /** `span.status-chip "Done"`: the element and the start of its text. */
  what: string;
  fg: string;
  bg: string;
  ratio: number;
  /** The ratio WCAG AA asks of this text: 4.5, or 3 for large text (24 px, or 18.66 px bold). */
  needed: number;
}

/** Every visible text run of the page (skipping disabled controls, which WCAG exempts), with its contrast. */
export function textContrast(): ContrastSample[] {
  type RGBA = [number, number, number, number];
  const parse = (c: string): RGBA | undefined => {
    let m = /^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)$/.exec(c);
    if (m) return [+m[1], +m[2], +m[3], m[4] === undefined ? 1 : m[4].endsWith('%') ? parseFloat(m[4]) / 100 : +m[4]];
    m = /^color\(srgb\s+([-\d.e]+)\s+([-\d.e]+)\s+([-\d.e]+)(?:\s*\/\s*([\d.]+%?))?\s*\)$/.exec(c);
    if (m) return [+m[1] * 255, +m[2] * 255, +m[3] * 255, m[4] === undefined ? 1 : m[4].endsWith('%') ? parseFloat(m[4]) / 100 : +m[4]];
    return undefined;
  };
  const over = (top: RGBA, bottom: RGBA): RGBA => {
    const a = top[3] + bottom[3] * (1 - top[3]);
    if (a === 0) return [0, 0, 0, 0];
    const ch = (i: number) => (top[i] * top[3] + bottom[i] * bottom[3] * (1 - top[3])) / a;
    return [ch(0), ch(1), ch(2), a];
  };
  const lum = (c: RGBA) => {
    const f = (v: number) => {
      const s = Math.min(255, Math.max(0, v)) / 255;
      return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const hex = (c: RGBA) => `#${[c[0], c[1], c[2]].map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')}`;
  /** The opaque colour behind `el`: its own background and its ancestors', composited, over the page's. */
  const backdrop = (el: Element): RGBA => {
    const layers: RGBA[] = [];
    for (let e: Element | null = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) {
        layers.push(c);
        if (c[3] >= 1) break;
      }
    }
    let base: RGBA =
      layers.length && layers[layers.length - 1][3] >= 1 ? layers.pop()! : (parse(getComputedStyle(document.body).backgroundColor) ?? [255, 255, 255, 1]);
    if (base[3] < 1) base = over(base, [255, 255, 255, 1]);
    for (let i = layers.length - 1; i >= 0; i--) base = over(layers[i], base);
    return base;
  };
  const opacity = (el: Element) => {
    let o = 1;
    for (let e: Element | null = el; e; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity || '1');
    return o;
  };
  const out: ContrastSample[] = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set<Element>();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || seen.has(el) || !(n.textContent ?? '').trim()) continue;
    seen.add(el);
    if (el.closest('script, style, noscript, option, .sr-only, [hidden]')) continue;
    if (el.closest('button:disabled, select:disabled, textarea:disabled, input:disabled')) continue;
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const style = getComputedStyle(el);
    const fg0 = parse(style.color);
    if (!fg0) continue;
    const bg = backdrop(el);
    const fg = over([fg0[0], fg0[1], fg0[2], fg0[3] * opacity(el)], bg);
    const [l1, l2] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = Math.round(((l1 + 0.05) / (l2 + 0.05)) * 100) / 100;
    const size = parseFloat(style.fontSize);
    const bold = parseInt(style.fontWeight, 10) >= 700;
    const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    const text = (n.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 30);
    const cls = Array.from(el.classList).slice(0, 3).join('.');
    out.push({ what: `${el.tagName.toLowerCase()}${cls ? `.${cls}` : ''} "${text}"`, fg: hex(fg), bg: hex(bg), ratio, needed });
  }
  return out;
}
