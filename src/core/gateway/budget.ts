/**
 * The work budget of one validation, and the ajv pieces that charge it. Schemas come from settings and
 * from MCP servers, arguments from generated code: neither is trusted, and validation runs on the
 * host's event loop. So every costly step is metered, and a validation that would cost more than its
 * budget stops with {@link BudgetExceeded} instead of stalling the host:
 *
 * - `pattern`, `patternProperties` and `propertyNames` run on RE2 (re2js), which is linear in the
 *   input; each test is charged input length × program size, the worst case of its NFA.
 * - every subschema evaluation is charged, by the size of that subschema (a marker keyword carrying its
 *   size is put into every subschema object before compiling): `$ref`/`allOf`/`anyOf` chains that
 *   multiply work are cut off, whatever their shape, and a subschema with a thousand properties costs
 *   a thousand units each time it is applied.
 * - `format` checks, `enum` and `uniqueItems` are charged by the size of what they look at; `enum`
 *   and `uniqueItems` are replaced by hash-based versions (ajv's compare items pairwise).
 *
 * The units are calibrated so that the default budget is a few tens of milliseconds on a slow machine;
 * test/security/hostStall.test.ts proves the bounds by counting units and reads, never by the clock. Outside a metered validation nothing is charged (compiling
 * the meta-schema checks, for example).
 */
import type Ajv from 'ajv';
import type { ErrorObject, Format, FormatDefinition } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types';
import { fullFormats } from 'ajv-formats/dist/formats';
import { RE2JS } from 're2js';
import { canonicalJson } from '../../common/canonicalJson';

/**
 * The default work budget of one validation, in units of roughly 5 ns: about 25 ms. The budget is what
 * decides: it counts steps, so the same value against the same schema is accepted or refused the same way
 * on an idle machine and on a busy one. Each step is charged what it costs at most, or what it typically
 * costs where its worst case is a bounded multiple of that (a pattern on RE2's NFA: up to
 * {@link REGEX_WORST} times), and a single step whose worst case alone would exceed the budget is refused
 * before it runs.
 *
 * As a net for work the counting misses, a validation also stops after {@link VALIDATION_DEADLINE_MS} of
 * both this process's CPU time and wall time. That is far above what any charged work within the budget
 * costs (about 400 ms at the worst, patterns on the NFA), so load never decides an outcome: on a busy
 * machine a 100 ms deadline refused valid calls at random, which counted work never does.
 */
export const VALIDATION_BUDGET = 5_000_000;
export const VALIDATION_DEADLINE_MS = 1_000;

/** CPU time of this process (user + system), in milliseconds. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

export class BudgetExceeded extends Error {
  constructor(readonly budget: number) {
    super(
      `the check would take more than the validation budget (${budget.toLocaleString('en-US')} units, about ${Math.max(1, Math.round(budget / 200_000))} ms)`,
    );
    this.name = 'BudgetExceeded';
  }
}

let remaining = Infinity;
let current = Infinity;
/** The CPU-time deadline, NaN until the first clock check of the validation computes it. */
let deadline = Infinity;
let deadlineMs = Infinity;
let wallStart = 0;
let calls = 0;
/** Every unit charged in this process, for tests that prove a bound by counting. */
let spent = 0;

/** The units charged so far in this process (all validations): the difference around a check is what it cost. */
export function unitsSpent(): number {
  return spent;
}

/** Runs `fn` (synchronous) with a fresh budget and a net of `ms` of CPU and wall time; a step past the budget (or the net) throws {@link BudgetExceeded}. */
export function metered<T>(budget: number, ms: number, fn: () => T): T {
  const saved = [remaining, current, deadline, deadlineMs, wallStart];
  remaining = current = budget;
  // Reading the CPU clock is a system call (microseconds) and most validations finish before their
  // first check, so the deadline is computed at that check: the CPU time used before it is taken as the
  // wall time since the start (this thread cannot have used more), but at most half the deadline.
  deadline = NaN;
  deadlineMs = ms;
  wallStart = performance.now();
  try {
    return fn();
  } finally {
    [remaining, current, deadline, deadlineMs, wallStart] = saved;
  }
}

