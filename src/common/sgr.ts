/**
 * Colours and text styles (SGR, `ESC [ … m`) from untrusted text, with what would hide text taken out:
 * conceal (SGR 8) is dropped, and a sequence after which the foreground and background colours are the
 * same, or too close to tell apart, gets both colours reset to the terminal's defaults (`39;49`). The
 * colours in force are kept across sequences (and can be shared by the streams of one terminal), so
 * `ESC[40m` now and `ESC[30m` later is caught too. The 8-colour, 16-colour, 256-colour and truecolor forms
 * (`38;5;n`, `38;2;r;g;b`, `38:2::r:g:b`) are compared as the colours they stand for.
 *
 * Limits: a colour set against the terminal's default background (which this cannot know) is left as is;
 * palette colours 0–15 are compared as xterm draws them.
 */

type Rgb = readonly [number, number, number];
/** A colour in force: a palette slot (0–255) or a truecolor; undefined is the terminal's default. */
type Colour = { slot: number } | { rgb: Rgb } | undefined;

export class SgrState {
  fg: Colour;
  bg: Colour;
  /** An SGR from untrusted text reached the terminal since the last {@link reset}. */
  dirty = false;

  reset(): void {
    this.fg = undefined;
    this.bg = undefined;
    this.dirty = false;
  }
}

const BASE16: Rgb[] = [
  [0, 0, 0],
  [205, 0, 0],
  [0, 205, 0],
  [205, 205, 0],
  [0, 0, 238],
  [205, 0, 205],
  [0, 205, 205],
  [229, 229, 229],
  [127, 127, 127],
  [255, 0, 0],
  [0, 255, 0],
  [255, 255, 0],
  [92, 92, 255],
  [255, 0, 255],
  [0, 255, 255],
  [255, 255, 255],
];
const CUBE = [0, 95, 135, 175, 215, 255];

function slotRgb(n: number): Rgb {
  if (n < 16) return BASE16[n];
  if (n < 232) {
    const i = n - 16;
    return [CUBE[Math.floor(i / 36)], CUBE[Math.floor(i / 6) % 6], CUBE[i % 6]];
  }
  const g = 8 + 10 * (n - 232);
  return [g, g, g];
}

function luminance([r, g, b]: Rgb): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** Would text in `fg` on `bg` be unreadable: the same palette slot, or colours too close to tell apart? */
function hidesText(fg: Colour, bg: Colour): boolean {
  if (!fg || !bg) return false;
  if ('slot' in fg && 'slot' in bg && fg.slot === bg.slot) return true;
  const a = 'slot' in fg ? slotRgb(fg.slot) : fg.rgb;
  const b = 'slot' in bg ? slotRgb(bg.slot) : bg.rgb;
  const [la, lb] = [luminance(a), luminance(b)];
  const ratio = (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
  const distance = Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
  return ratio < 1.3 && distance < 128;
}

const byte = (s: string | undefined) => {
  const n = Number(s ?? '');
  return Number.isInteger(n) && n >= 0 && n <= 255 ? n : undefined;
};

/** An extended colour (`5;n` or `2;r;g;b`, after 38/48/58) from its parts; undefined when malformed. */
function extended(parts: string[]): { colour: Colour; ok: boolean } {
  if (parts[0] === '5') {
    const n = byte(parts[1]);
    return n === undefined ? { colour: undefined, ok: false } : { colour: { slot: n }, ok: true };
  }
  if (parts[0] === '2') {
    const [r, g, b] = [byte(parts[1]), byte(parts[2]), byte(parts[3])];
    return r === undefined || g === undefined || b === undefined ? { colour: undefined, ok: false } : { colour: { rgb: [r, g, b] }, ok: true };
  }
  return { colour: undefined, ok: false };
}

/**
 * The parameters to send for one SGR (`params` is what stands between `ESC [` and `m`, digits, `;` and
 * `:` only), updating `state`; undefined when nothing is left to send. Unchanged sequences come back
 * exactly as they were.
 */
export function filterSgr(params: string, state: SgrState): string | undefined {
  const fields = params === '' ? ['0'] : params.split(';');
  const kept: string[] = [];
  let changed = false;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i];
    if (field.includes(':')) {
      const sub = field.split(':');
      const head = Number(sub[0]);
      if (head === 38 || head === 48) {
        // 38:5:n, 38:2:r:g:b, or 38:2:<colour space>:r:g:b.
        const rest = sub[1] === '2' && sub.length >= 6 ? ['2', ...sub.slice(3)] : sub.slice(1);
        const { colour } = extended(rest);
        if (head === 38) state.fg = colour;
        else state.bg = colour;
      }
      if (head === 8) {
        changed = true;
        continue;
      }
      kept.push(field);
      continue;
    }
    const n = field === '' ? 0 : Number(field);
    if (n === 38 || n === 48 || n === 58) {
      const mode = fields[i + 1];
      const take = mode === '5' ? 2 : mode === '2' ? 4 : 0;
      const parts = fields.slice(i + 1, i + 1 + take);
      const { colour, ok } = extended(parts);
      if (!ok) {
        // A broken extended colour: the rest of the sequence cannot be read safely; stop here.
        changed = true;
        break;
      }
      if (n === 38) state.fg = colour;
      else if (n === 48) state.bg = colour;
      kept.push(field, ...parts);
      i += take;
      continue;
    }
    if (n === 8) {
      changed = true;
      continue;
    }
    if (n === 0) state.fg = state.bg = undefined;
    else if (n === 39) state.fg = undefined;
    else if (n === 49) state.bg = undefined;
    else if (n >= 30 && n <= 37) state.fg = { slot: n - 30 };
    else if (n >= 90 && n <= 97) state.fg = { slot: n - 90 + 8 };
    else if (n >= 40 && n <= 47) state.bg = { slot: n - 40 };
    else if (n >= 100 && n <= 107) state.bg = { slot: n - 100 + 8 };
    kept.push(field);
  }
  if (hidesText(state.fg, state.bg)) {
    kept.push('39', '49');
    state.fg = state.bg = undefined;
    changed = true;
  }
  if (!changed) {
    state.dirty = true;
    return params;
  }
  if (!kept.length) return undefined;
  state.dirty = true;
  return kept.join(';');
}
