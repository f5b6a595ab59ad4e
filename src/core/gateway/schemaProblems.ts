/**
 * A JSON Schema that does not compile, explained for a person: each problem names where it is (a path in the
 * schema), the value written there, why it is wrong in plain words, and what to write instead. The
 * validator's own wording ("data/type must be equal to one of the allowed values") never reaches the user.
 */
import type { ErrorObject } from 'ajv';
import { clip } from '../../common/format';
import { formatDeclarationProblem, type DeclarationProblem } from '../../common/tools';

/** The types a JSON Schema's `type` may name. */
const JSON_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'] as const;

/** Most problems reported for one schema. */
const MAX_PROBLEMS = 8;

/** A schema that does not compile, with its problems; `field`s are paths inside the schema ('' is the schema itself). */
export class SchemaError extends Error {
  constructor(readonly problems: DeclarationProblem[]) {
    super(problems.map((p) => formatDeclarationProblem(p.field ? p : { ...p, field: undefined, reason: `The schema ${p.reason}` })).join(' '));
    this.name = 'SchemaError';
  }
}

const TYPE_WORDS: Record<string, string> = {
  array: 'a list (a JSON array)',
  object: 'an object',
  boolean: 'true or false',
  number: 'a number',
  integer: 'a whole number',
  string: 'a string (in quotes)',
  null: 'null',
};

const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];
const COUNT_KEYWORDS = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minContains', 'maxContains'];

/** How to write each keyword right, with an example. */
function keywordFix(key: string): string | undefined {
  if (NUMBER_KEYWORDS.includes(key)) return `write a number, for example "${key}": 0`;
  if (COUNT_KEYWORDS.includes(key)) return `write a whole number, 0 or more, for example "${key}": 1`;
  switch (key) {
    case 'required':
      return 'list the names of the required properties, for example "required": ["query"]';
    case 'properties':
    case 'patternProperties':
    case '$defs':
    case 'definitions':
      return `map each name to its schema, for example "${key}": {"query": {"type": "string"}}`;
    case 'additionalProperties':
    case 'items':
    case 'additionalItems':
    case 'contains':
    case 'not':
    case 'if':
    case 'then':
    case 'else':
      return `write a schema such as {"type": "string"}, or true or false`;
    case 'enum':
      return 'list the allowed values, for example "enum": ["open", "closed"]';
    case 'anyOf':
    case 'allOf':
    case 'oneOf':
    case 'prefixItems':
      return `list schemas, for example "${key}": [{"type": "string"}, {"type": "null"}]`;
    case 'pattern':
      return 'write a regular expression as a string, for example "pattern": "^[A-Z]{3}-\\\\d+$"';
    case 'description':
    case 'title':
    case 'format':
    case '$ref':
      return 'write it as a string';
    case 'uniqueItems':
      return 'write true or false';
    default:
      return undefined;
  }
}

const TYPE_ALIASES: Record<string, string> = {
  int: 'integer',
  str: 'string',
  text: 'string',
  bool: 'boolean',
  dict: 'object',
  map: 'object',
  list: 'array',
  float: 'number',
  double: 'number',
  none: 'null',
};

function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
  }
  return d[a.length][b.length];
}

/** The JSON type someone who wrote `value` most likely meant ("objekt" -> "object"). */
export function closestType(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.trim().toLowerCase();
  if (TYPE_ALIASES[v]) return TYPE_ALIASES[v];
  let best: { t: string; d: number } | undefined;
  for (const t of JSON_TYPES) {
    const d = distance(v, t);
    if (!best || d < best.d) best = { t, d };
  }
  return best && best.d <= Math.max(2, Math.floor(best.t.length / 3)) ? best.t : undefined;
}

function typeFix(bad: unknown): string {
  const all = `the JSON Schema types are ${JSON_TYPES.slice(0, -1)
    .map((t) => `"${t}"`)
    .join(', ')} and "null"`;
  const meant = closestType(bad);
  return meant ? `write "${meant}" (${all})` : `use one of them: ${all}`;
}

/** The value at a JSON pointer of the schema, as JSON text of at most 80 characters. */
function valueAt(schema: unknown, segments: string[]): string | undefined {
  let node: unknown = schema;
  for (const s of segments) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[s];
  }
  return node === undefined ? undefined : clip(JSON.stringify(node), 80);
}

