/**
 * An MCP server's form (elicitation) in the terminal, asked in its turn (./terminalQuestions): the server's
 * message, then one question per field on stderr (stdout stays the run's output), each answer checked by the
 * requested schema as it is typed. Without a terminal on stdin (a pipe, CI, `codeact run -`) nobody can
 * answer: the form is declined and stderr says so. The server's text is already bounded and its invisible
 * characters revealed by core; it is printed through the terminal sanitiser too.
 */
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
import { jobAsks } from '../common/tools';
import { shown } from './print';
import { indent, terminalQuestions, type Asking, type TerminalQuestions } from './terminalQuestions';

/** Tries per field before the form is cancelled. */
const TRIES = 5;

/** A name, title, label or value from the server: one line, every control and invisible character shown. */
const one = (s: unknown) => forTerminal(s, { line: true });

export function terminalElicitor(questions: TerminalQuestions = terminalQuestions()): Elicitor {
  return (p) => {
    const from = (p.tool ? ` while running the tool "${one(p.tool)}"` : '') + (p.job === undefined ? '' : ` (${jobAsks(p.job).toLowerCase()})`);
    if (!questions.interactive) {
      process.stderr.write(
        shown(
          `codeact: the ${one(p.server)} asked for input${from}, and declined it: stdin is not a terminal, so nobody can answer here. Run in a terminal to answer such forms.`,
        ) + '\n',
      );
      return Promise.resolve({ action: 'decline' });
    }
    return questions.ask(
      p.signal,
      (): ElicitationAnswer => ({ action: 'cancel' }),
      (q) => askForm(p, from, q),
    );
  };
}

async function askForm(p: ElicitationPrompt, from: string, q: Asking): Promise<ElicitationAnswer> {
  const out = (s: string) => q.say(s);
  try {
    if (!p.problems) {
      out(
        `\n${q.shown(`The ${one(p.server)} asks for input${from}:`)}\n${indent(q.shown(p.message))}\nOnly what you enter is sent to this server. Do not enter passwords or keys.\n`,
      );
      const choice = (await q.line('Fill in the form (f), decline (d) or cancel (c)? [f] '))?.trim().toLowerCase();
      if (choice === null || choice === undefined || choice.startsWith('c')) return { action: 'cancel' };
      if (choice.startsWith('d')) return { action: 'decline' };
    } else out(`\nThe answer does not pass; fix the fields it names (Enter keeps a value).\n`);
    const values: ElicitValues = { ...(p.values ?? {}) };
    for (const f of p.fields) {
      // Every line of a field holds the server's words (titles, descriptions, labels, defaults): all of it is shown safe.
      const got = await askField(
        f,
        p,
        values[f.key],
        (text) => q.line(q.shown(text)),
        (text) => out(q.shown(text)),
      );
      if (got === null) return { action: 'cancel' };
      if (got === undefined) delete values[f.key];
      else values[f.key] = got;
    }
    return { action: 'accept', content: values } satisfies ElicitationAnswer;
  } finally {
    out('\n');
  }
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
  const kept =
    current === undefined ? '' : ` [${one(Array.isArray(current) ? current.join(', ') : current === true ? 'y' : current === false ? 'n' : current)}]`;
  for (let t = 0; t < TRIES; t++) {
    const raw = await ask(`${title}${f.required ? ' *' : ''} (${hint})${kept}: `);
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
