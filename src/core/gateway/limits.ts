/**
 * Caps on the shape of untrusted JSON (a call's arguments, a tool's result, a schema), checked before
 * anything else looks at it, and short previews for the gateway's records. Every walk here is
 * iterative and stops as soon as a cap is passed, so its cost is bounded by the caps, not the input.
 */
import { clip } from '../../common/format';
import { measureShape, type ShapeLimits } from '../../common/jsonShape';

export { measureShape, type ShapeLimits };

/** Caps on the arguments of one call, checked before validation. */
export const ARGUMENT_LIMITS: ShapeLimits = { maxBytes: 1024 * 1024, maxDepth: 64, maxKeys: 20_000 };

/**
 * Caps on a schema from settings or an MCP server, checked before it is compiled. Compiling costs
 * about 40 µs per key (ajv generates code), so 1,500 keys compile in about 60 ms, once per schema.
 */
export const SCHEMA_LIMITS: ShapeLimits = { maxBytes: 64 * 1024, maxDepth: 64, maxKeys: 1_500 };

/** Most `pattern`s and `patternProperties` in one schema: each takes about 0.3 ms to compile. */
export const SCHEMA_MAX_PATTERNS = 64;

/**
 * At most `max` characters of `value` as JSON, built without serialising more than that (a huge
 * value costs as much as a small one). Ends with "…" when cut.
 */
export function preview(value: unknown, max = 200, measuredBytes?: number): string {
  // Small values (their size measured already by measureShape) are serialised whole: escapes make the
  // JSON at most six times the measure, so this stays bounded, and it is the common case of a call.
  if (measuredBytes !== undefined && measuredBytes <= max / 8) {
    const json = JSON.stringify(value) ?? 'null';
    return clip(json, max);
  }
  let out = '';
  const full = () => out.length >= max;
  const emit = (s: string) => {
    out += s.length > max - out.length ? s.slice(0, max - out.length + 1) : s;
  };
  // Work items: a value to write, or literal text (closing brackets, commas).
  const stack: Array<{ v: unknown } | string> = [{ v: value }];
  let steps = 0;
  while (stack.length && !full() && steps++ < max * 4) {
    const item = stack.pop()!;
    if (typeof item === 'string') {
      emit(item);
      continue;
    }
    const v = item.v;
    if (Array.isArray(v)) {
      emit('[');
      stack.push(']');
      const n = Math.min(v.length, max);
      for (let i = n - 1; i >= 0; i--) {
        stack.push({ v: v[i] });
        if (i > 0) stack.push(',');
      }
    } else if (v && typeof v === 'object') {
      emit('{');
      stack.push('}');
      const ks: string[] = [];
      for (const k in v) {
        if (ks.length >= max) break;
        if (Object.prototype.hasOwnProperty.call(v, k)) ks.push(k);
      }
      for (let i = ks.length - 1; i >= 0; i--) {
        stack.push({ v: (v as Record<string, unknown>)[ks[i]] });
        stack.push(JSON.stringify(ks[i].slice(0, max)) + ':');
        if (i > 0) stack.push(',');
      }
    } else if (typeof v === 'string') emit(JSON.stringify(v.length > max ? v.slice(0, max) : v));
    else emit(v === undefined ? 'null' : String(JSON.stringify(v) ?? 'null'));
  }
  if (out.length > max) return clip(out, max);
  return stack.length ? out.slice(0, max - 1) + '…' : out;
}
