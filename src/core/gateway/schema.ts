/**
 * JSON Schema validation for managed tools: draft 2020-12 (the default) and draft-07, chosen by the
 * schema's `$schema`. References must stay inside the schema (`#…`): nothing is ever fetched.
 *
 * Schemas and values are untrusted and this runs on the host's event loop, so nothing here can take
 * long: a schema's shape is capped before it compiles, patterns run on a linear-time engine, and each
 * validation has a work budget (see budget.ts). A value that fails is checked once more to list its
 * errors, under the same budget, and at most {@link MAX_ERRORS} of them are reported.
 */
import Ajv2020 from 'ajv/dist/2020';
import AjvDraft7 from 'ajv';
import type { ErrorObject, Options, ValidateFunction } from 'ajv';
import type { JsonSchema } from '../../common/tools';
import { BudgetExceeded, linearRegExp, markSubschemas, meter, metered, PatternError, VALIDATION_BUDGET, VALIDATION_DEADLINE_MS } from './budget';
import { measureShape, SCHEMA_LIMITS, SCHEMA_MAX_PATTERNS } from './limits';
import { refFields, SchemaError, schemaProblems } from './schemaProblems';

export { SchemaError };

/** Most error lines reported for one value. */
export const MAX_ERRORS = 8;

interface Engines {
  first: Ajv2020 | AjvDraft7;
  all: Ajv2020 | AjvDraft7;
}

let ajv2020: Engines | undefined;
let ajv7: Engines | undefined;

function make<T extends Ajv2020 | AjvDraft7>(Ctor: new (o: Options) => T): Engines {
  const engines = [false, true].map((allErrors) => {
    const ajv = new Ctor({ allErrors, strict: false, validateFormats: true, addUsedSchema: false, code: { regExp: linearRegExp, optimize: false } });
    meter(ajv);
    return ajv;
  });
  return { first: engines[0], all: engines[1] };
}

function engine(schema: JsonSchema): Engines {
  const draft = typeof schema === 'object' && typeof schema.$schema === 'string' ? schema.$schema : '';
  if (/draft-0[67]/.test(draft)) return (ajv7 ??= make(AjvDraft7));
  if (draft && !/2020-12/.test(draft)) {
    throw new SchemaError([
      {
        field: '$schema',
        value: JSON.stringify(draft),
        reason: 'is a JSON Schema version CodeAct does not support',
        fix: 'use draft 2020-12 ("https://json-schema.org/draft/2020-12/schema") or draft-07 ("http://json-schema.org/draft-07/schema#"), or leave "$schema" out',
      },
    ]);
  }
  return (ajv2020 ??= make(Ajv2020));
}

/** Every `$ref`/`$dynamicRef` that points outside the schema: where (a dotted path) and the reference. */
function externalRefs(schema: unknown): { field: string; ref: string }[] {
  const found: { field: string; ref: string }[] = [];
  const walk = (node: unknown, path: string[]) => {
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, [...path, String(i)]));
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if ((k === '$ref' || k === '$dynamicRef') && typeof v === 'string' && !v.startsWith('#')) found.push({ field: [...path, k].join('.'), ref: v });
      else if (k !== 'const' && k !== 'enum' && k !== 'default' && k !== 'examples') walk(v, [...path, k]);
    }
  };
  walk(schema, []);
  return found;
}

/**
 * Checks a value; returns its problems (at most {@link MAX_ERRORS} lines, empty when it is valid).
 * Throws {@link BudgetExceeded} when even the first error cannot be found within the budget.
 */
export type Validator = (value: unknown) => string[];

export { BudgetExceeded };

/**
 * Compiled validators by schema text. Ajv caches by object identity and never forgets, and settings
 * arrive as fresh objects on every read; keyed by content, each distinct schema compiles once.
 */
const compiled = new Map<string, Validator>();

/**
 * Compiles a schema; throws a {@link SchemaError} saying, in plain words, where it is wrong, why, and what to
 * write instead when it is invalid or refers outside itself.
 */
export function compileSchema(schema: JsonSchema): Validator {
  const key = JSON.stringify(schema);
  let v = compiled.get(key);
  if (!v) {
    v = compileUncached(schema);
    if (compiled.size >= 1000) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, v);
  }
  return v;
}

