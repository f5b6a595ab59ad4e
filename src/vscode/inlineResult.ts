/**
 * What "Run with Tools" shows of a finished execution in the editor, as plain data (no `vscode` here, so it is
 * tested in plain mocha): the after-line text ("✓ 42 · 1 image · 12 ms") and the hover's parts: the images
 * the code showed (data-URL markdown images, sized down to 320×200 px, within a byte budget), stdout, stderr,
 * the files it wrote, the value and the error. Untrusted text only ever goes in code blocks; an image goes in only as
 * base64 we checked, so nothing from the code can add a link, HTML or a command to the hover. That text, and the
 * after-line text, show invisible and bidirectional characters as markers (`<U+202E>`: ../common/untrusted).
 */
import { parseDataUrl, textToBase64 } from '../common/dataUrl';
import { displayImageOf, imageSize, sizeLabel } from '../common/displays';
import { isBinary, isImage } from '../common/mimeTypes';
import { checkImagePixels, DEFAULT_MAX_IMAGE_PIXELS } from '../common/imageHeader';
import { logsOf, type CodeInterpreterCallItem } from '../common/events';
import { clip, formatElapsed } from '../common/format';
import { approxBytes, fileLabel, filesOf, outputCountsLabel } from '../common/outputLabels';
import { forDisplay } from '../common/untrusted';

/** Widest an image is drawn in the hover, in CSS pixels (VS Code's hover is ~500 px wide). */
const HOVER_IMAGE_WIDTH = 320;
/** Tallest, so that a plot and the hover's first line fit in its 250 px without scrolling. */
const HOVER_IMAGE_HEIGHT = 200;
/** Most images drawn in one hover. */
const HOVER_MAX_IMAGES = 3;
/** Most characters of data URLs in one hover (the hover's markdown crosses to the renderer and is parsed there). */
export const HOVER_IMAGE_CHARS = 1_000_000;
const CLIP = 4000;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export type HoverPart = { kind: 'markdown'; text: string } | { kind: 'code'; text: string; language: string };

/** The after-line text of a finished run: value or ✓/✗, what it showed and wrote, and how long it took. */
export function inlineSummary(item: CodeInterpreterCallItem): string {
  const took = item.duration_ms === undefined ? '' : formatElapsed(item.duration_ms);
  const counts = outputCountsLabel(item);
  let head: string;
  if (item.status === 'completed') {
    const v = item.value === null || item.value === undefined ? '' : JSON.stringify(item.value);
    head = v ? `✓ ${forDisplay(clip(v, 78), { line: true })}` : '✓';
  } else {
    const e = item.error;
    head = `✗ ${forDisplay(e?.type ?? 'Error', { line: true })}: ${forDisplay((e?.message ?? '').split('\n')[0].slice(0, 100), { line: true })}`;
  }
  const rest = [counts, took].filter(Boolean).join(' · ');
  if (!rest) return head;
  return head === '✓' && counts ? `✓ ${rest}` : `${head} · ${rest}`;
}

interface HoverImage {
  url: string;
  /** Width to draw it at (CSS px). */
  width: number;
  label: string;
}

/** The images of an execution as data URLs we built from checked base64 (raster and SVG; remote URLs left out). */
function imagesOf(item: CodeInterpreterCallItem, maxPixels: number): Array<HoverImage | { label: string; note: string }> {
  const out: Array<HoverImage | { label: string; note: string }> = [];
  let n = 0;
  for (const o of item.outputs ?? []) {
    let mime: string | undefined;
    let base64: string | undefined;
    let width: number | undefined;
    let height: number | undefined;
    if (o.type === 'display') {
      const shown = displayImageOf(o);
      if (!shown) continue;
      [mime, base64] = [shown.mime, isBinary(shown.mime) ? shown.data : textToBase64(shown.data)];
      // The display's own width (a HiDPI plot says half its pixel width), else the image's.
      const meta = (o.metadata?.[mime] ?? {}) as { width?: unknown; height?: unknown };
      if (typeof meta.width === 'number' && meta.width > 0) width = meta.width;
      if (typeof meta.height === 'number' && meta.height > 0) height = meta.height;
    } else if (o.type === 'image') {
      const url = parseDataUrl(o.url);
      n++;
      if (!url || !isImage(url.mime)) {
        out.push({ label: `image ${n}`, note: 'at a remote address (not loaded here)' });
        continue;
      }
      [mime, base64] = [url.mime, url.base64];
    } else continue;
    if (o.type === 'display') n++;
    const size = imageSize(mime, base64);
    const label = `image ${n}${sizeLabel(size) ? `, ${sizeLabel(size)}` : ''}`;
    if (!BASE64.test(base64) || !/^image\/[a-z0-9.+-]+$/.test(mime)) {
      out.push({ label, note: 'not a valid image' });
      continue;
    }
    // The hover decodes it: its header within the pixel cap first.
    const pixels = checkImagePixels(mime, base64, maxPixels);
    if (!pixels.ok) {
      out.push({ label, note: pixels.note });
      continue;
    }
    // Only a width is given (the height follows the image's own ratio): no wider than 320 px, no taller than 200.
    const w = width ?? size?.width;
    const h = width ? height : size?.height;
    const fit = w && h ? (HOVER_IMAGE_HEIGHT * w) / h : HOVER_IMAGE_WIDTH;
    width = Math.max(1, Math.round(Math.min(HOVER_IMAGE_WIDTH, w ?? HOVER_IMAGE_WIDTH, fit)));
    out.push({ url: `data:${mime};base64,${base64}`, width, label });
  }
  return out;
}

