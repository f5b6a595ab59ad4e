/**
 * What the model gets back from a code execution of our own runtimes (local guest, Jupyter): the text of
 * the tool result (`executionSummary`: status, value, stdout, stderr, error, the displays in order as text,
 * the files) and the images its displays showed (`executionImages`), which the providers send in their own
 * shape when the model sees images (src/core/providers/shared/history.ts decides which, per request).
 */
import { logsOf, type AttachedImage, type CodeInterpreterCallItem, type FileOutput, type OutputItem } from '../../common/events';
import { base64Bytes, capDisplayImages, displayModelText, displaysOf, imageSize, rasterImage } from '../../common/displays';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../../common/imageHeader';
import { DEFAULT_IMAGE_BUDGET, type ImageBudget } from '../providers/shared/types';
import { EXECUTE_CODE, EXECUTE_TOOL_CODE } from '../tools/modelTools';
import { DEFAULT_OUTPUT_CHARS, MIN_OUTPUT_CHARS, headTail, partNote, shareBudget } from '../../common/outputBudget';
import { jsonData, quoteInline, quoteName } from '../../common/quoteData';
import { describeChange } from '../../common/rewind';

/** Largest tool result text, unless the output budget asks for more (the value and displays give way first). */
export const SUMMARY_MAX_CHARS = 60_000;
/** Displays listed at most, and each one's text at most. */
const MAX_DISPLAYS = 100;
const DISPLAY_TEXT_CAP = 4000;
/** The error's message at most (its traceback has a share of the budget of its own). */
const ERROR_MESSAGE_CAP = 2000;
const MAX_FILES = 50;

/** The displays as the model reads them, in order ("[image 640×480, PNG]", a table's summary…), within `budget` characters. */
function displayTexts(item: CodeInterpreterCallItem, budget: number): string[] {
  const displays = displaysOf(item);
  const out: string[] = [];
  let used = 0;
  for (const d of displays) {
    if (out.length >= MAX_DISPLAYS || budget - used < 200) break;
    const text = displayModelText(d, Math.min(DISPLAY_TEXT_CAP, budget - used));
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
    return { name: fileName(f), ...(typeof f.bytes === 'number' ? { bytes: f.bytes } : {}), ...(f.note ? { note: f.note.slice(0, 500) } : {}) };
  });
  if (files.length > MAX_FILES) out.push(`[${files.length - MAX_FILES} more files]`);
  return out;
}

/** A path the code chose, for the model: as it is when it is plainly a path, else a JSON string (no line break or marker of its own). */
/** A path the code wrote, for the model: as it is when plainly a path, else a JSON string. */
export const pathForModel = (p: string): string => (/^[\w@+,=.-][\w@+,=. /-]{0,400}$/.test(p) ? p : quoteInline(p, 400));

/** Changes listed at most to the model (the panel lists them all). */
const MAX_CHANGES = 50;

/** What the code changed in the workspace, as the model reads it: one line per file (bounded), and what cannot be reverted. */
function changedFiles(item: CodeInterpreterCallItem): string[] | undefined {
  const c = item.changes;
  if (!c || (!c.changes.length && !c.incomplete)) return undefined;
  const lines = c.changes
    .slice(0, MAX_CHANGES)
    .map((ch) => describeChange(ch, pathForModel) + (ch.notRestorable ? ` (cannot be reverted: ${quoteInline(ch.notRestorable, 300)})` : ''));
  if (c.changes.length > MAX_CHANGES) lines.push(`[${c.changes.length - MAX_CHANGES} more changes, listed to the user]`);
  if (c.incomplete) lines.push(`[not every change is listed: ${quoteInline(c.incomplete, 300)}]`);
  if (c.staged && c.changes.length)
    lines.push("[staged for the user's review: your later code sees these changes, the workspace has them only once the user keeps them]");
  return lines;
}

interface SummaryContext {
  /** The how-many-th execution of the conversation this was, as the model is told (and as image stand-ins say). */
  execution?: number;
  /** The output budget in characters (codeact.outputs.modelChars); default DEFAULT_OUTPUT_CHARS. */
  outputChars?: number;
  /** The session keeps the run's whole output for later runs (`output_of(n)`, `last_output()`). */
  kept?: boolean;
  /** The code could have called `install_packages` (a ModuleNotFoundError's result says so). */
  installs?: boolean;
}

/** The hint a ModuleNotFoundError gets when `install_packages` is there: which package, and how. */
function installHint(item: CodeInterpreterCallItem): string | undefined {
  if (item.error?.type !== 'ModuleNotFoundError') return undefined;
  const module = /No module named '([A-Za-z0-9_]{1,100})/.exec(item.error.message ?? '')?.[1] ?? 'name';
  return (
    `The module "${module}" is not installed in this session's Python. If the task needs it, run \`await install_packages(["${module}"])\` ` +
    '(the user approves it; the package name can differ from the module\'s, e.g. sklearn is "scikit-learn", PIL is "Pillow"), then import it.'
  );
}

