/**
 * Rich outputs as the host takes them from a guest frame or a kernel message: checked field by field (a
 * display is untrusted input), held to the per-display, per-execution and count caps, and turned into a
 * `DisplayOutput`. What the caps refuse becomes one clear note for the run's stderr; the run goes on.
 */
import { capDisplayImages } from '../../common/displays';
import type { DisplayOutput } from '../../common/events';
import { formatBytes } from '../../common/format';
import { isJson } from '../../common/mimeTypes';

/** Caps of the files the code wrote, copied out after each execution (RuntimeLimits carries them). */
interface FileLimits {
  maxFileBytes: number;
  maxFilesTotalBytes: number;
  maxFiles: number;
}

/** Caps of the rich outputs of one execution (RuntimeLimits carries them). */
interface DisplayLimits {
  /** Largest display, in bytes of its data (base64 included). */
  maxDisplayBytes: number;
  /** All displays of one execution together. */
  maxDisplayTotalBytes: number;
  /** Displays one execution may show. */
  maxDisplays: number;
  /** Plots at twice the pixel density. */
  hidpi: boolean;
  /** Largest image, in pixels (width × height from its header): a larger one, or an unreadable header, becomes a note. */
  maxImagePixels: number;
}

const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,99}$/i;
const MAX_TYPES = 32;
const MAX_METADATA_BYTES = 64 * 1024;
const MAX_SUMMARY_CHARS = 32 * 1024;

type Taken = { ok: true; display: DisplayOutput; bytes: number } | { ok: false; note?: string };

function jsonSize(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return Infinity;
  }
}

/**
 * A display from untrusted fields: `data` (MIME -> string, or JSON for JSON types), `metadata`, and the
 * optional `result`, `display_id`, `summary`. Jupyter's `metadata.codeact` (our guest library's summary and
 * result flag, on a kernel) is moved out. Returns the display and its size, or why it is not one.
 */
export function normaliseDisplay(raw: {
  data?: unknown;
  metadata?: unknown;
  result?: unknown;
  display_id?: unknown;
  summary?: unknown;
}): { display: DisplayOutput; bytes: number } | { error: string } {
  const data = raw.data;
  if (!data || typeof data !== 'object' || Array.isArray(data)) return { error: 'a display without a data bundle' };
  const out: Record<string, unknown> = {};
  let bytes = 0;
  let types = 0;
  for (const [mime, value] of Object.entries(data as Record<string, unknown>)) {
    if (types >= MAX_TYPES) break;
    if (!MIME.test(mime)) continue;
    const json = isJson(mime);
    if (typeof value === 'string') {
      out[mime] = value;
      bytes += value.length;
    } else if (Array.isArray(value) && !json && value.length <= 100_000 && value.every((v) => typeof v === 'string')) {
      // Jupyter's list-of-lines form of a text value.
      const text = value.join('');
      out[mime] = text;
      bytes += text.length;
    } else if (json && value !== undefined) {
      out[mime] = value;
      bytes += jsonSize(value);
    } else continue;
    types++;
  }
  if (!types) return { error: 'a display with no data of a known kind' };
  const display: DisplayOutput = { type: 'display', data: out };
  let metadata =
    raw.metadata && typeof raw.metadata === 'object' && !Array.isArray(raw.metadata) ? { ...(raw.metadata as Record<string, unknown>) } : undefined;
  let summary = raw.summary;
  let result = raw.result;
  const ours = metadata?.codeact;
  if (metadata && ours !== undefined) {
    delete metadata.codeact;
    if (ours && typeof ours === 'object') {
      summary ??= (ours as Record<string, unknown>).summary;
      result ??= (ours as Record<string, unknown>).result;
    }
  }
  if (metadata && (Object.keys(metadata).length === 0 || jsonSize(metadata) > MAX_METADATA_BYTES)) metadata = undefined;
  if (metadata) display.metadata = metadata;
  if (result === true) display.result = true;
  if (typeof raw.display_id === 'string' && raw.display_id && raw.display_id.length <= 200) display.display_id = raw.display_id;
  if (typeof summary === 'string' && summary) display.summary = summary.length > MAX_SUMMARY_CHARS ? `${summary.slice(0, MAX_SUMMARY_CHARS)}…` : summary;
  return { display, bytes };
}

/** The caps of one execution's displays, and the notes they give (each kind of note once per execution). */
export class DisplayBudget {
  private count = 0;
  private total = 0;
  private countNoted = false;
  private totalNoted = false;
  /** Displays refused for the count or the total cap (said once, with the number, at the end). */
  private refused = 0;

  constructor(private readonly limits: DisplayLimits) {}

  take(raw: Parameters<typeof normaliseDisplay>[0], update = false): Taken {
    const n = normaliseDisplay(raw);
    if ('error' in n) return { ok: false, note: `[codeact: ${n.error} was not shown]\n` };
    const { maxDisplayBytes, maxDisplayTotalBytes, maxDisplays } = this.limits;
    if (n.bytes > maxDisplayBytes) {
      return {
        ok: false,
        note: `[codeact: a display of ${formatBytes(n.bytes)} was not shown; the limit is ${formatBytes(maxDisplayBytes)} per display (codeact.outputs.maxDisplayMB). Save it to a file instead.]\n`,
      };
    }
    if (!update && this.count >= maxDisplays) return this.refuse('count');
    if (this.total + n.bytes > maxDisplayTotalBytes) return this.refuse('total');
    if (!update) this.count++;
    this.total += n.bytes;
    // Before anything on the host (or the panel, a notebook, a model) decodes it: its header within the pixel cap.
    return { ok: true, display: capDisplayImages(n.display, this.limits.maxImagePixels), bytes: n.bytes };
  }

  private refuse(why: 'count' | 'total'): Taken {
    this.refused++;
    if (why === 'count' && !this.countNoted) {
      this.countNoted = true;
      return { ok: false, note: `[codeact: more displays were not shown; the limit is ${this.limits.maxDisplays.toLocaleString('en-US')} per execution]\n` };
    }
    if (why === 'total' && !this.totalNoted) {
      this.totalNoted = true;
      return {
        ok: false,
        note: `[codeact: more displays were not shown: this execution's displays reached ${formatBytes(this.limits.maxDisplayTotalBytes)} (codeact.outputs.maxExecutionMB)]\n`,
      };
    }
    return { ok: false };
  }

  /** The closing note: how many displays the caps refused in all (none when every display was shown). */
  summary(): string | undefined {
    return this.refused > 1 ? `[codeact: ${this.refused.toLocaleString('en-US')} displays in all were not shown]\n` : undefined;
  }
}

/** The display caps a guest applies, as the run frame (local) and the run call (Jupyter) carry them. */
export function displayOptions(l: DisplayLimits): { max_bytes: number; max_total: number; max_count: number; hidpi: boolean; max_pixels: number } {
  return { max_bytes: l.maxDisplayBytes, max_total: l.maxDisplayTotalBytes, max_count: l.maxDisplays, hidpi: l.hidpi, max_pixels: l.maxImagePixels };
}

/** The caps of the files a guest reports (and, locally, sends). */
export function fileOptions(l: FileLimits, enabled = true): { max_bytes: number; max_total: number; max_count: number } {
  return { max_bytes: l.maxFileBytes, max_total: l.maxFilesTotalBytes, max_count: enabled ? l.maxFiles : 0 };
}