/** The markdown of the images, within the budget: the first ones that fit, then a note for the rest. */
function imageMarkdown(item: CodeInterpreterCallItem, maxPixels: number): string {
  const images = imagesOf(item, maxPixels);
  if (!images.length) return '';
  const parts: string[] = [];
  let chars = 0;
  let drawn = 0;
  let left = 0;
  for (const img of images) {
    if (!('url' in img)) {
      parts.push(`*${img.label}: ${img.note}*`);
      continue;
    }
    if (drawn >= HOVER_MAX_IMAGES || chars + img.url.length > HOVER_IMAGE_CHARS) {
      if (drawn === 0 && left === 0)
        parts.push(`*${img.label} (${approxBytes(Math.floor((img.url.length * 3) / 4))}) is too large for the hover: it is in the CodeAct panel*`);
      else left++;
      continue;
    }
    // VS Code's markdown takes a size after "|" in an image's address; the alt text is ours (numbers only).
    parts.push(`![${img.label}](${img.url}|width=${img.width})`);
    chars += img.url.length;
    drawn++;
  }
  if (left) parts.push(`*${left} more image${left === 1 ? '' : 's'} in the CodeAct panel*`);
  return parts.join('\n\n');
}

/** The hover of a finished run, as parts for a MarkdownString (markdown we wrote, code blocks for the rest). */
export function hoverParts(item: CodeInterpreterCallItem, maxImagePixels = DEFAULT_MAX_IMAGE_PIXELS): HoverPart[] {
  const parts: HoverPart[] = [];
  const md = (text: string) => parts.push({ kind: 'markdown', text });
  // Every code block holds text from outside.
  const code = (text: string, language = 'text') => parts.push({ kind: 'code', text: forDisplay(text), language });
  const took = item.duration_ms === undefined ? '' : ` · ${formatElapsed(item.duration_ms)}`;
  const sandbox = item.sandbox ? ` (${item.sandbox.kind})` : '';
  const counts = outputCountsLabel(item);
  md(`**CodeAct** · ${item.status === 'completed' ? 'completed' : 'failed'} · ${item.runtime}${sandbox}${took}${counts ? ` · ${counts}` : ''}\n\n`);
  const stdout = logsOf(item);
  const stderr = logsOf(item, 'stderr');
  const lastPart = (s: string) => (s.length > CLIP ? '…' + s.slice(-CLIP) : s);
  // The images first: what the person hovers for, in view without scrolling.
  const images = imageMarkdown(item, maxImagePixels);
  if (images) md(`${images}\n\n`);
  if (stdout) {
    md('stdout:');
    code(lastPart(stdout));
  }
  if (stderr) {
    md('stderr:');
    code(lastPart(stderr));
  }
  const files = filesOf(item);
  if (files.length) {
    const shown = files.slice(0, 20).map((f) => {
      const note = f.note;
      return `${fileLabel(f)}${note ? ` (${note})` : ''}`;
    });
    md('files:');
    code(lastPart(shown.join('\n') + (files.length > 20 ? `\n… ${files.length - 20} more` : '')));
  }
  if (item.status === 'completed') {
    md('value:');
    code(lastPart(JSON.stringify(item.value ?? null, null, 2)), 'json');
  }
  if (item.error) {
    md('error:');
    code(lastPart(item.error.traceback ?? `${item.error.type}: ${item.error.message}`));
  }
  return parts;
}
