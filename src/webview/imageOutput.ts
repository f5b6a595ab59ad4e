/**
 * An image output (a raster display, or SVG shown as an `<img>` of a data URL, never as inline SVG): at its
 * natural size, capped to the card's width (a HiDPI plot at the size its metadata gives), space reserved
 * before it decodes. Clicking it opens it full size in an editor tab (the host writes it to a temporary file
 * and opens VS Code's image preview); its toolbar copies it (the clipboard of the page, as PNG) and saves it.
 */
import type { DisplayOutput } from '../common/events';
import { displayImageOf, displayImageUrl, imageSize, sizeLabel } from '../common/displays';
import { CLIPBOARD_IMAGE, extensionOf, imageTypeName, isRaster } from '../common/mimeTypes';
import type { ImageMime } from '../common/outputMessages';
import type { WebviewToHost } from '../common/protocol';
import { h } from './dom';
import { icon } from './icons';
import { iconButton } from './viewKit';

export interface ImageEnv {
  post(message: WebviewToHost): void;
  announce(text: string): void;
  /** The largest image drawn, in pixels from its header: a larger one is a note, never an `<img>`. */
  maxImagePixels(): number;
}

/** The image of a display: its MIME type and content (base64 for raster, the SVG text for SVG). */
interface DisplayImage {
  mime: ImageMime;
  data: string;
  url: string;
}

export function displayImage(d: DisplayOutput): DisplayImage | undefined {
  const url = displayImageUrl(d);
  if (!url) return undefined;
  const img = displayImageOf(d);
  return img && { ...img, url };
}

/** "plot-3.png": the default name of the n-th image of an execution. */
function imageFileName(n: number, mime: string): string {
  return `plot-${n}.${extensionOf(mime) ?? 'png'}`;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v > 0 && v < 100_000 ? Math.round(v) : undefined);

/** The size to show: the metadata's (a HiDPI image says its display size there), else the file's own. */
function displaySize(d: DisplayOutput, img: DisplayImage): { width: number; height: number } | undefined {
  const meta = d.metadata?.[img.mime];
  const mw = meta && typeof meta === 'object' ? num((meta as { width?: unknown }).width) : undefined;
  const mh = meta && typeof meta === 'object' ? num((meta as { height?: unknown }).height) : undefined;
  const own = isRaster(img.mime) ? imageSize(img.mime, img.data) : svgSize(img.data);
  if (mw && mh) return { width: mw, height: mh };
  if (own && own.width > 0 && own.height > 0) {
    if (mw) return { width: mw, height: Math.round((own.height * mw) / own.width) };
    if (mh) return { width: Math.round((own.width * mh) / own.height), height: mh };
    return own;
  }
  return undefined;
}

/** The width and height attributes of an SVG's root element, in px (read from its first 4 KB, no parse). */
function svgSize(svg: string): { width: number; height: number } | undefined {
  const head = /<svg\b[^>]{0,4000}>/i.exec(svg.slice(0, 4096))?.[0];
  if (!head) return undefined;
  const attr = (name: string) => {
    const m = new RegExp(`\\s${name}\\s*=\\s*["']\\s*([0-9.]{1,12})\\s*(px|pt)?\\s*["']`, 'i').exec(head);
    if (!m) return undefined;
    const v = Number(m[1]) * (m[2]?.toLowerCase() === 'pt' ? 4 / 3 : 1);
    return num(v);
  };
  const width = attr('width');
  const height = attr('height');
  return width && height ? { width, height } : undefined;
}

function base64Blob(b64: string, mime: string): Blob {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Blob([bytes], { type: mime });
}

/** The image as a PNG blob (the type every clipboard takes): PNG as it is, anything else drawn on a canvas. */
async function pngBlob(img: DisplayImage): Promise<Blob> {
  if (img.mime === CLIPBOARD_IMAGE) return base64Blob(img.data, CLIPBOARD_IMAGE);
  // A fresh element: the one shown may not have loaded yet (it loads lazily).
  const el = new Image();
  el.src = img.url;
  await el.decode();
  const w = el.naturalWidth || el.width;
  const hgt = el.naturalHeight || el.height;
  const canvas = document.createElement('canvas');
  // SVG is drawn at twice its size, so the copy stays sharp.
  const scale = isRaster(img.mime) ? 1 : 2;
  canvas.width = Math.max(1, Math.min(8192, w * scale));
  canvas.height = Math.max(1, Math.min(8192, hgt * scale));
  canvas.getContext('2d')?.drawImage(el, 0, 0, canvas.width, canvas.height);
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('the image could not be drawn'))), CLIPBOARD_IMAGE));
}

/** Copies the image to the clipboard (the page's own: VS Code's clipboard API takes text only). */
async function copyImage(img: DisplayImage): Promise<void> {
  if (typeof ClipboardItem === 'undefined' || !navigator.clipboard?.write) throw new Error('this window has no image clipboard');
  // The promise goes into the item: the clipboard is asked while the click still counts as the user's.
  await navigator.clipboard.write([new ClipboardItem({ [CLIPBOARD_IMAGE]: pngBlob(img) })]);
}

/** The figure of an image display, with its toolbar. `n`: the how-many-th image of its execution (for names). */
export function renderImage(d: DisplayOutput, img: DisplayImage, n: number, env: ImageEnv): HTMLElement {
  const size = displaySize(d, img);
  const kind = imageTypeName(img.mime);
  const label = `Image ${n}${size ? `, ${sizeLabel(size)}` : ''} ${kind}`;
  const el = h('img', {
    src: img.url,
    alt: label,
    decoding: 'async',
    loading: 'lazy',
    draggable: 'false',
    ...(size ? { width: size.width, height: size.height } : {}),
  });
  const name = imageFileName(n, img.mime);
  const open = () => env.post({ type: 'image.open', mime: img.mime, data: img.data, name });
  const opener = h(
    'button',
    { class: 'image-open', type: 'button', title: 'Open full size in an editor tab', 'aria-label': `${label}: open full size`, onclick: open },
    el,
  );
  const copyButton = iconButton('copy', 'Copy image', () => {
    copyImage(img).then(
      () => {
        flash(copyButton, 'Copied');
        env.announce('Image copied');
      },
      (err: unknown) => {
        flash(copyButton, 'Could not copy');
        env.announce(`Could not copy the image: ${err instanceof Error ? err.message : String(err)}. Save it instead.`);
      },
    );
  });
  const toolbar = h(
    'div',
    { class: 'image-toolbar', role: 'toolbar', 'aria-label': 'Image actions' },
    iconButton('external', 'Open full size', open),
    copyButton,
    iconButton('save', 'Save image…', () => env.post({ type: 'image.save', mime: img.mime, data: img.data, name })),
  );
  return h('figure', { class: 'display-image', 'data-mime': img.mime }, opener, toolbar);
}

/** A button's tooltip says what just happened, for a moment (a tick for success). */
function flash(button: HTMLButtonElement, text: string): void {
  const title = button.title;
  button.title = text;
  button.dataset.flash = text === 'Copied' ? 'ok' : 'error';
  const iconEl = button.firstElementChild;
  if (text === 'Copied' && iconEl) iconEl.replaceWith(icon('check'));
  setTimeout(() => {
    button.title = title;
    delete button.dataset.flash;
    if (text === 'Copied') button.firstElementChild?.replaceWith(icon('copy'));
  }, 1500);
}
