/**
 * What the CLI prints for people (`--json` prints the events as they are): the code's output as it
 * comes, a line per tool call, the value; for chats the answer, the code as the model writes it, and the
 * result of each run. Colours pass; every other control sequence from the code, the tools or the model
 * is stripped, so nothing they print can move the cursor, set the title or write the clipboard; colours
 * that hide text (conceal, a foreground the same as the background) are taken out. The lines a person
 * decides on, the tool lines, the value and the code of a chat, start from plain attributes (`ESC[0m`
 * once anything untrusted coloured the terminal) and show invisible and bidirectional characters as
 * `<U+202E>` markers (../common/invisibleChars).
 */
import { parseDataUrl } from '../common/dataUrl';
import { isTurnMarker, traitsOf, type EventsWith } from '../common/eventTraits';
import { displayImageOf, displayModelText, imageSize, sizeLabel } from '../common/displays';
import { imageTypeName, mimeText, modelTextOf, rankedFor } from '../common/mimeTypes';
import type { CodeActEvent, CodeInterpreterCallItem, ContextCompacted, DisplayOutput, ImageOutput } from '../common/events';
import { clip, formatCount } from '../common/format';
import { fileLabel, filesOf } from '../common/outputLabels';
import { InvisibleRevealer } from '../common/invisibleChars';
import type { TranscriptEvent } from '../common/transcript';
import { forTerminal, forTerminalOutput, SgrState, TerminalStream } from '../common/untrusted';
import { runtimeInfo } from '../common/runtimes';
import { describeChange, formatChangeCount, type FilesChanged } from '../common/rewind';

