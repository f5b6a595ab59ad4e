/**
 * The MIME types CodeAct knows, one row each: the file extensions (the first is the one we write), the label a
 * person reads, how a display bundle holds the value (text, any JSON value, or base64), what kind of image it
 * is, and where each place ranks it: the panel (what it draws, richest first), the model (what it reads for a
 * display) and the notebook digest (what the agent reads about a cell's outputs). Every place that picks a type,
 * asks "is this JSON / text / binary", names a file or labels a type reads it here. The guest's formats file
 * (src/core/runtime/guest/codeact_formats.py) keeps the same facts; test/common/mimeTypes.test.ts proves they
 * agree. Pure data and functions: no Node, no DOM.
 *
 * A new type is one row. A new raster image type also needs ./imageHeader to read its header (the `format`
 * column is its `ImageFormat`), and the guest's BINARY set (the test says so).
 */
import type { ImageFormat } from './imageHeader';

/** How a display bundle holds a value of the type: text (a string, or Jupyter's list of lines), any JSON value, or base64. */
type MimeValue = 'text' | 'json' | 'binary';

/** What the model reads for a display of the type: its image, its text, its JSON, or a fixed note. */
type ModelText = 'image' | 'text' | 'json' | `[${string}]`;

interface MimeInfo {
  /** File extensions, lower case, without the dot; the first is the one we write. */
  extensions: readonly string[];
  /** What a person reads for the type ("PNG image", "CSV"); without one, readers show the extension. */
  label?: string;
  value: MimeValue;
  /** An image: the format its header declares (./imageHeader) or SVG; `vision` when the vision models take it. */
  image?: { format: ImageFormat | 'SVG'; vision?: true };
  /** The panel's rank: 1 is drawn first (Jupyter's order, less what the panel cannot draw safely). */
  panel?: number;
  /** How the panel draws a text type it ranks: as HTML (sandboxed), as Markdown, or as LaTeX source; without it, as plain text. */
  panelText?: 'html' | 'markdown' | 'latex';
  /** The model's rank (1 is read first) and what it reads. */
  model?: { rank: number; text: ModelText };
  /** The notebook digest's rank (1 first): named as an image or HTML, or read as its text. */
  notebook?: { rank: number; as: 'image' | 'HTML' | 'text' };
}

export const MIME_TYPES = {
  'text/html': {
    extensions: ['html', 'htm'],
    label: 'HTML',
    value: 'text',
    panel: 1,
    panelText: 'html',
    model: { rank: 10, text: '[HTML output shown to the user]' },
    notebook: { rank: 5, as: 'HTML' },
  },
  'text/markdown': {
    extensions: ['md'],
    label: 'Markdown',
    value: 'text',
    panel: 2,
    panelText: 'markdown',
    model: { rank: 6, text: 'text' },
    notebook: { rank: 6, as: 'text' },
  },
  'image/svg+xml': {
    extensions: ['svg'],
    label: 'SVG image',
    value: 'text',
    image: { format: 'SVG' },
    panel: 3,
    model: { rank: 5, text: '[SVG image]' },
    notebook: { rank: 3, as: 'image' },
  },
  'image/png': {
    extensions: ['png'],
    label: 'PNG image',
    value: 'binary',
    image: { format: 'PNG', vision: true },
    panel: 4,
    model: { rank: 1, text: 'image' },
    notebook: { rank: 1, as: 'image' },
  },
  'image/jpeg': {
    extensions: ['jpg', 'jpeg'],
    label: 'JPEG image',
    value: 'binary',
    image: { format: 'JPEG', vision: true },
    panel: 5,
    model: { rank: 2, text: 'image' },
    notebook: { rank: 2, as: 'image' },
  },
  'image/gif': {
    extensions: ['gif'],
    label: 'GIF image',
    value: 'binary',
    image: { format: 'GIF', vision: true },
    panel: 6,
    model: { rank: 3, text: 'image' },
    notebook: { rank: 4, as: 'image' },
  },
  'image/webp': {
    extensions: ['webp'],
    label: 'WebP image',
    value: 'binary',
    image: { format: 'WebP', vision: true },
    panel: 7,
    model: { rank: 4, text: 'image' },
  },
  'image/bmp': { extensions: ['bmp'], value: 'binary', image: { format: 'BMP' } },
  'text/latex': { extensions: [], value: 'text', panel: 8, panelText: 'latex', model: { rank: 8, text: 'text' } },
  'application/json': { extensions: ['json'], label: 'JSON', value: 'json', panel: 9, model: { rank: 9, text: 'json' }, notebook: { rank: 8, as: 'text' } },
  'text/plain': { extensions: ['txt', 'log'], label: 'Text', value: 'text', panel: 10, model: { rank: 7, text: 'text' }, notebook: { rank: 7, as: 'text' } },
  'application/pdf': { extensions: ['pdf'], label: 'PDF', value: 'binary' },
  'text/csv': { extensions: ['csv'], label: 'CSV', value: 'text' },
  'text/tab-separated-values': { extensions: ['tsv'], value: 'text' },
  'application/x-ndjson': { extensions: ['jsonl'], value: 'text' },
  'application/xml': { extensions: ['xml'], value: 'text' },
  'application/yaml': { extensions: ['yaml', 'yml'], value: 'text' },
  'text/x-python': { extensions: ['py'], value: 'text' },
  'application/x-ipynb+json': { extensions: ['ipynb'], value: 'json' },
  'application/zip': { extensions: ['zip'], label: 'ZIP', value: 'binary' },
  'application/gzip': { extensions: ['gz'], value: 'binary' },
  'application/vnd.apache.parquet': { extensions: ['parquet'], label: 'Parquet', value: 'binary' },
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': { extensions: ['xlsx'], label: 'Excel workbook', value: 'binary' },
  'application/vnd.ms-excel': { extensions: ['xls'], value: 'binary' },
  'application/vnd.sqlite3': { extensions: ['sqlite', 'db'], value: 'binary' },
  'application/octet-stream': { extensions: ['bin', 'pkl', 'npy'], value: 'binary' },
} as const satisfies Record<string, MimeInfo>;

