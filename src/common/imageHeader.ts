/**
 * The pixel size an image declares, read from its header before anything decodes it, and the pixel cap
 * (codeact.outputs.maxImageMegapixels) every place that shows or sends an image checks first: the host
 * (displays from a guest or a kernel), the panel, the notebook outputs and the request to the model.
 *
 * The format is read from the bytes (a browser sniffs them too: a PNG labelled image/jpeg still decodes
 * as a PNG), never from the label: PNG (IHDR, which must be the first chunk), JPEG (the first SOFn marker
 * before any scan, a bounded walk of the segments), GIF (the logical screen and every frame's descriptor:
 * a decoder grows the canvas to the first frame), WebP (VP8, VP8L, VP8X) and BMP. Anything else, or a
 * header that is cut short or malformed, has no size: it counts as over the cap (fail closed).
 *
 * SVG is outside the cap: it is drawn at the size it is shown (the panel caps that to the card, the image
 * preview and the copy to the clipboard to a bounded canvas), never at the size it declares, and it is
 * only ever an `<img>` (no script, no request).
 *
 * Pure: no Node, no DOM (atob is a global of both). Base64 is decoded block by block, only where the
 * header walk reads.
 */

/** The default of codeact.outputs.maxImageMegapixels, in pixels (src/core/config/keys.ts reads it here). */
export const DEFAULT_MAX_IMAGE_PIXELS = 40_000_000;

/** The setting that raises the cap, as the notes name it. */
const MAX_IMAGE_PIXELS_SETTING = 'codeact.outputs.maxImageMegapixels';

interface PixelSize {
  width: number;
  height: number;
}

export type ImageFormat = 'PNG' | 'JPEG' | 'GIF' | 'WebP' | 'BMP';

interface ImageHeader extends PixelSize {
  format: ImageFormat;
}

/** Bytes read one at a time; -1 past the end (or where the base64 is not valid). */
interface ByteSource {
  readonly length: number;
  at(i: number): number;
}

/** Bytes decoded per block of base64 (a multiple of 3: a block starts on a base64 quantum). */
const BLOCK = 12 * 1024;
/** JPEG segments walked at most before the frame header (a real file has a few dozen). */
const MAX_JPEG_SEGMENTS = 1024;

