/**
 * What the model gets back from a code execution of our own runtimes (local guest, Jupyter): the text of
 * the tool result (`executionSummary`: status, value, stdout, stderr, error, the displays in order as text,
 * the files) and the images its displays showed (`executionImages`), which the providers send in their own
 * shape when the model sees images (src/core/providers/shared/history.ts decides which, per request).
 */
import type { AttachedImage, CodeInterpreterCallItem, FileOutput, OutputItem } from '../../common/events';
import { base64Bytes, displayModelText, displaysOf, imageSize, rasterImage } from '../../common/displays';
import { DEFAULT_IMAGE_BUDGET, type ImageBudget } from '../providers/shared/types';
import { EXECUTE_CODE, EXECUTE_TOOL_CODE } from '../tools/modelTools';

const MODEL_OUTPUT_CAP = 20_000;
/** Largest tool result text. */
export const SUMMARY_MAX_CHARS = 60_000;
/** Displays listed at most, and their text in all (each one's own cap is DISPLAY_TEXT_CAP). */
const MAX_DISPLAYS = 100;
const DISPLAY_TEXT_CAP = 4000;
const DISPLAYS_TEXT_BUDGET = 16_000;
const MAX_FILES = 50;

export function capText(text: string, cap = MODEL_OUTPUT_CAP): string {
  return text.length > cap ? text.slice(0, cap) + `\n…[${text.length - cap} more characters not shown]` : text;
}

/** The displays as the model reads them, in order ("[image 640×480, PNG]", a table's summary…), bounded. */
function displayTexts(item: CodeInterpreterCallItem, budget: number): string[] {
  const displays = displaysOf(item);
  const out: string[] = [];
  let used = 0;
  for (const d of displays) {
    if (out.length >= MAX_DISPLAYS || used >= budget) break;
    const text = displayModelText(d, Math.min(DISPLAY_TEXT_CAP, Math.max(200, budget - used)));
    out.push(text);
    used += text.length;
  }
  const more = displays.length - out.length;
  if (more > 0) out.push(`[${more} more display${more === 1 ? '' : 's'} shown to the user, not listed here]`);
  return out;
}

function fileName(f: FileOutput): string {
  const fromPath = f.path ? f.path.split(/[\\/]/).pop() : undefined;
  return f.filename || fromPath || f.file_id || 'file';
}

/** Files the code wrote, as `{name, bytes, note?}` (bounded). */
function fileEntries(files: FileOutput[]): unknown[] {
  const out: unknown[] = files.slice(0, MAX_FILES).map((f) => {
    return { name: fileName(f), ...(typeof f.bytes === 'number' ? { bytes: f.bytes } : {}), ...(f.note ? { note: capText(f.note, 500) } : {}) };
  });
  if (files.length > MAX_FILES) out.push(`[${files.length - MAX_FILES} more files]`);
  return out;
}

export interface SummaryContext {
  /** The how-many-th execution of the conversation this was, as the model is told (and as image stand-ins say). */
  execution?: number;
}

/** What the model reads back from a code execution. Always a JSON object that starts with `{"status":`. */
export function executionSummary(item: CodeInterpreterCallItem, ctx: SummaryContext = {}): string {
  const stdout = item.outputs.filter((o) => o.type === 'logs' && o.stream !== 'stderr').map((o) => (o as { logs: string }).logs).join('');
  const stderr = item.outputs.filter((o) => o.type === 'logs' && o.stream === 'stderr').map((o) => (o as { logs: string }).logs).join('');
  const summary: Record<string, unknown> = { status: item.status };
  if (ctx.execution) summary.execution = ctx.execution;
  if (item.status === 'completed') summary.value = item.value ?? null;
  if (stdout) summary.stdout = capText(stdout);
  if (stderr) summary.stderr = capText(stderr, 8000);
  if (item.error) summary.error = { type: item.error.type, message: item.error.message, ...(item.error.traceback ? { traceback: capText(item.error.traceback, 6000) } : {}) };
  const displays = displayTexts(item, DISPLAYS_TEXT_BUDGET);
  if (displays.length) summary.displays = displays;
  // A hosted sandbox's own images (not ours to send again): counted only.
  const images = item.outputs.filter((o) => o.type === 'image').length;
  if (images) summary.images = images;
  const files = item.outputs.filter((o): o is FileOutput => o.type === 'file');
  if (files.length) summary.files = fileEntries(files);
  let text = JSON.stringify(summary);
  if (text.length > SUMMARY_MAX_CHARS) text = JSON.stringify({ ...summary, value: '[value too large to show; return something smaller]' });
  if (text.length > SUMMARY_MAX_CHARS && displays.length) text = JSON.stringify({ ...summary, value: '[value too large to show; return something smaller]', displays: displayTexts(item, 2000) });
  return text;
}

/**
 * The raster images (PNG, JPEG, GIF, WEBP) the execution's displays showed, for a model that sees them:
 * the last ones within the budget (no request could carry more). SVG and other displays are text only.
 */
export function executionImages(item: CodeInterpreterCallItem, source: string, budget: ImageBudget = DEFAULT_IMAGE_BUDGET): AttachedImage[] {
  const out: AttachedImage[] = [];
  let bytes = 0;
  const displays = displaysOf(item);
  for (let i = displays.length - 1; i >= 0 && out.length < budget.maxImages; i--) {
    const d = displays[i];
    const raster = rasterImage(d);
    if (!raster) continue;
    const size = base64Bytes(raster.data);
    if (bytes + size > budget.maxBytes) break;
    bytes += size;
    const dims = imageSize(raster.mime, raster.data) ?? metadataSize(d.metadata?.[raster.mime]);
    out.unshift({ mime_type: raster.mime, data: raster.data, ...(dims ? { width: dims.width, height: dims.height } : {}), source });
  }
  return out;
}

function metadataSize(meta: unknown): { width: number; height: number } | undefined {
  const m = meta as { width?: unknown; height?: unknown } | undefined;
  return m && typeof m.width === 'number' && typeof m.height === 'number' ? { width: m.width, height: m.height } : undefined;
}

const CODE_TOOLS = new Set([EXECUTE_TOOL_CODE, EXECUTE_CODE]);

/** How many code executions the conversation so far holds (the results of code calls that ran). */
export function countExecutions(history: readonly OutputItem[]): number {
  let n = 0;
  for (const item of history) {
    if (item.type === 'function_call_output' && CODE_TOOLS.has(item.name ?? '') && item.output.startsWith('{"status":')) n++;
  }
  return n;
}
