/**
 * An MCP server's form as a quick input sequence, where the panel cannot show it (a notebook cell, Run
 * with Tools with the panel closed): a dialog with the server's message (Fill In… / Decline; closing it
 * cancels), then one input or pick per field, each checked as it is typed by the requested schema.
 * Escape at any step cancels. The server's text is bounded by core and shown through forDisplay (names,
 * titles and labels as one line each); a default value is the input's editable value, as the server sent it.
 * VS Code is reached through {@link ElicitInputApis} (bound to `vscode` in ./approvals.apis).
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
import { forDisplay } from '../common/untrusted';

/** A name, title or label from the server: one line, invisible and control characters shown. */
const one = (s: unknown) => forDisplay(s, { line: true });

interface PickItem {
  label: string;
  description?: string;
  value?: string;
  picked?: boolean;
}

export interface ElicitInputApis {
  showInformationMessage(message: string, options: { modal: boolean; detail?: string }, ...items: string[]): PromiseLike<string | undefined>;
  showQuickPick(
    items: PickItem[],
    options: { title: string; placeHolder?: string; canPickMany?: boolean },
    signal: AbortSignal,
  ): PromiseLike<PickItem | PickItem[] | undefined>;
  showInputBox(
    options: { title: string; prompt?: string; value?: string; placeHolder?: string; validateInput(v: string): string | undefined },
    signal: AbortSignal,
  ): PromiseLike<string | undefined>;
}

const FILL_IN = 'Fill In…';
const DECLINE = 'Decline';
const EMPTY = '(leave empty)';

export function quickInputElicitor(apis: ElicitInputApis): Elicitor {
  return async (p: ElicitationPrompt): Promise<ElicitationAnswer> => {
    if (!p.problems) {
      const from = p.tool ? `While running the tool "${one(p.tool)}".\n\n` : '';
      const pick = await apis.showInformationMessage(
        `The ${one(p.server)} asks for input`,
        { modal: true, detail: `${from}${forDisplay(p.message)}\n\nOnly what you enter is sent to this server. Do not enter passwords or keys.` },
        FILL_IN,
        DECLINE,
      );
      if (pick === DECLINE) return { action: 'decline' };
      if (pick !== FILL_IN) return { action: 'cancel' };
    }
    const values: ElicitValues = { ...(p.values ?? {}) };
    const n = p.fields.length;
    for (let i = 0; i < n; i++) {
      if (p.signal.aborted) return { action: 'cancel' };
      const f = p.fields[i];
      const title = `${one(p.server)}: ${one(f.title)}${f.required ? ' (required)' : ''} (${i + 1}/${n})`;
      const problem = p.problems?.[f.key];
      const got = await askField(apis, f, title, problem, values[f.key], p);
      if (got === null) return { action: 'cancel' };
      if (got === undefined) delete values[f.key];
      else values[f.key] = got;
    }
    return { action: 'accept', content: values };
  };
}

/** One field: its value, undefined for "left empty", null for Escape. */
async function askField(
  apis: ElicitInputApis,
  f: ElicitField,
  title: string,
  problem: string | undefined,
  previous: unknown,
  p: ElicitationPrompt,
): Promise<ElicitField['default'] | undefined | null> {
  const placeHolder =
    [problem ? `${one(f.title)} ${forDisplay(problem)}.` : '', forDisplay(f.description, { line: true })].filter(Boolean).join(' — ') || undefined;
  const current = previous ?? f.default;
  if (f.kind === 'boolean' || f.kind === 'enum' || f.kind === 'multi') {
    const options: PickItem[] =
      f.kind === 'boolean'
        ? [
            { label: 'Yes', value: 'true', picked: current === true },
            { label: 'No', value: 'false', picked: current === false },
          ]
        : (f.options ?? []).map((o) => ({
            label: one(o.label),
            description: o.label === o.value ? undefined : one(o.value),
            value: o.value,
            picked: Array.isArray(current) ? current.includes(o.value) : current === o.value,
          }));
    if (!f.required && f.kind !== 'multi') options.push({ label: EMPTY });
    if (f.kind !== 'multi') options.sort((a, b) => Number(!!b.picked) - Number(!!a.picked));
    const got = await apis.showQuickPick(options, { title, placeHolder, canPickMany: f.kind === 'multi' }, p.signal);
    if (got === undefined) return null;
    if (Array.isArray(got)) return got.map((x) => x.value!).filter((v) => v !== undefined);
    return got.value === undefined ? undefined : coerceElicitValue(f, got.value);
  }
  const text = await apis.showInputBox(
    {
      title,
      prompt: placeHolder ?? elicitFieldHint(f),
      value: current === undefined ? '' : String(current),
      placeHolder: f.format === 'date-time' ? 'YYYY-MM-DDTHH:MM:SSZ' : elicitFieldHint(f),
      validateInput: (v) => {
        const value = coerceElicitValue(f, v);
        if (value === undefined) return f.required ? `${one(f.title)} is required.` : undefined;
        const found = p.check({ [f.key]: value })[f.key];
        return found ? `${one(f.title)} ${forDisplay(found)}.` : undefined;
      },
    },
    p.signal,
  );
  if (text === undefined) return null;
  return coerceElicitValue(f, text);
}
