/**
 * JSON Schema validation for managed tools: draft 2020-12 (the default) and draft-07, chosen by the
 * schema's `$schema`. References must stay inside the schema (`#…`): nothing is ever fetched.
 */
import Ajv2020 from 'ajv/dist/2020';
import AjvDraft7 from 'ajv';
import addFormats from 'ajv-formats';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { JsonSchema } from '../../common/tools';

let ajv2020: Ajv2020 | undefined;
let ajv7: AjvDraft7 | undefined;

function engine(schema: JsonSchema): Ajv2020 | AjvDraft7 {
  const draft = typeof schema === 'object' && typeof schema.$schema === 'string' ? schema.$schema : '';
  if (/draft-0[67]/.test(draft)) {
    if (!ajv7) {
      ajv7 = new AjvDraft7({ allErrors: true, strict: false, validateFormats: true, addUsedSchema: false });
      addFormats(ajv7);
    }
    return ajv7;
  }
  if (draft && !/2020-12/.test(draft)) {
    throw new Error(`$schema "${draft}" is not supported; use draft 2020-12 or draft-07.`);
  }
  if (!ajv2020) {
    ajv2020 = new Ajv2020({ allErrors: true, strict: false, validateFormats: true, addUsedSchema: false });
    addFormats(ajv2020);
  }
  return ajv2020;
}

/** Every `$ref`/`$dynamicRef` that points outside the schema, with its location. */
export function externalRefs(schema: unknown, at = '#'): string[] {
  const found: string[] = [];
  const walk = (node: unknown, where: string) => {
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${where}/${i}`));
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if ((k === '$ref' || k === '$dynamicRef') && typeof v === 'string' && !v.startsWith('#')) found.push(`${where}/${k}: "${v}"`);
      else if (k !== 'const' && k !== 'enum' && k !== 'default' && k !== 'examples') walk(v, `${where}/${k}`);
    }
  };
  walk(schema, at);
  return found;
}

export type Validator = (value: unknown) => string[];

/**
 * Compiled validators by schema text. Ajv caches by object identity and never forgets, and settings
 * arrive as fresh objects on every read; keyed by content, each distinct schema compiles once.
 */
const compiled = new Map<string, Validator>();

/** Compiles a schema; throws an Error naming the problem when it is invalid or refers outside itself. */
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
  const refs = externalRefs(schema);
  if (refs.length) {
    throw new Error(`external $ref is not allowed (schemas must be self-contained; use "#/$defs/…"): ${refs.join(', ')}`);
  }
  let validate: ValidateFunction;
  try {
    const ajv = engine(schema);
    validate = ajv.compile(schema as object);
    // The validator keeps what it needs; let ajv forget the schema object (settings re-read make new ones).
    ajv.removeSchema(schema as object);
  } catch (err) {
    throw new Error(`invalid JSON Schema: ${(err as Error).message}`);
  }
  return (value) => (validate(value) ? [] : formatErrors(validate.errors ?? []));
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
  const out: string[] = [];
  for (const e of errors) {
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
    const line = `${where} ${message}`;
    if (!out.includes(line)) out.push(line);
  }
  return out;
}