/** A MIME type of the catalogue. */
export type Mime = keyof typeof MIME_TYPES;

type Rows = typeof MIME_TYPES;
/** Raster types the vision models take (and the panel draws as an image). */
export type VisionMime = { [K in Mime]: Rows[K] extends { image: { vision: true } } ? K : never }[Mime];
/** The image types the panel draws (raster as base64, SVG as its text). */
export type PanelImageMime = { [K in Mime]: Rows[K] extends { image: object; panel: number } ? K : never }[Mime];

/** The image type every clipboard takes: the panel copies an image as it (drawing any other type on a canvas first). */
export const CLIPBOARD_IMAGE = 'image/png' satisfies Mime;

/** The places that rank types. */
export type MimePlace = 'panel' | 'model' | 'notebook';

const ALL = Object.keys(MIME_TYPES) as Mime[];
const info = (mime: Mime): MimeInfo => MIME_TYPES[mime];

/** The row of a type, when the catalogue has one (the type as given: callers lower-case it where they read it from outside). */
export function mimeInfo(mime: string): MimeInfo | undefined {
  return Object.prototype.hasOwnProperty.call(MIME_TYPES, mime) ? info(mime as Mime) : undefined;
}

/** A type's rank in a place (undefined: the place does not take it). */
function rankIn(place: MimePlace, mime: Mime): number | undefined {
  const row = info(mime);
  return place === 'panel' ? row.panel : place === 'model' ? row.model?.rank : row.notebook?.rank;
}

/** The types a place takes, best first. */
export function rankedFor(place: MimePlace): readonly Mime[] {
  return ALL.filter((m) => rankIn(place, m) !== undefined).sort((a, b) => rankIn(place, a)! - rankIn(place, b)!);
}

const RANKED: Record<MimePlace, readonly Mime[]> = { panel: rankedFor('panel'), model: rankedFor('model'), notebook: rankedFor('notebook') };

/** Raster types the vision models take, in the model's order (PNG first). */
export const VISION_MIMES = RANKED.model.filter((m): m is VisionMime => !!info(m).image?.vision);

/** The image types the panel draws, in the catalogue's order. */
export const PANEL_IMAGE_MIMES = ALL.filter((m): m is PanelImageMime => !!info(m).image && info(m).panel !== undefined);

/** The text of a MIME value: a string, or Jupyter's list of lines. */
export function mimeText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join('');
  return undefined;
}

