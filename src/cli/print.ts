/**
 * What the CLI prints for people (`--json` prints the events as they are): the code's output as it
 * comes, a line per tool call, the value; for chats the answer, the code as the model writes it, and the
 * result of each run. Colours pass; every other control sequence from the code, the tools or the model
 * is stripped, so nothing they print can move the cursor, set the title or write the clipboard.
 */
import type { CodeActEvent, CodeInterpreterCallItem } from '../common/events';
import { sanitizeTerminal, TerminalSanitizer } from '../common/terminal';
import type { TranscriptEvent } from '../common/transcript';

const color = process.stdout.isTTY && !process.env.NO_COLOR;
export const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[22m` : s);
export const red = (s: string) => (color ? `\x1b[31m${s}\x1b[39m` : s);
export const green = (s: string) => (color ? `\x1b[32m${s}\x1b[39m` : s);

function truncate(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

export function warn(message: string): void {
  process.stderr.write(`${red('warning:')} ${sanitizeTerminal(message)}\n`);
}

/** The code's output as it comes and one line per tool call. */
export function humanPrinter(): (e: CodeActEvent) => void {
  const clean = { stdout: new TerminalSanitizer(), stderr: new TerminalSanitizer() };
  const args = new Map<string, unknown>();
  return (e) => {
    switch (e.type) {
      case 'codeact.output.delta':
        (e.stream === 'stderr' ? process.stderr : process.stdout).write(clean[e.stream === 'stderr' ? 'stderr' : 'stdout'].write(e.delta));
        break;
      case 'codeact.tool_call.started':
        if (args.size < 10_000) args.set(e.call_id, e.arguments);
        break;
      case 'codeact.tool_call.completed': {
        const text = JSON.stringify(args.get(e.call_id) ?? {});
        args.delete(e.call_id);
        const mark = e.error === undefined ? green('✓') : red('✗');
        const detail = e.error === undefined ? '' : ` ${red(sanitizeTerminal(e.error.split('\n')[0]))}`;
        const line = `${dim('→')} ${sanitizeTerminal(e.name)}(${sanitizeTerminal(truncate(text, 160))}) ${mark} ${dim(`${Math.round(e.duration_ms)} ms`)}${detail}\n`;
        process.stdout.write(e.kind === 'discovery' ? dim(line) : line);
        break;
      }
    }
  };
}

export function printItemResult(item: CodeInterpreterCallItem): void {
  if (item.status === 'completed') {
    process.stdout.write(`${green('⇒')} ${sanitizeTerminal(JSON.stringify(item.value ?? null, null, 2))}\n`);
  } else if (item.error) {
    const e = item.error;
    if (e.traceback) process.stderr.write(red(sanitizeTerminal(e.traceback.endsWith('\n') ? e.traceback : e.traceback + '\n')));
    else process.stderr.write(red(sanitizeTerminal(`${e.type}: ${e.message}\n`)));
  }
}

/** A chat: the answer, the code as the model writes it, the result of each run; reasoning is not printed. */
export function chatPrinter(): (e: TranscriptEvent) => void {
  const base = humanPrinter();
  let inCode = false;
  const text = new TerminalSanitizer();
  const code = new TerminalSanitizer();
  return (e) => {
    switch (e.type) {
      case 'response.output_text.delta':
        if (!e.thinking) process.stdout.write(text.write(e.delta));
        break;
      case 'response.code_interpreter_call.in_progress':
        process.stdout.write(dim('\n```python\n'));
        inCode = true;
        break;
      case 'response.code_interpreter_call_code.delta':
        if (inCode) process.stdout.write(dim(code.write(e.delta)));
        break;
      case 'response.code_interpreter_call_code.done':
        if (inCode) process.stdout.write(dim(e.code.endsWith('\n') ? '```\n' : '\n```\n'));
        inCode = false;
        break;
      case 'response.output_item.done':
        if (e.item.type === 'code_interpreter_call') {
          const it = e.item;
          if (it.runtime !== 'local' && it.runtime !== 'jupyter') {
            for (const o of it.outputs) if (o.type === 'logs') (o.stream === 'stderr' ? process.stderr : process.stdout).write(sanitizeTerminal(o.logs.endsWith('\n') ? o.logs : o.logs + '\n'));
          }
          process.stdout.write(sanitizeTerminal(it.status === 'completed' ? dim(`⇒ ${JSON.stringify(it.value ?? null).slice(0, 300)}\n\n`) : `✗ ${it.error?.type ?? 'Error'}: ${it.error?.message ?? ''}\n\n`));
        }
        break;
      case 'codeact.retry':
        process.stderr.write(`${sanitizeTerminal(e.message)}\n`);
        break;
      case 'codeact.session':
        if (e.state === 'ended') process.stderr.write(`${dim(sanitizeTerminal(e.message))}\n`);
        break;
      case 'error':
      case 'codeact.turn.started':
      case 'codeact.turn.ended':
        break;
      default:
        base(e);
    }
  };
}
