/**
 * The docs name files that exist: every backticked path under src/, test/, scripts/ or docs/ in
 * docs/architecture.md and CONTRIBUTING.md is a file or folder of the repository (a rename that forgets
 * the docs fails here).
 */
import * as assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const DOCS = ['docs/architecture.md', 'CONTRIBUTING.md'];

/** The backticked spans of a Markdown file that start with one of the repository's folders. */
export function pathsIn(markdown: string): string[] {
  const paths = new Set<string>();
  for (const m of markdown.matchAll(/`((?:src|test|scripts|docs)\/[^`\s]*)`/g)) {
    const p = m[1];
    if (/[*{…<]/.test(p)) continue; // a pattern, not a path
    paths.add(p.replace(/[.,:;]+$/, ''));
  }
  return [...paths];
}

describe('docs name files that exist', () => {
  for (const doc of DOCS) {
    it(`every src/, test/, scripts/ and docs/ path in ${doc} exists`, () => {
      const named = pathsIn(readFileSync(path.join(ROOT, doc), 'utf8'));
      assert.ok(named.length > 0, `${doc} names no path: the pattern no longer matches`);
      const missing = named.filter((p) => !existsSync(path.join(ROOT, p)));
      assert.deepEqual(missing, [], `${doc} names paths that do not exist`);
    });
  }

  it('reads a path, a folder, and leaves patterns and prose alone', () => {
    assert.deepEqual(pathsIn('see `src/core/turn/chatTurn.ts`, `test/e2e/` and `src/**/*.ts`, `dist/` and `src/x.ts`.'), [
      'src/core/turn/chatTurn.ts',
      'test/e2e/',
      'src/x.ts',
    ]);
  });
});
