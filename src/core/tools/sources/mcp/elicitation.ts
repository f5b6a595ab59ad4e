/**
 * `elicitation/create` from an MCP server (form mode): the server asks the person for a few values while
 * one of its tools runs. The request is untrusted input: the form is bounded ({@link ELICITATION_LIMITS}),
 * its text is cut to length, and the answer is checked against
 * the requested schema with the gateway's validator (gateway/schema) before it goes back; an answer that
 * does not pass is shown to the person again, field by field, and never sent.
 *
 * The form is asked through the {@link Elicitor} of the tool call that caused it (the gateway's host: the
 * panel, a quick input, the CLI). While it is open, the call's timeout and the run's clock are paused.
 */
import { ErrorCode, McpError, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type {
  ElicitationAnswer,
  ElicitationForm,
  ElicitationPrompt,
  ElicitField,
  ElicitOption,
  ElicitValue,
  ElicitValues,
} from '../../../../common/elicitation';
import { coerceElicitValues } from '../../../../common/elicitation';
import { clip } from '../../../../common/format';
import { revealInvisible } from '../../../../common/invisibleChars';
import type { JsonSchema } from '../../../../common/tools';
import { compileSchema } from '../../../gateway/schema';
import { measureShape } from '../../../gateway/limits';
import { raceAbort } from '../../../util/abort';
import { newId } from '../../../util/ids';

export const ELICITATION_LIMITS = {
  /** Most fields in one form. */
  maxFields: 40,
  /** Longest message shown (characters); a longer one is cut and says so. */
  maxMessageChars: 4_000,
  /** Longest title, key or choice label shown. */
  maxLabelChars: 200,
  maxDescriptionChars: 1_000,
  /** Most choices of one field. */
  maxOptions: 200,
  /** Longest choice value (it goes back verbatim, so it cannot be cut). */
  maxValueChars: 1_000,
  /** Depth and size of the requested schema as a whole. */
  maxDepth: 6,
  maxSchemaBytes: 64 * 1024,
  /** How many answers that do not pass the schema the person may give before the form is cancelled. */
  maxAttempts: 20,
};

/** The call of a server's tool in flight, as the elicitation handler sees it. */
export interface ElicitingCall {
  /** Asks the person on this call's host; `attributed`: the form is known to come from this call. */
  elicit?: (prompt: ElicitationPrompt, attributed: boolean) => Promise<ElicitationAnswer>;
  /** Pauses the call's timeout and its run's clock until the returned function is called. */
  pause(): () => void;
  /** Aborts when the call ends or is stopped. */
  signal: AbortSignal;
}

type FormParams = Extract<ElicitRequest['params'], { requestedSchema: unknown }>;
type PropertySchema = FormParams['requestedSchema']['properties'][string];

/**
 * `text` cut to what the form shows. Its characters stay as the server sent them: each host shows them
 * through the sanitiser of its medium (the CLI's forTerminal, VS Code's forDisplay, the panel's marker
 * boxes, ../../../../webview/reveal), so the panel can draw each invisible character as a box of its own.
 */
function shown(text: string, max: number): { text: string; clipped: boolean } {
  return { text: clip(text, max), clipped: text.length > max };
}

const label = (s: string) => shown(s, ELICITATION_LIMITS.maxLabelChars).text;

/** Thrown for a form CodeAct will not show; the message says why (it goes back to the server, and to the log). */
class ElicitationRefused extends McpError {
  constructor(message: string) {
    super(ErrorCode.InvalidParams, message);
  }
}

/** The form of a request, bounded and safe to show, or an {@link ElicitationRefused}. */
export function elicitationForm(params: FormParams, server: string): { form: ElicitationForm; schemas: Record<string, PropertySchema> } {
  const L = ELICITATION_LIMITS;
  const shape = measureShape(params.requestedSchema, { maxBytes: L.maxSchemaBytes, maxDepth: L.maxDepth, maxKeys: 20_000 });
  if (shape.problem) throw new ElicitationRefused(`CodeAct does not show this form: its requested schema is refused (${shape.problem}).`);
  const entries = Object.entries(params.requestedSchema.properties ?? {});
  if (entries.length > L.maxFields)
    throw new ElicitationRefused(`CodeAct does not show this form: it has ${entries.length} fields, more than ${L.maxFields}. Ask for fewer values at a time.`);
  const required = new Set(params.requestedSchema.required ?? []);
  const fields: ElicitField[] = [];
  const schemas: Record<string, PropertySchema> = {};
  for (const [key, prop] of entries) {
    if (key.length > L.maxLabelChars)
      throw new ElicitationRefused(`CodeAct does not show this form: a field's name is longer than ${L.maxLabelChars} characters.`);
    if (key === '__proto__') throw new ElicitationRefused('CodeAct does not show this form: a field is named "__proto__".');
    const p = prop as Record<string, unknown>;
    const field: ElicitField = {
      key,
      kind: 'string',
      title: label(typeof p.title === 'string' && p.title ? p.title : key),
      required: required.has(key),
    };
    if (typeof p.description === 'string' && p.description) field.description = shown(p.description, L.maxDescriptionChars).text;
    const options = choices(p);
    if (options) {
      if (options.length > L.maxOptions)
        throw new ElicitationRefused(
          `CodeAct does not show this form: the field "${revealInvisible(field.title)}" has ${options.length} choices, more than ${L.maxOptions}.`,
        );
      if (options.some((o) => o.value.length > L.maxValueChars))
        throw new ElicitationRefused(
          `CodeAct does not show this form: a choice of "${revealInvisible(field.title)}" is longer than ${L.maxValueChars} characters.`,
        );
      field.kind = p.type === 'array' ? 'multi' : 'enum';
      field.options = options;
    } else if (p.type === 'boolean' || p.type === 'number' || p.type === 'integer') {
      field.kind = p.type;
    } else if (typeof p.format === 'string' && ['email', 'uri', 'date', 'date-time'].includes(p.format)) {
      field.format = p.format as ElicitField['format'];
    }
    for (const k of ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems'] as const) if (typeof p[k] === 'number') field[k] = p[k] as number;
    if (p.default !== undefined) field.default = p.default as ElicitValue;
    fields.push(field);
    schemas[key] = prop;
  }
  const message = shown(params.message, L.maxMessageChars);
  return { form: { server, message: message.text, ...(message.clipped ? { messageClipped: true } : {}), fields }, schemas };
}

/** The choices of an enum field: `oneOf`/`anyOf` titles, legacy `enumNames`, or the values themselves. */
function choices(p: Record<string, unknown>): ElicitOption[] | undefined {
  const titled = (list: unknown) =>
    Array.isArray(list) ? list.map((o: { const: string; title?: string }) => ({ value: o.const, label: label(o.title || o.const) })) : undefined;
  if (p.type === 'array') {
    const items = (p.items ?? {}) as Record<string, unknown>;
    return titled(items.anyOf) ?? (Array.isArray(items.enum) ? (items.enum as string[]).map((v) => ({ value: v, label: label(v) })) : undefined);
  }
  if (Array.isArray(p.oneOf)) return titled(p.oneOf);
  if (!Array.isArray(p.enum)) return undefined;
  const names = Array.isArray(p.enumNames) ? (p.enumNames as string[]) : [];
  return (p.enum as string[]).map((v, i) => ({ value: v, label: label(typeof names[i] === 'string' && names[i] ? names[i] : v) }));
}

/**
 * What is wrong with `content`, per field key: a required field left empty, or a value that does not pass
 * its property's schema (the gateway's validator: types, formats, ranges, choices). Empty when it passes.
 */
function elicitationProblems(form: ElicitationForm, schemas: Record<string, PropertySchema>, content: ElicitValues): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const f of form.fields) {
    const value = content[f.key];
    if (value === undefined || (Array.isArray(value) && value.length === 0 && f.required)) {
      if (f.required) problems[f.key] = 'is required';
      continue;
    }
    let lines: string[];
    try {
      lines = compileSchema(schemas[f.key] as unknown as JsonSchema)(value);
    } catch (e) {
      lines = [`cannot be checked (${(e as Error).message})`];
    }
    if (lines.length) problems[f.key] = lines.map((l) => l.replace(/^\$ /, '')).join('; ');
  }
  return problems;
}

