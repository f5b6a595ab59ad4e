/**
 * An MCP server's form (elicitation) in the terminal: the server's message, then one question per field
 * on stderr (stdout stays the run's output), each answer checked by the requested schema as it is typed.
 * Without a terminal on stdin (a pipe, CI, `codeact run -`) nobody can answer: the form is declined and
 * stderr says so. The server's text is bounded by core; every string of it goes through forTerminal here
 * (titles, labels, names and values as one line each), so none can send an escape sequence or start a line
 * that passes for CodeAct's own question.
 */
import { createInterface } from 'node:readline/promises';
import {
  coerceElicitValue,
  elicitFieldHint,
  type ElicitationAnswer,
  type ElicitationPrompt,
  type ElicitField,
  type ElicitValues,
  type Elicitor,
} from '../common/elicitation';
import { forTerminal } from '../common/untrusted';

/** A name, title, label or value from the server: one line, every control and invisible character shown. */
const one = (s: unknown) => forTerminal(s, { line: true });

/** Tries per field before the form is cancelled. */
const TRIES = 5;

interface TerminalStreams {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
}

export function terminalElicitor(streams: TerminalStreams = { input: process.stdin, output: process.stderr }): Elicitor {
  return async (p) => {
    const out = (s: string) => streams.output.write(s);
    const from = p.tool ? ` while running the tool "${one(p.tool)}"` : '';
    const server = one(p.server);
    if (!streams.input.isTTY) {
      out(
        `codeact: the ${server} asked for input${from}, and declined it: stdin is not a terminal, so nobody can answer here. Run in a terminal to answer such forms.\n`,
      );
      return { action: 'decline' };
    }
    const rl = createInterface({ input: streams.input, output: streams.output, terminal: true });
    // Ctrl-C or Ctrl-D in the form, or the run stopping, cancels it.
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    p.signal.addEventListener('abort', onAbort, { once: true });
    rl.on('SIGINT', onAbort);
    rl.on('close', onAbort);
    const ask = (q: string) => (stop.signal.aborted ? Promise.resolve(null) : rl.question(q, { signal: stop.signal }).catch(() => null));
    try {
      if (!p.problems) {
        out(
          `\nThe ${server} asks for input${from}:\n${indent(forTerminal(p.message))}\nOnly what you enter is sent to this server. Do not enter passwords or keys.\n`,
        );
        const choice = (await ask('Fill in the form (f), decline (d) or cancel (c)? [f] '))?.trim().toLowerCase();
        if (choice === null || choice === undefined || choice.startsWith('c')) return { action: 'cancel' };
        if (choice.startsWith('d')) return { action: 'decline' };
      } else out(`\nThe answer does not pass; fix the fields it names (Enter keeps a value).\n`);
      const values: ElicitValues = { ...(p.values ?? {}) };
      for (const f of p.fields) {
        const got = await askField(f, p, values[f.key], ask, out);
        if (got === null) return { action: 'cancel' };
        if (got === undefined) delete values[f.key];
        else values[f.key] = got;
      }
      return { action: 'accept', content: values } satisfies ElicitationAnswer;
    } finally {
      p.signal.removeEventListener('abort', onAbort);
      rl.close();
      out('\n');
    }
  };
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}

/** One field: its value, undefined for "left empty", null for stop (Ctrl-D, Ctrl-C, too many tries). */
async function askField(
  f: ElicitField,
  p: ElicitationPrompt,
  previous: unknown,
  ask: (q: string) => Promise<string | null>,
  out: (s: string) => void,
): Promise<ElicitField['default'] | undefined | null> {
  const current = previous ?? f.default;
  const options = f.options ?? [];
  const title = one(f.title);
  if (f.description) out(`${indent(forTerminal(f.description))}\n`);
  if (p.problems?.[f.key]) out(`  ${title} ${forTerminal(p.problems[f.key])}.\n`);
  if (options.length) out(options.map((o, i) => `    ${i + 1}) ${one(o.label)}`).join('\n') + '\n');
  const hint =
    f.kind === 'enum'
      ? 'a number or the value'
      : f.kind === 'multi'
        ? 'numbers or values, separated by commas'
        : f.kind === 'boolean'
          ? 'y/n'
          : elicitFieldHint(f);
  const shown =
    current === undefined ? '' : ` [${one(Array.isArray(current) ? current.join(', ') : current === true ? 'y' : current === false ? 'n' : current)}]`;
  for (let t = 0; t < TRIES; t++) {
    const raw = await ask(`${title}${f.required ? ' *' : ''} (${hint})${shown}: `);
    if (raw === null) return null;
    const text = raw.trim();
    if (!text) {
      if (current !== undefined) return current as ElicitField['default'];
      if (!f.required) return undefined;
      out(`  ${title} is required.\n`);
      continue;
    }
    const pick = (s: string) => {
      const n = Number(s);
      return Number.isInteger(n) && n >= 1 && n <= options.length ? options[n - 1].value : s;
    };
    const typed =
      f.kind === 'enum'
        ? pick(text)
        : f.kind === 'multi'
          ? text
              .split(',')
              .map((s) => pick(s.trim()))
              .filter(Boolean)
          : f.kind === 'boolean'
            ? /^y/i.test(text)
              ? true
              : /^n/i.test(text)
                ? false
                : text
            : text;
    const value = coerceElicitValue(f, typed);
    const problem = value === undefined ? undefined : p.check({ [f.key]: value })[f.key];
    if (!problem) return value;
    out(`  ${title} ${forTerminal(problem)}.\n`);
  }
  out(`  Too many tries: the form is cancelled.\n`);
  return null;
}
