import * as path from 'node:path';

/** True when `child` is `parent` or inside it (lexically: neither path is resolved through links). */
export function isUnder(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
