/**
 * Reading rich outputs (`DisplayOutput`, the IPython display protocol's MIME bundles) the same way
 * everywhere: which MIME type to show, the raster image of a display, its pixel size, and the compact text
 * the model reads for it. Pure functions over plain data: no Node, no DOM (the panel, the CLI, the notebook
 * export and the providers' history builders all use them).
 */
import { checkImagePixels, imageSize } from './imageHeader';
import { bestFor, imageTypeName, isImage, mimeText, modelTextOf, VISION_MIMES, type PanelImageMime, type VisionMime } from './mimeTypes';
import { headTail, partNote } from './outputBudget';
import type { CodeInterpreterCallItem, CodeOutput, DisplayOutput } from './events';

function isDisplay(o: CodeOutput): o is DisplayOutput {
  return o.type === 'display';
}

interface RasterImage {
  mime: VisionMime;
  /** Base64, no whitespace. */
  data: string;
}

/** The raster image of a display (PNG first), if it has one. */
export function rasterImage(d: DisplayOutput): RasterImage | undefined {
  for (const mime of VISION_MIMES) {
    const v = mimeText(d.data[mime]);
    if (v) return { mime, data: v.replace(/\s+/g, '') };
  }
  return undefined;
}

/** The image of a display: its raster image (base64), else its SVG (the text, perhaps empty). */
export function displayImageOf(d: DisplayOutput): { mime: PanelImageMime; data: string } | undefined {
  const raster = rasterImage(d);
  if (raster) return raster;
  const svg = mimeText(d.data['image/svg+xml']);
  return svg === undefined ? undefined : { mime: 'image/svg+xml', data: svg };
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
    if (!isImage(mime)) continue;
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
    metadata = Object.fromEntries(Object.entries(metadata).filter(([k]) => k in data! || !isImage(k)));
    if (!Object.keys(metadata).length) metadata = undefined;
  }
  if (!Object.keys(data).some(isImage)) data['text/plain'] = notes.join('\n');
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
  const mime = bestFor('model', d.data);
  const how = mime && modelTextOf(mime);
  if (!mime || !how) {
    const types = Object.keys(d.data).slice(0, 5);
    return `[a display of ${types.length ? types.join(', ') : 'no data'}]`;
  }
  const value = d.data[mime];
  if (how === 'image') {
    const data = mimeText(value)!.replace(/\s+/g, '');
    const size = sizeLabel(imageSize(mime, data));
    return `[image${size ? ` ${size}` : ''}, ${imageTypeName(mime)}]`;
  }
  if (how === 'text') return capped(mimeText(value)!, cap);
  if (how === 'json') {
    let text: string;
    try {
      text = JSON.stringify(value);
    } catch {
      text = String(value);
    }
    return capped(text ?? 'null', cap);
  }
  return how;
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
    else if (o.type === 'display' && displayImageOf(o)) n++;
  }
  return n;
}