const color = process.stdout.isTTY && !process.env.NO_COLOR;
export const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[22m` : s);
export const red = (s: string) => (color ? `\x1b[31m${s}\x1b[39m` : s);
const green = (s: string) => (color ? `\x1b[32m${s}\x1b[39m` : s);

/** Does what was written to stdout end a line (the value starts on a line of its own)? */
let atLineStart = true;

/** The colours in force on this process's terminal (stdout and stderr share it), as untrusted text left them. */
const colours = new SgrState();

/** `ESC[0m` when untrusted text may have left colours or styles on, so what follows starts plain. */
export function plain(): string {
  if (!colours.dirty) return '';
  colours.reset();
  return '\x1b[0m';
}

/** Text a person decides on (a tool's name and arguments, a value, an error): every control and invisible character shown as a marker. */
export const shown = forTerminal;

export function warn(message: string): void {
  process.stderr.write(`${plain()}${red('warning:')} ${forTerminal(message)}\n`);
}

/** A line of the runtime's log on stderr (`--verbose`): the detail behind a warning, the warm process starting. */
export function logLine(message: string): void {
  process.stderr.write(`${plain()}${dim('log:')} ${forTerminal(message)}\n`);
}

/** Longest text of one display on a terminal (characters, lines); images are never printed, only named. */
const DISPLAY_CHARS = 2000;
const DISPLAY_LINES = 40;
/** The types whose text or JSON the model reads (a terminal shows them rather than "[HTML output]"). */
const MODEL_READS = rankedFor('model').filter((m) => modelTextOf(m) === 'text' || modelTextOf(m) === 'json');
/** Most displays of one execution printed; the rest are counted. */
const MAX_DISPLAYS_PRINTED = 200;

/**
 * What a display looks like on a terminal: "[image 640×480, PNG]", "[SVG image]", a table's summary, its
 * markdown or plain text (capped), "[HTML output]". Never an image's bytes, never HTML.
 */
export function displayTerminalText(d: DisplayOutput): string {
  const data = d && typeof d.data === 'object' && d.data !== null ? d.data : {};
  const bundle: DisplayOutput = { ...d, data };
  if (displayImageOf(bundle)) return displayModelText({ ...bundle, summary: undefined });
  const hasText = !!bundle.summary || MODEL_READS.some((m) => data[m] !== undefined);
  if (!hasText && mimeText(data['text/html']) !== undefined) return '[HTML output]';
  const text = displayModelText(bundle, DISPLAY_CHARS);
  const lines = text.split('\n');
  return lines.length > DISPLAY_LINES ? `${lines.slice(0, DISPLAY_LINES).join('\n')}\n…[${lines.length - DISPLAY_LINES} more lines not shown]` : text;
}

/** A hosted sandbox's image: "[image 640×480, PNG]", or where it is when it is not a data URL. */
function imageOutputText(o: ImageOutput): string {
  const url = parseDataUrl(o.url);
  if (!url) return `[image at ${clip(String(o.url), 200)}]`;
  const size = sizeLabel(imageSize(url.mime, url.base64));
  return `[image${size ? ` ${size}` : ''}, ${imageTypeName(url.mime)}]`;
}

/** The code's output as it comes (text, displays named), one line per tool call, and the files it wrote. */
export function humanPrinter(): (e: CodeActEvent) => void {
  const clean = { stdout: new TerminalStream({ colours }), stderr: new TerminalStream({ colours }) };
  const args = new Map<string, unknown>();
  atLineStart = true;
  const displays = new Map<string, number>();
  /** Writes what is already safe (the callers sanitise). */
  const out = (safe: string) => {
    if (!safe) return;
    process.stdout.write(safe);
    atLineStart = safe.endsWith('\n');
  };
  const line = (text: string) => out(`${atLineStart ? '' : '\n'}${text}\n`);
  return (e) => {
    switch (e.type) {
      case 'codeact.output.delta':
        if (e.stream === 'stderr') process.stderr.write(clean.stderr.write(e.delta));
        else out(clean.stdout.write(e.delta));
        break;
      case 'codeact.output.display': {
        const n = (displays.get(e.item_id) ?? 0) + 1;
        if (displays.size < 10_000 || displays.has(e.item_id)) displays.set(e.item_id, n);
        if (n <= MAX_DISPLAYS_PRINTED) line(forTerminalOutput(displayTerminalText(e.output), colours) + (e.update ? dim(' (updated)') : ''));
        break;
      }
      case 'response.output_item.done': {
        if (e.item.type !== 'code_interpreter_call') break;
        const it = e.item;
        out(clean.stdout.end());
        process.stderr.write(clean.stderr.end());
        const shown = displays.get(it.id) ?? 0;
        displays.delete(it.id);
        if (shown > MAX_DISPLAYS_PRINTED) line(dim(`…[${shown - MAX_DISPLAYS_PRINTED} more displays not shown]`));
        // Hosted sandboxes send their output with the finished item: print it in order.
        if (!runtimeInfo(it.runtime)?.ours) {
          let printed = 0;
          for (const o of it.outputs) {
            if (o.type === 'logs')
              (o.stream === 'stderr' ? process.stderr : process.stdout).write(forTerminalOutput(o.logs.endsWith('\n') ? o.logs : o.logs + '\n', colours));
            else if ((o.type === 'image' || o.type === 'display') && ++printed <= MAX_DISPLAYS_PRINTED)
              line(forTerminalOutput(o.type === 'image' ? imageOutputText(o) : displayTerminalText(o), colours));
          }
          atLineStart = true;
        }
        for (const f of filesOf(it)) {
          const note = f.note;
          line(dim(`[file ${forTerminal(fileLabel(f), { line: true })}${note ? `: ${forTerminal(note)}` : ''}]`));
        }
        for (const l of changeLines(it.changes)) line(dim(forTerminal(l, { line: true })));
        break;
      }
      case 'codeact.tool_call.started':
        if (args.size < 10_000) args.set(e.call_id, e.arguments);
        break;
      case 'codeact.tool_call.completed': {
        const text = JSON.stringify(args.get(e.call_id) ?? {});
        args.delete(e.call_id);
        const mark = e.error === undefined ? green('✓') : red('✗');
        const detail = e.error === undefined ? '' : ` ${red(shown(e.error.split('\n')[0]))}`;
        const toolLine = `${dim('→')} ${shown(e.name, { line: true })}(${shown(clip(text, 160))}) ${mark} ${dim(`${Math.round(e.duration_ms)} ms`)}${detail}\n`;
        // After a colour the code's output left on; on a line of its own, as `line` does.
        const reset = plain();
        out(`${atLineStart ? '' : '\n'}${reset}${e.kind === 'discovery' ? dim(toolLine) : toolLine}`);
        break;
      }
      // The other events print nothing here (../common/eventTraits `printed`): chatPrinter prints a chat's text
      // and code; errors are said at the end of a turn.
      case 'response.output_text.delta':
      case 'response.output_text.done':
      case 'response.reasoning_text.delta':
      case 'response.reasoning_text.done':
      case 'response.code_interpreter_call.in_progress':
      case 'response.code_interpreter_call_code.delta':
      case 'response.code_interpreter_call_code.done':
      case 'response.code_interpreter_call.interpreting':
      case 'response.code_interpreter_call.completed':
      case 'response.output_item.added':
      case 'response.function_call_arguments.delta':
      case 'response.function_call_arguments.done':
      case 'codeact.approval.requested':
      case 'codeact.approval.resolved':
      case 'codeact.elicitation.requested':
      case 'codeact.elicitation.resolved':
      case 'codeact.retry':
      case 'codeact.session':
      case 'codeact.job':
      case 'codeact.job.output':
      case 'codeact.job.notes':
      case 'codeact.context.usage':
      case 'codeact.context.compacted':
      case 'codeact.notebook.cell':
      case 'codeact.usage.summary':
      case 'response.completed':
      case 'error':
        break;
    }
  };
}

export function printItemResult(item: CodeInterpreterCallItem): void {
  if (item.status === 'completed') {
    process.stdout.write(`${atLineStart ? '' : '\n'}${plain()}${green('⇒')} ${shown(JSON.stringify(item.value ?? null, null, 2))}\n`);
    atLineStart = true;
  } else if (item.error) {
    const e = item.error;
    if (e.traceback) process.stderr.write(red(forTerminalOutput(e.traceback.endsWith('\n') ? e.traceback : e.traceback + '\n', colours)));
    else process.stderr.write(red(`${forTerminal(e.type, { line: true })}: ${forTerminal(e.message)}\n`));
  }
}

/** "── Earlier turns summarised (6,900 → 2,100 tokens; the last 2 steps stay verbatim) ──" */
function compactedLine(e: ContextCompacted): string {
  const kept = Number(e.kept_turns) || 0;
  return `── ${e.method === 'stand-ins' ? 'Earlier tool results shortened' : 'Earlier turns summarised'} (${formatCount(Number(e.before_tokens) || 0)} → ${formatCount(Number(e.after_tokens) || 0)} tokens; the last ${kept === 1 ? 'step stays' : `${kept} steps stay`} verbatim) ──`;
}

/** The events a chat prints its own way (their traits say `printed: 'chat'`). */
function printedInChatOnly(e: TranscriptEvent): e is EventsWith<'printed', 'chat'> {
  return traitsOf(e.type)?.printed === 'chat';
}

/** A chat: the answer, the code as the model writes it, the result of each run; reasoning is not printed. */
export function chatPrinter(): (e: TranscriptEvent) => void {
  const base = humanPrinter();
  let inCode = false;
  const text = new TerminalStream({ plain: true });
  let code = new InvisibleRevealer();
  return (e) => {
    // The turn's markers print nothing; what a chat does not print its own way is printed as `codeact run` does.
    if (isTurnMarker(e)) return;
    if (!printedInChatOnly(e)) {
      base(e);
      if (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') {
        const it = e.item;
        process.stdout.write(
          plain() +
            (it.status === 'completed'
              ? dim(`⇒ ${shown(JSON.stringify(it.value ?? null).slice(0, 300))}\n\n`)
              : `✗ ${shown(`${it.error?.type ?? 'Error'}: ${it.error?.message ?? ''}`)}\n\n`),
        );
      }
      return;
    }
    switch (e.type) {
      case 'response.output_text.delta':
        if (!e.thinking) process.stdout.write(text.write(e.delta));
        break;
      case 'response.output_text.done':
        if (!e.thinking) process.stdout.write(text.end());
        break;
      case 'response.code_interpreter_call.in_progress':
        process.stdout.write(`${plain()}${dim('\n```python\n')}`);
        code = new InvisibleRevealer();
        inCode = true;
        break;
      case 'response.code_interpreter_call_code.delta':
        // The code as written: every control character and invisible one shown as a marker, none sent.
        if (inCode) process.stdout.write(dim(forTerminal(code.write(e.delta))));
        break;
      case 'response.code_interpreter_call_code.done':
        if (inCode) process.stdout.write(dim(forTerminal(code.end()) + (e.code.endsWith('\n') ? '```\n' : '\n```\n')));
        inCode = false;
        break;
      case 'codeact.retry':
        process.stderr.write(`${forTerminal(e.message)}\n`);
        break;
      case 'codeact.session':
        if (e.state === 'ended') process.stderr.write(`${dim(forTerminal(e.message))}\n`);
        break;
      case 'codeact.context.compacted':
        // The boundary, said once; the saved conversation keeps every turn (and the summary).
        process.stderr.write(`${plain()}${dim(compactedLine(e))}\n`);
        break;
    }
  };
}

/** Changes printed at most per execution. */
const MAX_CHANGES_PRINTED = 20;

/** "[3 files changed: created side.txt, changed out.csv, deleted data.csv]" lines of an execution's workspace changes. */
function changeLines(c: FilesChanged | undefined): string[] {
  if (!c || (!c.changes.length && !c.incomplete)) return [];
  const lines = c.changes.length ? [`[${formatChangeCount(c.changes.length)}${c.staged ? ' · staged, not in the workspace yet' : ''}]`] : [];
  for (const ch of c.changes.slice(0, MAX_CHANGES_PRINTED))
    lines.push(`  ${describeChange(ch)}${ch.notRestorable ? ` (cannot be reverted: ${ch.notRestorable})` : ''}`);
  if (c.changes.length > MAX_CHANGES_PRINTED) lines.push(`  …[${c.changes.length - MAX_CHANGES_PRINTED} more]`);
  if (c.incomplete) lines.push(`[not every change is listed: ${c.incomplete}]`);
  return lines;
}
