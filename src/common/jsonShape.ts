/**
 * The shape of untrusted JSON (a call's arguments, a tool's result, a run's value, a schema), measured before
 * anything else walks it: every walk here is iterative and stops as soon as a cap is passed, so its cost is
 * bounded by the caps, not the input. Recursive walkers (JSON.stringify, structured clone, the printers) then
 * only ever see values within {@link MAX_VALUE_DEPTH}.
 */
import { formatBytes } from './format';

/**
 * Deepest nesting of objects and arrays in a value that comes from code or a tool: a tool's result and a
 * run's returned value (the guest libraries check the same number).
 */
export const MAX_VALUE_DEPTH = 128;

export interface ShapeLimits {
  /** Largest size as JSON, in bytes (strings counted by UTF-16 code units). */
  maxBytes: number;
  /** Deepest nesting of objects and arrays. */
  maxDepth: number;
  /** Most object keys plus array items, in total. */
  maxKeys: number;
}

interface ShapeReport {
  /** About the size as JSON, in bytes, when no cap was passed (a lower bound otherwise). */
  bytes: number;
  /** The cap passed, as a phrase ("nesting deeper than 64 levels (the depth cap)"), or undefined. */
  problem?: string;
}

/** Walks `value` until a cap is passed. */
export function measureShape(value: unknown, limits: ShapeLimits): ShapeReport {
  let bytes = 0;
  let keys = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'string') bytes += v.length + 2;
    else if (v && typeof v === 'object') {
      if (depth >= limits.maxDepth) return { bytes, problem: `nesting deeper than ${limits.maxDepth} levels (the depth cap)` };
      bytes += 2;
      if (Array.isArray(v)) {
        keys += v.length;
        bytes += v.length;
        if (keys <= limits.maxKeys) for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], depth + 1]);
      } else {
        const ks = Object.keys(v);
        keys += ks.length;
        if (keys <= limits.maxKeys) {
          for (const k of ks) {
            bytes += k.length + 4;
            stack.push([(v as Record<string, unknown>)[k], depth + 1]);
          }
        }
      }
      if (keys > limits.maxKeys) {
        return { bytes, problem: `more than ${limits.maxKeys.toLocaleString('en-US')} keys and array items in total (the key-count cap)` };
      }
    } else bytes += typeof v === 'number' ? 8 : 5;
    if (bytes > limits.maxBytes) return { bytes, problem: `larger than ${formatBytes(limits.maxBytes)} as JSON (the size cap)` };
  }
  return { bytes };
}