function compileUncached(schema: JsonSchema): Validator {
  const shape = measureShape(schema, SCHEMA_LIMITS);
  if (shape.problem) throw new SchemaError([{ field: '', reason: `is refused before compiling: ${shape.problem}`, fix: 'simplify it' }]);
  const refs = externalRefs(schema);
  if (refs.length) {
    throw new SchemaError(
      refs.map((r) => ({
        field: r.field,
        value: JSON.stringify(r.ref),
        reason: 'is an external $ref, which is not allowed: nothing is ever fetched',
        fix: 'make the schema self-contained: put the definition under "$defs" and refer to it as "#/$defs/…"',
      })),
    );
  }
  const engines = engine(schema);
  const stats = { patterns: 0 };
  const marked = markSubschemas(schema, stats) as object | boolean;
  if (stats.patterns > SCHEMA_MAX_PATTERNS) {
    throw new SchemaError([
      { field: '', reason: `is refused before compiling: it has ${stats.patterns} patterns, more than ${SCHEMA_MAX_PATTERNS}`, fix: 'simplify it' },
    ]);
  }
  const compile = (ajv: Ajv2020 | AjvDraft7): ValidateFunction => {
    try {
      const fn = ajv.compile(marked);
      // The validator keeps what it needs; let ajv forget the schema object (settings re-read make new ones).
      if (typeof marked === 'object') ajv.removeSchema(marked);
      return fn;
    } catch (err) {
      if (err instanceof PatternError) throw new Error(err.message);
      throw explain(engines.all, schema, err as Error);
    }
  };
  const first = compile(engines.first);
  let all: ValidateFunction | undefined;
  return (value) => {
    if (metered(VALIDATION_BUDGET, VALIDATION_DEADLINE_MS, () => first(value))) return [];
    const firstErrors = formatErrors(first.errors ?? []);
    // The first error is known; list the others under a quarter of the budget and time, and keep the first if that runs out.
    try {
      all ??= compile(engines.all);
      const fn = all;
      const lines = metered(VALIDATION_BUDGET / 4, VALIDATION_DEADLINE_MS / 4, () => (fn(value) ? [] : formatErrors(fn.errors ?? [])));
      return lines.length ? lines : firstErrors;
    } catch (err) {
      if (err instanceof BudgetExceeded) return [...firstErrors, '(further errors were not looked for: the value is too costly to check in full)'];
      throw err;
    }
  };
}

/** Why a schema did not compile, in plain words (never the validator's own wording). */
function explain(ajv: Ajv2020 | AjvDraft7, schema: JsonSchema, err: Error): SchemaError {
  if (!ajv.validateSchema(schema)) return new SchemaError(schemaProblems(ajv.errors ?? [], schema));
  const ref = /can't resolve reference (\S+)/.exec(err.message)?.[1];
  if (ref) {
    const fields = refFields(schema, ref);
    return new SchemaError(
      (fields.length ? fields : ['$ref']).map((field) => ({
        field,
        value: JSON.stringify(ref),
        reason: 'points at nothing in this schema',
        fix: 'define it under "$defs" (for example "$defs": {"item": {"type": "string"}}) or correct the reference',
      })),
    );
  }
  return new SchemaError([{ field: '', reason: 'could not be compiled', fix: 'check it against the JSON Schema reference (json-schema.org)' }]);
}

/** `/items/0/qty` -> `$.items[0].qty` */
export function toJsonPath(pointer: string): string {
  if (!pointer) return '$';
  return (
    '$' +
    pointer
      .split('/')
      .slice(1)
      .map((raw) => raw.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((seg) => (/^\d+$/.test(seg) ? `[${seg}]` : /^[A-Za-z_$][\w$]*$/.test(seg) ? `.${seg}` : `[${JSON.stringify(seg)}]`))
      .join('')
  );
}

function formatErrors(errors: ErrorObject[]): string[] {
  const out = new Set<string>();
  for (let i = 0; i < errors.length; i++) {
    if (out.size >= MAX_ERRORS) {
      out.add(`(${(errors.length - i).toLocaleString('en-US')} more errors not shown)`);
      break;
    }
    const e = errors[i];
    let where = toJsonPath(e.instancePath);
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      const prop = (e.params as { missingProperty: string }).missingProperty;
      where = toJsonPath(`${e.instancePath}/${prop}`);
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      const prop = (e.params as { additionalProperty: string }).additionalProperty;
      where = toJsonPath(`${e.instancePath}/${prop}`);
      message = 'is not an allowed property';
    } else if (e.keyword === 'enum') {
      message = `must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
    }
    out.add(`${where} ${message}`);
  }
  return [...out];
}
