/**
 * Reading rich outputs (`DisplayOutput`, the IPython display protocol's MIME bundles) the same way
 * everywhere: which MIME type to show, the raster image of a display, its pixel size, and the compact text
 * the model reads for it. Pure functions over plain data: no Node, no DOM (the panel, the CLI, the notebook
 * export and the providers' history builders all use them).
 */
import { checkImagePixels, imageSize } from './imageHeader';
import { headTail, partNote } from './outputBudget';
import type { CodeInterpreterCallItem, CodeOutput, DisplayOutput } from './events';

/** Raster image types a browser and the vision models take. */
export const RASTER_MIMES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;

/** What the panel can draw, richest first (Jupyter's order, less what it cannot draw safely). */
const PANEL_MIME_ORDER = [
  'text/html',
  'text/markdown',
  'image/svg+xml',
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'text/latex',
  'application/json',
  'text/plain',
] as const;

function isDisplay(o: CodeOutput): o is DisplayOutput {
  return o.type === 'display';
}

/** The text of a MIME value: a string, or Jupyter's list of lines. */
export function mimeText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join('');
  return undefined;
}

/** The first type of `order` the bundle has a usable value for. */
export function preferredMime(data: Record<string, unknown>, order: readonly string[] = PANEL_MIME_ORDER): string | undefined {
  for (const mime of order) {
    if (!(mime in data)) continue;
    const v = data[mime];
    if (mime === 'application/json' || mime.endsWith('+json')) {
      if (v !== undefined) return mime;
    } else if (mimeText(v) !== undefined) return mime;
  }
  return undefined;
}

interface RasterImage {
  mime: (typeof RASTER_MIMES)[number];
  /** Base64, no whitespace. */
  data: string;
}

/** The raster image of a display (PNG first), if it has one. */
export function rasterImage(d: DisplayOutput): RasterImage | undefined {
  for (const mime of RASTER_MIMES) {
    const v = mimeText(d.data[mime]);
    if (v) return { mime, data: v.replace(/\s+/g, '') };
  }
  return undefined;
}

/** A data URL for the image of a display: raster, else SVG (shown as an image, never as inline SVG). */
export function displayImageUrl(d: DisplayOutput): string | undefined {
  const raster = rasterImage(d);
  if (raster) return `data:${raster.mime};base64,${raster.data}`;
  const svg = mimeText(d.data['image/svg+xml']);
  if (svg) return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
  return undefined;
}

export { imageSize };

/** Bytes a base64 string decodes to. */
export function base64Bytes(b64: string): number {
  const n = b64.length;
  const pad = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((n * 3) / 4) - pad);
}

/**
 * The display with every image its header does not allow (over `maxPixels`, or a header ./imageHeader does
 * not read) taken out before anything decodes it. When no image is left, the note that says why (declared
 * size, the cap, the setting) is its text/plain, so it stands where the image would have been.
 */
export function capDisplayImages(d: DisplayOutput, maxPixels: number): DisplayOutput {
  // A saved transcript may hold anything: a bundle that is not an object has no image to check.
  if (!d.data || typeof d.data !== 'object') return d;
  let data: Record<string, unknown> | undefined;
  const notes: string[] = [];
  for (const [mime, value] of Object.entries(d.data)) {
    if (!mime.startsWith('image/')) continue;
    const text = mimeText(value);
    if (text === undefined) continue;
    const check = checkImagePixels(mime, text, maxPixels);
    if (check.ok) continue;
    data ??= { ...d.data };
    delete data[mime];
    if (!notes.includes(check.note)) notes.push(check.note);
  }
  if (!data) return d;
  let metadata = d.metadata;
  if (metadata) {
    metadata = Object.fromEntries(Object.entries(metadata).filter(([k]) => k in data! || !k.startsWith('image/')));
    if (!Object.keys(metadata).length) metadata = undefined;
  }
  if (!Object.keys(data).some((m) => m.startsWith('image/'))) data['text/plain'] = notes.join('\n');
  const out: DisplayOutput = { ...d, data };
  if (metadata) out.metadata = metadata;
  else delete out.metadata;
  return out;
}

/** "640×480" when the size is known. */
export function sizeLabel(size: { width?: number; height?: number } | undefined): string {
  return size?.width && size?.height ? `${size.width}×${size.height}` : '';
}

const MODEL_TEXT_CAP = 4000;

/** A display's text within `cap` characters (the note counted): its beginning and end, as every output the model reads. */
function capped(text: string, cap: number): string {
  return headTail(text, cap, partNote('this display', 'the user sees all of it'));
}

/**
 * What the model reads for a display, as text: the compact summary (a table's shape, columns and head), else
 * markdown, plain text or LaTeX; an image or HTML without text says what the user was shown. Never HTML.
 */
export function displayModelText(d: DisplayOutput, cap = MODEL_TEXT_CAP): string {
  if (typeof d.summary === 'string' && d.summary) return capped(d.summary, cap);
  const raster = rasterImage(d);
  if (raster) {
    const size = sizeLabel(imageSize(raster.mime, raster.data));
    return `[image${size ? ` ${size}` : ''}, ${raster.mime.slice(6).toUpperCase()}]`;
  }
  if (mimeText(d.data['image/svg+xml']) !== undefined) return '[SVG image]';
  for (const mime of ['text/markdown', 'text/plain', 'text/latex']) {
    const t = mimeText(d.data[mime]);
    if (t !== undefined) return capped(t, cap);
  }
  const json = d.data['application/json'];
  if (json !== undefined) {
    let text: string;
    try {
      text = JSON.stringify(json);
    } catch {
      text = String(json);
    }
    return capped(text ?? 'null', cap);
  }
  if (mimeText(d.data['text/html']) !== undefined) return '[HTML output shown to the user]';
  const types = Object.keys(d.data).slice(0, 5);
  return `[a display of ${types.length ? types.join(', ') : 'no data'}]`;
}

/** The displays of an execution, in order. */
export function displaysOf(item: CodeInterpreterCallItem): DisplayOutput[] {
  return (item.outputs ?? []).filter(isDisplay);
}

/** How many images an execution showed: raster and SVG displays, and hosted sandboxes' images. */
export function imageCount(item: CodeInterpreterCallItem): number {
  let n = 0;
  for (const o of item.outputs ?? []) {
    if (o.type === 'image') n++;
    else if (o.type === 'display' && (rasterImage(o) || mimeText(o.data['image/svg+xml']) !== undefined)) n++;
  }
  return n;
}
