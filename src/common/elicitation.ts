/**
 * Elicitation (MCP `elicitation/create`, form mode): what a server asks the user for, as the hosts show it.
 * The form here is already bounded and its text made safe to show (invisible characters revealed as
 * `<U+…>` markers) by core (tools/sources/mcp/elicitation.ts); every host (the panel's card, a quick
 * input, the CLI's prompt) renders it as text, never as HTML, and turns what the person typed into
 * values with {@link coerceElicitValue}. Core validates the values against the requested schema before
 * anything goes back to the server.
 */

type ElicitFieldKind = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'multi';

export interface ElicitOption {
  /** What goes back to the server (exactly as it sent it). */
  value: string;
  /** What the person sees (its title, or the value), safe to show. */
  label: string;
}

export interface ElicitField {
  /** The property's name in the requested schema (what the answer is keyed by). */
  key: string;
  kind: ElicitFieldKind;
  /** The title to show (the schema's `title`, or the key), safe to show. */
  title: string;
  description?: string;
  required: boolean;
  /** A string's format: the input to show. */
  format?: 'email' | 'uri' | 'date' | 'date-time';
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  /** `enum` and `multi`: the choices. */
  options?: ElicitOption[];
  default?: ElicitValue;
}

export type ElicitValue = string | number | boolean | string[];
export type ElicitValues = Record<string, ElicitValue>;

/** The form a server asks to be filled in, bounded and safe to show. */
export interface ElicitationForm {
  /** The server's label ("MCP server \"node srv.js\""). */
  server: string;
  /** The server's message: untrusted text, bounded, invisible characters revealed. */
  message: string;
  /** True when the message was cut to the limit. */
  messageClipped?: boolean;
  fields: ElicitField[];
}

/** How the person answered: the values (checked by core afterwards), no thanks (decline), or not now (cancel). */
export type ElicitationAnswer = { action: 'accept'; content: ElicitValues } | { action: 'decline' } | { action: 'cancel' };

/** One showing of the form. Shown again (same id) with `problems` when the values did not pass the schema. */
export interface ElicitationPrompt extends ElicitationForm {
  id: string;
  /** The tool that caused it, when CodeAct can tell (one call of the server in flight). */
  tool?: string;
  /** The execution item and the tool call that caused it, when known. */
  itemId?: string;
  callId?: string;
  /** The session's background job whose tool call caused it (call_tool in job n). */
  job?: number;
  /** What was wrong with the previous answer, per field key ('' for the form as a whole). */
  problems?: Record<string, string>;
  /** The previous answer, to fill the form in again. */
  values?: ElicitValues;
  /** Aborts when the answer is no longer wanted (the server cancelled, the run stopped). */
  signal: AbortSignal;
  /** What is wrong with these values, per field key, by the requested schema (empty: they pass). The same check runs again before anything is sent. */
  check(values: Record<string, unknown>): Record<string, string>;
}

/** Asks the person. Resolves `cancel` when the prompt's signal aborts. */
export type Elicitor = (prompt: ElicitationPrompt) => Promise<ElicitationAnswer>;

/**
 * What the person typed for `field` as a value, or undefined for "left empty". Never throws: a number
 * that does not parse stays a string, so that the schema check says what is wrong with it.
 */
export function coerceElicitValue(field: ElicitField, raw: unknown): ElicitValue | undefined {
  if (raw === undefined || raw === null) return undefined;
  switch (field.kind) {
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true' || raw === 'yes') return true;
      if (raw === 'false' || raw === 'no') return false;
      return raw === '' ? undefined : String(raw);
    case 'number':
    case 'integer': {
      if (typeof raw === 'number') return raw;
      const text = String(raw).trim();
      if (!text) return undefined;
      const n = Number(text);
      return Number.isFinite(n) ? n : text;
    }
    case 'multi':
      if (Array.isArray(raw)) return raw.map(String);
      return String(raw) === ''
        ? []
        : String(raw)
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean);
    default: {
      const text = String(raw);
      return text === '' ? undefined : text;
    }
  }
}

/** The values of `raw` for the form's fields (other keys are dropped), empty ones left out. */
export function coerceElicitValues(fields: readonly ElicitField[], raw: Record<string, unknown>): ElicitValues {
  const out: ElicitValues = {};
  for (const f of fields) {
    if (!Object.prototype.hasOwnProperty.call(raw, f.key)) continue;
    const v = coerceElicitValue(f, raw[f.key]);
    if (v !== undefined) out[f.key] = v;
  }
  return out;
}

/** A one-line hint of what a field takes ("a number from 1 to 10", "an email address"), for prompts. */
export function elicitFieldHint(f: ElicitField): string {
  const range = (lo?: number, hi?: number) =>
    lo !== undefined && hi !== undefined ? ` from ${lo} to ${hi}` : lo !== undefined ? ` of at least ${lo}` : hi !== undefined ? ` of at most ${hi}` : '';
  switch (f.kind) {
    case 'boolean':
      return 'yes or no';
    case 'number':
      return `a number${range(f.minimum, f.maximum)}`;
    case 'integer':
      return `a whole number${range(f.minimum, f.maximum)}`;
    case 'enum':
      return 'one of the choices';
    case 'multi':
      return 'any of the choices';
    default:
      return f.format === 'email'
        ? 'an email address'
        : f.format === 'uri'
          ? 'a URI (https://…)'
          : f.format === 'date'
            ? 'a date (YYYY-MM-DD)'
            : f.format === 'date-time'
              ? 'a date and time (YYYY-MM-DDTHH:MM:SSZ)'
              : 'text';
  }
}