/** Where the whole text of a cut stream is, as the note in its middle says. */
function whereToRead(stream: 'stdout' | 'stderr', ctx: SummaryContext): string {
  if (!ctx.kept) return 'runs here do not keep it: print less, or narrow it down in code';
  const arg = stream === 'stderr' ? ', "stderr"' : '';
  return ctx.execution
    ? `output_of(${ctx.execution}${arg}) in a later run returns the whole text`
    : `last_output(${arg.slice(2)}) in the next run returns the whole text`;
}

/**
 * What an item's own session says of it, for a summary told outside the conversation's own count (a code turn, the
 * language-model tool, a run that ended while no window watched): its number there, and that its output is kept.
 */
export function sessionContext(item: CodeInterpreterCallItem): { execution?: number; kept?: boolean } {
  const s = item.session;
  return s ? { execution: s.execution, kept: !s.state_lost } : {};
}

/**
 * What the model reads back from a code execution. Always a JSON object that starts with `{"status":`.
 * The printed output, stderr, the error, the displays' text and the value share one budget
 * (ctx.outputChars); a part over its share keeps its beginning and its end (outputBudget.ts).
 */
export function executionSummary(item: CodeInterpreterCallItem, ctx: SummaryContext = {}): string {
  const budget = Math.max(MIN_OUTPUT_CHARS, ctx.outputChars ?? DEFAULT_OUTPUT_CHARS);
  const stdout = logsOf(item);
  const stderr = logsOf(item, 'stderr');
  const fullMessage = item.error?.message ?? '';
  const traceback = item.error?.traceback ?? '';
  const valueJson = item.status === 'completed' ? (JSON.stringify(item.value ?? null) ?? 'null') : '';
  const allDisplays = displayTexts(item, MAX_DISPLAYS * DISPLAY_TEXT_CAP);
  const displaysSize = allDisplays.reduce((n, t) => n + t.length, 0);
  const [messageShare, tbShare, outShare, errShare, displayShare, valueShare] = shareBudget(
    [Math.min(fullMessage.length, ERROR_MESSAGE_CAP), traceback.length, stdout.length, stderr.length, displaysSize, valueJson.length],
    budget,
  );
  const summary: Record<string, unknown> = { status: item.status };
  if (ctx.execution) summary.execution = ctx.execution;
  if (item.status === 'completed') {
    if (valueJson.length <= valueShare) summary.value = item.value ?? null;
    else {
      summary.value = headTail(valueJson, valueShare, partNote('the returned value (JSON)', 'return something smaller, or print the parts you need'));
      summary.value_truncated = true;
    }
  }
  if (stdout) summary.stdout = headTail(stdout, outShare, partNote('stdout', whereToRead('stdout', ctx)));
  if (stderr) summary.stderr = headTail(stderr, errShare, partNote('stderr', whereToRead('stderr', ctx)));
  if (item.error) {
    const message = headTail(fullMessage, Math.min(ERROR_MESSAGE_CAP, messageShare), partNote('the message', ''));
    const tb = traceback ? headTail(traceback, tbShare, partNote('the traceback', 'its last lines are below')) : '';
    summary.error = { type: item.error.type, message, ...(tb ? { traceback: tb } : {}) };
    const hint = ctx.installs ? installHint(item) : undefined;
    if (hint) summary.hint = hint;
  }
  const displays = displaysSize <= displayShare ? allDisplays : displayTexts(item, displayShare);
  if (displays.length) summary.displays = displays;
  // A hosted sandbox's own images (not ours to send again): counted only.
  const images = item.outputs.filter((o) => o.type === 'image').length;
  if (images) summary.images = images;
  const files = item.outputs.filter((o): o is FileOutput => o.type === 'file');
  if (files.length) summary.files = fileEntries(files);
  const changed = changedFiles(item);
  if (changed) summary.workspace_changes = changed;
  // A last bound on the JSON text (escaping can make it longer than the characters it holds). One line:
  // line separators and "<|" inside the strings are escapes too (../../common/quoteData).
  const limit = Math.max(SUMMARY_MAX_CHARS, 3 * budget);
  let text = jsonData(summary);
  const smaller =
    item.status === 'completed' ? { ...summary, value: '[value too large to show; return something smaller]', value_truncated: undefined } : summary;
  if (text.length > limit) text = jsonData(smaller);
  if (text.length > limit && displays.length) text = jsonData({ ...smaller, displays: displayTexts(item, 2000) });
  return text;
}

/** A direct tool's result as the model reads it: its JSON, within the output budget. */
export function toolResultText(name: string, output: unknown, outputChars = DEFAULT_OUTPUT_CHARS): string {
  const json = jsonData(output);
  return headTail(json, Math.max(MIN_OUTPUT_CHARS, outputChars), partNote(`the result of ${quoteName(name)} (JSON)`, 'ask the tool for less'));
}

/**
 * The execution as the model reads and sees it: every display's images within the pixel cap, checked from
 * their headers (an image over it, or with no size we read, is the note that says so: common/displays.ts).
 */
export function withinPixelCap(item: CodeInterpreterCallItem, maxPixels = DEFAULT_MAX_IMAGE_PIXELS): CodeInterpreterCallItem {
  let changed = false;
  const outputs = item.outputs.map((o) => {
    if (o.type !== 'display') return o;
    const capped = capDisplayImages(o, maxPixels);
    if (capped !== o) changed = true;
    return capped;
  });
  return changed ? { ...item, outputs } : item;
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