function base64Source(b64: string): ByteSource {
  const text = /\s/.test(b64) ? b64.replace(/\s+/g, '') : b64;
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const length = Math.max(0, Math.floor((text.length * 3) / 4) - pad);
  let block = -1;
  let bytes = new Uint8Array(0);
  return {
    length,
    at(i: number): number {
      if (i < 0 || i >= length) return -1;
      const b = Math.floor(i / BLOCK);
      if (b !== block) {
        block = b;
        const chars = (BLOCK / 3) * 4;
        let bin = '';
        try {
          bin = atob(text.slice(b * chars, (b + 1) * chars));
        } catch {
          bin = '';
        }
        bytes = new Uint8Array(bin.length);
        for (let k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
      }
      const v = bytes[i - b * BLOCK];
      return v === undefined ? -1 : v;
    },
  };
}

function byteSource(u: Uint8Array): ByteSource {
  return { length: u.length, at: (i) => (i >= 0 && i < u.length ? u[i] : -1) };
}

const u16be = (s: ByteSource, i: number) => (s.at(i) << 8) | s.at(i + 1);
const u16le = (s: ByteSource, i: number) => s.at(i) | (s.at(i + 1) << 8);
const u24le = (s: ByteSource, i: number) => s.at(i) | (s.at(i + 1) << 8) | (s.at(i + 2) << 16);
const u32be = (s: ByteSource, i: number) => ((s.at(i) << 24) | (s.at(i + 1) << 16) | (s.at(i + 2) << 8) | s.at(i + 3)) >>> 0;
const u32le = (s: ByteSource, i: number) => (s.at(i) | (s.at(i + 1) << 8) | (s.at(i + 2) << 16) | (s.at(i + 3) << 24)) >>> 0;
const i32le = (s: ByteSource, i: number) => s.at(i) | (s.at(i + 1) << 8) | (s.at(i + 2) << 16) | (s.at(i + 3) << 24);

/** The bytes at `i` are these (all present). */
function startsWith(s: ByteSource, i: number, bytes: readonly number[] | string): boolean {
  for (let k = 0; k < bytes.length; k++) {
    const want = typeof bytes === 'string' ? bytes.charCodeAt(k) : bytes[k];
    if (s.at(i + k) !== want) return false;
  }
  return true;
}

function sized(format: ImageFormat, width: number, height: number): ImageHeader | undefined {
  return Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0 ? { format, width, height } : undefined;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** PNG: IHDR must be the first chunk, 13 bytes long; width and height at most 2^31 - 1 (the spec's bound). */
function pngHeader(s: ByteSource): ImageHeader | undefined {
  if (s.length < 24 || u32be(s, 8) !== 13 || !startsWith(s, 12, 'IHDR')) return undefined;
  const width = u32be(s, 16);
  const height = u32be(s, 20);
  return width <= 0x7fffffff && height <= 0x7fffffff ? sized('PNG', width, height) : undefined;
}

/** JPEG: the first start-of-frame marker, before any scan; fill bytes and standalone markers skipped. */
function jpegHeader(s: ByteSource): ImageHeader | undefined {
  let i = 2;
  for (let steps = 0; steps < MAX_JPEG_SEGMENTS; steps++) {
    if (s.at(i) !== 0xff) return undefined;
    let marker = s.at(i + 1);
    while (marker === 0xff) marker = s.at(++i + 1);
    if (marker < 0) return undefined;
    // Standalone markers (TEM, RSTn, a stray SOI) have no length.
    if (marker === 0x01 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    // End of image, or a scan, before any frame header: no size to read.
    if (marker === 0xd9 || marker === 0xda) return undefined;
    const len = u16be(s, i + 2);
    if (len < 2 || s.at(i + 3) < 0) return undefined;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (len < 7 || s.at(i + 8) < 0) return undefined;
      // A height of 0 leaves it to a DNL marker after the scan: unknown before decoding, so refused.
      return sized('JPEG', u16be(s, i + 7), u16be(s, i + 5));
    }
    i += 2 + len;
  }
  return undefined;
}

/** Skips GIF data sub-blocks from `i` (each a length byte and its bytes, ended by a 0); -1 when cut short. */
function skipSubBlocks(s: ByteSource, i: number): number {
  for (;;) {
    const n = s.at(i);
    if (n < 0) return -1;
    i += 1 + n;
    if (n === 0) return i;
  }
}

/**
 * GIF: the logical screen, grown to every frame's right and bottom edge (decoders grow the canvas to a
 * frame that does not fit it). The walk is linear in the bytes: each step moves past at least one.
 */
function gifHeader(s: ByteSource): ImageHeader | undefined {
  if (s.length < 13) return undefined;
  let width = u16le(s, 6);
  let height = u16le(s, 8);
  const packed = s.at(10);
  let i = 13 + (packed & 0x80 ? 3 * (1 << ((packed & 7) + 1)) : 0);
  for (;;) {
    const block = s.at(i);
    if (block === 0x21) {
      i = skipSubBlocks(s, i + 2);
    } else if (block === 0x2c) {
      if (s.at(i + 9) < 0) break;
      width = Math.max(width, u16le(s, i + 1) + u16le(s, i + 5));
      height = Math.max(height, u16le(s, i + 3) + u16le(s, i + 7));
      const p = s.at(i + 9);
      i += 10 + (p & 0x80 ? 3 * (1 << ((p & 7) + 1)) : 0);
      // The LZW minimum code size, then the image data.
      i = skipSubBlocks(s, i + 1);
    } else break; // the trailer (0x3b), the end of the data, or bytes no decoder reads further
    if (i < 0) break;
  }
  return sized('GIF', width, height);
}

/** WebP: the first chunk (VP8 lossy, VP8L lossless, or VP8X, the extended format's canvas). */
function webpHeader(s: ByteSource): ImageHeader | undefined {
  if (s.length < 30) return undefined;
  if (startsWith(s, 12, 'VP8 ')) {
    if (!startsWith(s, 23, [0x9d, 0x01, 0x2a])) return undefined;
    return sized('WebP', u16le(s, 26) & 0x3fff, u16le(s, 28) & 0x3fff);
  }
  if (startsWith(s, 12, 'VP8L')) {
    if (s.at(20) !== 0x2f) return undefined;
    const bits = u32le(s, 21);
    return sized('WebP', (bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (startsWith(s, 12, 'VP8X')) return sized('WebP', u24le(s, 24) + 1, u24le(s, 27) + 1);
  return undefined;
}

/** BMP: the DIB header's width and height (a negative height is a top-down image). */
function bmpHeader(s: ByteSource): ImageHeader | undefined {
  if (s.length < 26) return undefined;
  const dib = u32le(s, 14);
  if (dib === 12) return sized('BMP', u16le(s, 18), u16le(s, 20));
  if (dib < 40) return undefined;
  return sized('BMP', i32le(s, 18), Math.abs(i32le(s, 22)));
}

function readHeader(s: ByteSource): ImageHeader | undefined {
  if (startsWith(s, 0, PNG_SIGNATURE)) return pngHeader(s);
  if (startsWith(s, 0, [0xff, 0xd8, 0xff])) return jpegHeader(s);
  if (startsWith(s, 0, 'GIF87a') || startsWith(s, 0, 'GIF89a')) return gifHeader(s);
  if (startsWith(s, 0, 'RIFF') && startsWith(s, 8, 'WEBP')) return webpHeader(s);
  if (startsWith(s, 0, 'BM')) return bmpHeader(s);
  return undefined;
}

const SVG = 'image/svg+xml';

/** The format and pixel size an image's header declares (base64 or bytes); undefined when it says none we read. */
export function imageHeader(data: string | Uint8Array): ImageHeader | undefined {
  return readHeader(typeof data === 'string' ? base64Source(data) : byteSource(data));
}

/** Width and height of a raster image (base64) from its header; undefined for SVG or an unreadable header. */
export function imageSize(mime: string, b64: string): PixelSize | undefined {
  if (mime === SVG) return undefined;
  const h = imageHeader(b64);
  return h ? { width: h.width, height: h.height } : undefined;
}

/** "40 megapixels", "0.5 megapixels". */
function megapixels(pixels: number): string {
  const mp = pixels / 1e6;
  const text = mp >= 100 ? Math.round(mp).toLocaleString('en-US') : String(Number(mp.toPrecision(3)));
  return `${text} megapixel${text === '1' ? '' : 's'}`;
}

/** The note that stands where an image over the cap would have been. */
function imageCapNote(mime: string, header: ImageHeader | undefined, maxPixels: number): string {
  const kind = mime.startsWith('image/') ? mime.slice(6).toUpperCase() : mime;
  if (!header) {
    return (
      `[codeact: an image (${kind}) was not shown: its header does not say its size in a form CodeAct reads ` +
      `(PNG, JPEG, GIF, WebP or BMP), so it was not decoded. Save it to a file and open it with a program you trust.]`
    );
  }
  const size = `${header.width.toLocaleString('en-US')}×${header.height.toLocaleString('en-US')}`;
  return (
    `[codeact: a ${header.format} image of ${size} pixels (${megapixels(header.width * header.height)}) was not shown: ` +
    `the limit is ${megapixels(maxPixels)} per image (${MAX_IMAGE_PIXELS_SETTING}). Make it smaller, or raise the setting.]`
  );
}

/**
 * Whether an image may be decoded: its header's width × height within `maxPixels`. SVG always may (see
 * above); any other type needs a header this module reads. `data`: base64, or the bytes.
 */
export function checkImagePixels(
  mime: string,
  data: string | Uint8Array,
  maxPixels: number,
): { ok: true; size?: PixelSize } | { ok: false; note: string; size?: PixelSize } {
  if (mime === SVG) return { ok: true };
  const h = imageHeader(data);
  if (h && h.width * h.height <= maxPixels) return { ok: true, size: { width: h.width, height: h.height } };
  return { ok: false, note: imageCapNote(mime, h, maxPixels), ...(h ? { size: { width: h.width, height: h.height } } : {}) };
}
