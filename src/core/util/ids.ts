import { randomBytes } from 'node:crypto';

/**
 * Ids we mint ourselves: `prefix_` and random hex. Provider ids (`call_0`, `toolu_…`) are kept for
 * replay but never used as our keys, because local servers reuse them.
 */
export function newId(prefix: string, bytes = 8): string {
  return `${prefix}_${randomToken(bytes)}`;
}

/** `bytes` random bytes as hex: markers, nonces and end tokens that guest code cannot guess. */
export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}