/**
 * The first type a place ranks that the bundle has a usable value for: a JSON type any defined value, another
 * type text (a string or a list of lines). The model takes an image only when it has data.
 */
export function bestFor(place: MimePlace, data: Record<string, unknown>): Mime | undefined {
  for (const mime of RANKED[place]) {
    const v = data[mime];
    if (isJson(mime) ? v !== undefined : place === 'model' && info(mime).image && info(mime).value === 'binary' ? !!mimeText(v) : mimeText(v) !== undefined)
      return mime;
  }
  return undefined;
}

/** A JSON type of the display protocol (any JSON value): application/json and every `+json` type (the guest's is_json_mime). */
export function isJson(mime: string): boolean {
  return mimeInfo(mime)?.value === 'json' || mime.endsWith('+json');
}

/** nbformat's JSON types (its schema's `^application/(.*\+)?json$`): stricter than {@link isJson}; a notebook file keeps to it. */
export function isNbformatJson(mime: string): boolean {
  return /^application\/(?:[^/]*\+)?json$/.test(mime);
}

/** An image type of the display protocol, catalogued or not (any `image/` type). */
export function isImage(mime: string): boolean {
  return mime.startsWith('image/');
}

/** A text type: the catalogue's text types, and any other `text/` type. */
export function isText(mime: string): boolean {
  const row = mimeInfo(mime);
  return row ? row.value === 'text' : mime.startsWith('text/');
}

/** A binary type (base64 in a bundle, bytes in a file or a notebook cell). */
export function isBinary(mime: string): boolean {
  return mimeInfo(mime)?.value === 'binary';
}

/** A raster type whose header ./imageHeader reads (its pixel size is known before it decodes). */
export function isRaster(mime: string): boolean {
  const format = mimeInfo(mime)?.image?.format;
  return format !== undefined && format !== 'SVG';
}

/** A raster type the vision models take. */
export function isVision(mime: string): mime is VisionMime {
  return (VISION_MIMES as readonly string[]).includes(mime);
}

/** The image types the panel draws. */
export function isPanelImage(mime: string): mime is PanelImageMime {
  return (PANEL_IMAGE_MIMES as readonly string[]).includes(mime);
}

/** The extension we write for a type, without the dot (`jpg`); undefined when the catalogue has none. */
export function extensionOf(mime: string): string | undefined {
  return mimeInfo(mime)?.extensions[0];
}

const BY_EXTENSION = new Map<string, Mime>(ALL.flatMap((m) => info(m).extensions.map((e) => [e, m] as const)));

/** The type of an extension (without the dot, any case), when the catalogue has it. */
export function mimeOfExtension(ext: string): Mime | undefined {
  return BY_EXTENSION.get(ext.toLowerCase());
}

/** What a person reads for a type ("PNG image"), when the catalogue has a label. */
export function mimeLabel(mime: string): string | undefined {
  return mimeInfo(mime)?.label;
}

/** An image type's short name: "PNG", "JPEG", "WEBP", "SVG" (the subtype in capitals, without `+xml`). */
export function imageTypeName(mime: string): string {
  return mime
    .replace(/^image\//, '')
    .replace(/\+xml$/, '')
    .toUpperCase();
}

/** "PNG, JPEG, GIF, WebP or BMP": the raster formats whose size is read before they decode. */
export function rasterFormatList(): string {
  const formats = ALL.filter(isRaster).map((m) => info(m).image!.format);
  return formats.length > 1 ? `${formats.slice(0, -1).join(', ')} or ${formats[formats.length - 1]}` : formats.join('');
}

/** What the model reads for a display of the type (undefined: the model does not take it). */
export function modelTextOf(mime: Mime): ModelText | undefined {
  return info(mime).model?.text;
}

/** How the panel draws a text type (`MimeInfo.panelText`): HTML, Markdown, LaTeX source or plain text. */
export function panelTextOf(mime: Mime): 'html' | 'markdown' | 'latex' | 'plain' {
  return info(mime).panelText ?? 'plain';
}

/** How the notebook digest reads the type (undefined: it does not). */
export function notebookAs(mime: Mime): 'image' | 'HTML' | 'text' | undefined {
  return info(mime).notebook?.as;
}