interface ElicitationContext {
  /** The server's label. */
  server: string;
  /** Its calls in flight, oldest first. */
  calls: readonly ElicitingCall[];
  /** The request's own signal (the server cancelled it, the connection closed). */
  signal: AbortSignal;
  log?: (line: string) => void;
}

/**
 * Answers one `elicitation/create`: asks the person on the host of the call that caused it (the newest
 * call in flight; attributed to it when it is the only one), pausing every in-flight call's clock while
 * the form is open, and shows the form again with the problems until the values pass or the person
 * declines or cancels. Never sends values that do not pass.
 */
export async function answerElicitation(params: ElicitRequest['params'], ctx: ElicitationContext): Promise<ElicitResult> {
  if (params.mode === 'url' || !('requestedSchema' in params)) throw new ElicitationRefused('CodeAct supports form elicitation only, not URL mode.');
  const call = [...ctx.calls].reverse().find((c) => c.elicit);
  if (!call?.elicit) {
    ctx.log?.(`${ctx.server} asked for input with no tool call of it running here that can ask the person: declined`);
    if (!ctx.calls.length) throw new McpError(ErrorCode.InvalidRequest, "CodeAct shows an elicitation only while one of the server's tools runs.");
    return { action: 'decline' };
  }
  const { form, schemas } = elicitationForm(params, ctx.server);
  const signal = AbortSignal.any([ctx.signal, call.signal]);
  const resumes = ctx.calls.map((c) => c.pause());
  const id = newId('elicit');
  const attributed = ctx.calls.length === 1;
  try {
    let problems: Record<string, string> | undefined;
    let values: ElicitValues | undefined;
    for (let attempt = 0; attempt < ELICITATION_LIMITS.maxAttempts; attempt++) {
      const check = (raw: Record<string, unknown>) => elicitationProblems(form, schemas, coerceElicitValues(form.fields, raw));
      const prompt: ElicitationPrompt = { ...form, id, signal, check, ...(problems ? { problems, values } : {}) };
      const answer = await raceAbort(call.elicit(prompt, attributed), signal, () => new Error('stopped')).catch((e: Error) => {
        if (signal.aborted) return { action: 'cancel' } as const;
        throw e;
      });
      if (answer.action !== 'accept') {
        ctx.log?.(
          `${ctx.server}: elicitation ${id} ${answer.action === 'decline' ? 'declined' : 'cancelled'}${signal.aborted ? ' (the call ended first)' : ''}`,
        );
        return { action: answer.action };
      }
      const content = coerceElicitValues(form.fields, answer.content ?? {});
      const found = elicitationProblems(form, schemas, content);
      if (!Object.keys(found).length) {
        ctx.log?.(`${ctx.server}: elicitation ${id} accepted (${Object.keys(content).length} values)`);
        return { action: 'accept', content };
      }
      problems = found;
      values = content;
      ctx.log?.(`${ctx.server}: elicitation ${id}: the answer does not pass the schema (${Object.keys(found).join(', ')}); asking again`);
    }
    ctx.log?.(`${ctx.server}: elicitation ${id} cancelled after ${ELICITATION_LIMITS.maxAttempts} answers that did not pass`);
    return { action: 'cancel' };
  } finally {
    for (const r of resumes) r();
  }
}