/**
 * Whether this validation has used its time. The process's CPU time counts every thread (V8's GC and
 * compiler threads too), and wall time counts the time this thread was descheduled; this thread has used
 * at most the smaller of the two, so the deadline is past only when both are.
 */
function pastDeadline(): boolean {
  const now = cpuMs();
  const wall = performance.now() - wallStart;
  if (Number.isNaN(deadline)) deadline = now - Math.min(wall, deadlineMs / 2) + deadlineMs;
  return now > deadline && wall > deadlineMs;
}

/**
 * Charges a step of `units` (its typical cost), refusing it first when its `worst` case alone exceeds
 * the whole budget. Costly steps check the clock's net every time, cheap ones every 128 calls.
 */
export function charge(units: number, worst = units): void {
  if (worst > current) throw new BudgetExceeded(current);
  remaining -= units;
  spent += units;
  if (remaining < 0 || ((units > 10_000 || (++calls & 127) === 0) && pastDeadline())) throw new BudgetExceeded(current);
}

// ---- linear-time patterns ---------------------------------------------------------------------

/** Thrown (at compile time) for a pattern RE2 cannot run; the message says what to change. */
export class PatternError extends Error {}

/** One subschema evaluation (measured: about 150 ns). */
const STEP = 30;
/**
 * A pattern test typically costs well under 5 ns per character and RE2 instruction (the DFA); when
 * RE2 falls back to its NFA, up to about 80 ns (measured on ^[ab]*a[ab]{200}b{10}$ against random text).
 */
const REGEX_WORST = 16;

/** ajv's `code.regExp`: RE2 semantics (no lookaround, no backreferences), linear in the input. */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string) => {
    let re: RE2JS;
    try {
      re = RE2JS.compile(RE2JS.translateRegExp(pattern));
    } catch (e) {
      throw new PatternError(
        `the pattern ${JSON.stringify(pattern.length > 200 ? pattern.slice(0, 200) + '…' : pattern)} cannot be used: ${(e as Error).message}. ` +
          'Patterns run on a linear-time engine (RE2 syntax): lookahead, lookbehind and backreferences are not available; rewrite the pattern without them',
      );
    }
    const size = Math.max(1, re.programSize());
    return {
      test(s: string): boolean {
        charge(STEP + (s.length + 1) * size, STEP + (s.length + 1) * size * REGEX_WORST);
        return re.test(s);
      },
      // ajv shares compiled patterns by this key: it must name the pattern.
      toString: () => `re2js:${pattern}`,
    };
  },
  { code: 're2js' },
);

// ---- metered keywords -------------------------------------------------------------------------

/** The marker keyword put into every subschema object, with its size: each evaluation charges a step and that size. */
const STEP_KEYWORD = 'x-codeact-step';

/** Keywords that look at every property of the object they are applied to. */
const PER_PROPERTY = ['additionalProperties', 'unevaluatedProperties', 'propertyNames', 'patternProperties', 'minProperties', 'maxProperties'];

/**
 * What one evaluation of a subschema object costs beyond the step, in units: one per keyword and per
 * entry of its lists and maps (ajv's code checks `required`, `properties`, `dependentRequired` entry by
 * entry). Negative when the subschema also looks at every property of the value (charged per property).
 */
function subschemaSize(schema: Record<string, unknown>): number {
  let size = 0;
  for (const v of Object.values(schema)) {
    size += 1 + (Array.isArray(v) ? v.length : v && typeof v === 'object' ? Object.keys(v).length : 0);
  }
  return PER_PROPERTY.some((k) => k in schema) ? -size : size;
}

/** The canonical key of a value, charged: about 80 ns per character for objects and arrays (measured). */
function keyOf(value: unknown): string {
  if (typeof value !== 'object' || value === null) {
    const key = JSON.stringify(value) ?? 'null';
    charge(STEP + key.length);
    return key;
  }
  const key = canonicalJson(value);
  charge(STEP + key.length * 16);
  return key;
}

type KeywordFn = ((schema: unknown, data: unknown) => boolean) & { errors?: Partial<ErrorObject>[] };

