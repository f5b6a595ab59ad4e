/**
 * What the modal approval dialog says (no `vscode` here). A dialog cannot scroll or expand, so it shows
 * the start of the arguments (or the code) and says exactly how much it leaves out: lines, characters,
 * and for arguments how many of them; its first button opens everything in an editor. Invisible and
 * bidirectional characters are shown as `<U+202E>` markers (the dialog would otherwise let them reorder
 * or hide text).
 */
import { jobAsks } from '../common/tools';
import { forDisplay } from '../common/untrusted';

/** Characters of arguments and of code a dialog shows. */
const DIALOG_ARGUMENT_CHARS = 1500;
const DIALOG_CODE_CHARS = 2000;

interface DialogText {
  /** What the dialog shows (revealed, cut at a line end where one is near). */
  shown: string;
  /** The whole text fits. */
  whole: boolean;
  /** What is left out (lines and characters of the revealed text). */
  hiddenLines: number;
  hiddenChars: number;
}

/** The start of `text` that fits in `max` characters, cut at a line end when one is in the second half. */
function clipForDialog(text: string, max: number): DialogText {
  const all = forDisplay(text);
  if (all.length <= max) return { shown: all, whole: true, hiddenLines: 0, hiddenChars: 0 };
  let cut = all.lastIndexOf('\n', max);
  if (cut < max / 2) {
    cut = max;
    // Never in the middle of a marker or of a surrogate pair.
    const marker = all.lastIndexOf('<U+', cut);
    if (marker >= 0 && all.indexOf('>', marker) >= cut) cut = marker;
    const c = all.charCodeAt(cut - 1);
    if (c >= 0xd800 && c <= 0xdbff) cut--;
  }
  const rest = all.slice(cut);
  return { shown: all.slice(0, cut), whole: false, hiddenLines: countLines(rest.replace(/^\n/, '')), hiddenChars: rest.length };
}

function countLines(s: string): number {
  if (!s) return 0;
  let n = 1;
  for (let i = s.indexOf('\n'); i >= 0 && i < s.length - 1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

const formatCount = (n: number) => n.toLocaleString('en-US');

function plural(n: number, one: string, many: string): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

/** The arguments as the dialog and the editor show them: pretty JSON. */
export function argumentsJson(args: unknown): string {
  try {
    return JSON.stringify(args ?? {}, null, 2) ?? 'null';
  } catch (err) {
    return `(the arguments cannot be shown: ${(err as Error).message})`;
  }
}

/** How many top-level arguments `json` (from {@link argumentsJson}) shows: its lines that start a key at depth 1. */
function topLevelKeys(json: string): number {
  return json.match(/^ {2}"/gm)?.length ?? 0;
}

interface ToolDialog {
  message: string;
  detail: string;
  /** Something is not shown: offer to open the whole. */
  clipped: boolean;
}

/** The dialog asking for a tool call (`job`: a background job's call, said first). */
export function toolDialog(name: string, args: unknown, job?: number): ToolDialog {
  const json = argumentsJson(args);
  const view = clipForDialog(json, DIALOG_ARGUMENT_CHARS);
  const message = `CodeAct: ${job === undefined ? '' : `${jobAsks(job)}: `}allow the tool "${forDisplay(name, { line: true })}"?`;
  if (view.whole) return { message, detail: `Arguments:\n${view.shown}`, clipped: false };
  const total = args && typeof args === 'object' && !Array.isArray(args) ? Object.keys(args).length : 0;
  // The last argument the dialog starts may go on past its end: only those before it are shown in full.
  const inFull = Math.max(0, Math.min(total, topLevelKeys(view.shown)) - 1);
  const unseen = total ? `${plural(total - inFull, 'argument (all or part of it)', 'arguments (all or part of each)')}, ` : '';
  const detail =
    `Arguments (the first ${plural(view.shown.length, 'character', 'characters')}${total ? `; ${formatCount(inFull)} of ${plural(total, 'argument', 'arguments')} in full` : ''}):\n` +
    `${view.shown}\n…\n\n` +
    `NOT SHOWN HERE: ${unseen}${plural(view.hiddenLines, 'line', 'lines')}, ${plural(view.hiddenChars, 'character', 'characters')}. ` +
    `"Open Full Arguments" shows all of them in an editor before you decide. Allowing here approves all of them, the part not shown included.`;
  return { message, detail, clipped: true };
}

/** The dialog asking to run code (code review). */
export function codeDialog(code: string): ToolDialog {
  const view = clipForDialog(code, DIALOG_CODE_CHARS);
  const message = 'CodeAct: run this code?';
  if (view.whole) return { message, detail: view.shown, clipped: false };
  const detail =
    `${view.shown}\n…\n\n` +
    `NOT SHOWN HERE: ${plural(view.hiddenLines, 'line', 'lines')}, ${plural(view.hiddenChars, 'character', 'characters')} of the code. ` +
    `"Open Full Code" shows all of it in an editor before you decide. Running it here runs all of it, the part not shown included.`;
  return { message, detail, clipped: true };
}