function parsed(text: string | undefined): unknown {
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function segmentsOf(pointer: string): string[] {
  return pointer
    ? pointer
        .split('/')
        .slice(1)
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    : [];
}

/** The problems of a schema the meta-schema refused (ajv's errors, from `validateSchema`), in plain words. */
export function schemaProblems(errors: readonly ErrorObject[], schema: unknown): DeclarationProblem[] {
  // Errors by the place in the schema; a list's bad item is reported at the list (`"type": ["string", "nul"]`).
  const byPlace = new Map<string, { segments: string[]; item?: string; errors: ErrorObject[] }>();
  for (const e of errors) {
    let segments = segmentsOf(e.instancePath);
    let item: string | undefined;
    if (segments.length && /^\d+$/.test(segments[segments.length - 1]) && segments[segments.length - 2] === 'type') {
      item = valueAt(schema, segments);
      segments = segments.slice(0, -1);
    }
    const place = segments.join('\u0000');
    const entry = byPlace.get(place) ?? { segments, errors: [] };
    if (item !== undefined) entry.item = item;
    entry.errors.push(e);
    byPlace.set(place, entry);
  }
  const out: DeclarationProblem[] = [];
  for (const { segments, item, errors: errs } of byPlace.values()) {
    if (out.length >= MAX_PROBLEMS) break;
    const key = segments[segments.length - 1] ?? '';
    const field = segments.join('.');
    const value = valueAt(schema, segments);
    const has = (k: string) => errs.find((x) => x.keyword === k);
    if (!segments.length) {
      out.push({
        field,
        value,
        reason: 'is not a schema',
        fix: 'write an object, for example {"type": "object", "properties": {"query": {"type": "string"}}}',
      });
    } else if (key === 'type' && (has('enum') || item !== undefined)) {
      const bad = parsed(item ?? value);
      const reason = item !== undefined ? `lists ${item}, which is not a JSON Schema type` : 'is not a JSON Schema type';
      out.push({ field, value, reason, fix: typeFix(bad) });
    } else if (has('type')) {
      const want = (has('type')!.params as { type: string | string[] }).type;
      const types = Array.isArray(want) ? want : String(want).split(',');
      const words =
        types.includes('object') && types.includes('boolean') ? 'a schema (an object), true or false' : types.map((t) => TYPE_WORDS[t] ?? t).join(' or ');
      out.push({ field, value, reason: `must be ${words}`, fix: keywordFix(key) });
    } else if (has('minimum') || has('exclusiveMinimum')) {
      const p = (has('minimum') ?? has('exclusiveMinimum'))!.params as { limit: number; comparison: string };
      out.push({ field, value, reason: `must be ${p.comparison === '>=' ? `${p.limit} or more` : `more than ${p.limit}`}`, fix: keywordFix(key) });
    } else if (has('uniqueItems')) {
      out.push({ field, value, reason: 'lists the same value twice', fix: 'list each one once' });
    } else if (has('enum')) {
      const allowed = (has('enum')!.params as { allowedValues: unknown[] }).allowedValues;
      out.push({ field, value, reason: 'is not one of the values allowed here', fix: `use one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}` });
    } else {
      out.push({
        field,
        value,
        reason: 'is not allowed here in a JSON Schema',
        fix: keywordFix(key) ?? `check the form of "${key}" in the JSON Schema reference (json-schema.org)`,
      });
    }
  }
  return out.length ? out : [{ field: '', reason: 'is not a valid JSON Schema', fix: 'check it against the JSON Schema reference (json-schema.org)' }];
}

/** Every `$ref` of the schema with the given value, as fields ('properties.n.$ref'). */
export function refFields(schema: unknown, ref: string): string[] {
  const found: string[] = [];
  const walk = (node: unknown, path: string[]) => {
    if (found.length >= MAX_PROBLEMS || !node || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, [...path, String(i)]));
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && v === ref) found.push([...path, k].join('.'));
      else if (k !== 'const' && k !== 'enum' && k !== 'default' && k !== 'examples') walk(v, [...path, k]);
    }
  };
  walk(schema, []);
  return found;
}