/** Adds the metered keywords and formats to a fresh ajv instance (before any schema is compiled). */
export function meter(ajv: Ajv): void {
  ajv.addKeyword({
    keyword: STEP_KEYWORD,
    schemaType: 'number',
    errors: false,
    validate: (size: number, data: unknown) => {
      let units = STEP + Math.abs(size) + (typeof data === 'string' ? data.length >> 3 : 0);
      if (size < 0 && data && typeof data === 'object' && !Array.isArray(data)) units += Object.keys(data).length;
      charge(units);
      return true;
    },
  });

  const sets = new WeakMap<unknown[], Set<string>>();
  ajv.removeKeyword('enum');
  const enumFn: KeywordFn = (schema, data) => {
    const allowed = schema as unknown[];
    let set = sets.get(allowed);
    if (!set) sets.set(allowed, (set = new Set(allowed.map(canonicalJson))));
    if (set.has(keyOf(data))) return true;
    enumFn.errors = [{ keyword: 'enum', message: 'must be equal to one of the allowed values', params: { allowedValues: allowed } }];
    return false;
  };
  ajv.addKeyword({ keyword: 'enum', schemaType: 'array', errors: true, validate: enumFn });

  ajv.removeKeyword('uniqueItems');
  const uniqueFn: KeywordFn = (schema, data) => {
    if (schema !== true || !Array.isArray(data)) return true;
    const seen = new Map<string, number>();
    for (let j = 0; j < data.length; j++) {
      const key = keyOf(data[j]);
      const i = seen.get(key);
      if (i !== undefined) {
        uniqueFn.errors = [{ keyword: 'uniqueItems', message: `must NOT have duplicate items (items ## ${i} and ${j} are identical)`, params: { i, j } }];
        return false;
      }
      seen.set(key, j);
    }
    return true;
  };
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate: uniqueFn });

  for (const [name, format] of Object.entries(fullFormats)) ajv.addFormat(name, meteredFormat(format));
}

/** Some format regexes (ajv-formats' `url`) are quadratic: charge as if all were, which is cheap for short strings. */
function formatCost(s: string): number {
  return STEP + s.length + Math.ceil((s.length * s.length) / 12);
}

function meteredFormat(format: Format): Format {
  if (typeof format === 'boolean' || typeof format === 'string') return format;
  const wrap = (test: (s: string) => boolean) => (s: string) => {
    charge(formatCost(s));
    return test(s);
  };
  if (format instanceof RegExp) return { type: 'string', validate: wrap((s) => format.test(s)) };
  if (typeof format === 'function') return { type: 'string', validate: wrap(format) };
  if (format.type === 'number' || format.async) return format;
  const def = format as FormatDefinition<string>;
  const v = def.validate;
  return { ...def, validate: wrap(v instanceof RegExp ? (s) => v.test(s) : (v as (s: string) => boolean)) };
}

// ---- marking subschemas -------------------------------------------------------------------------

/** Keywords whose value is a map from names to subschemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);
/** Keywords whose value is data or names, never a subschema. */
const NOT_SCHEMAS = new Set(['const', 'enum', 'default', 'examples', 'required', 'dependentRequired', '$vocabulary', 'type']);

/**
 * A copy of `schema` with {@link STEP_KEYWORD} in every subschema object. Walks every object value
 * except data keywords, so a `$ref` into an unknown keyword is covered too. The schema's depth is
 * capped before this runs (see limits.ts), so the recursion is bounded.
 */
export function markSubschemas(schema: unknown, stats = { patterns: 0 }): unknown {
  if (!schema || typeof schema !== 'object') return schema;
  if (Array.isArray(schema)) return schema.map((s) => markSubschemas(s, stats));
  const out: Record<string, unknown> = { [STEP_KEYWORD]: subschemaSize(schema as Record<string, unknown>) };
  for (const [k, v] of Object.entries(schema)) {
    if (k === STEP_KEYWORD) continue;
    if (k === 'pattern') stats.patterns++;
    if (NOT_SCHEMAS.has(k) || !v || typeof v !== 'object') out[k] = v;
    else if (SCHEMA_MAPS.has(k) && !Array.isArray(v)) {
      const map: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries(v)) {
        if (k === 'patternProperties') stats.patterns++;
        map[name] = Array.isArray(sub) ? sub : markSubschemas(sub, stats);
      }
      out[k] = map;
    } else out[k] = markSubschemas(v, stats);
  }
  return out;
}
