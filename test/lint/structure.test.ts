/**
 * The shape of the house: no import cycles (type-only imports included), no source file
 * over 500 lines, one case style for file names, every file of core inside a zone, and the zone rule
 * actually firing. See docs/architecture.md.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint, type Linter } from 'eslint';

const root = path.resolve(__dirname, '../..');
const src = path.join(root, 'src');

function walk(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

const rel = (p: string) => path.relative(root, p).split(path.sep).join('/');

/** Relative imports and re-exports of a TypeScript file, `import type` included, resolved to files. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^'";]*?from\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'/gm)) {
    const spec = m[1] ?? m[2];
    const base = path.resolve(path.dirname(file), spec);
    for (const candidate of [base + '.ts', path.join(base, 'index.ts'), base]) {
      if (candidate.endsWith('.ts') && fs.existsSync(candidate)) {
        out.push(candidate);
        break;
      }
    }
  }
  return out;
}

/** Strongly connected components of more than one file (Tarjan), each a cycle of imports. */
function importCycles(files: string[]): string[][] {
  const graph = new Map(files.map((f) => [f, importsOf(f)] as const));
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) cycles.push(scc.map(rel));
    }
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return cycles;
}

describe('structure of src', function () {
  this.timeout(120_000);
  const files = walk(src);
  const tsFiles = files.filter((f) => f.endsWith('.ts'));

  it('finds the sources it checks', () => {
    assert.ok(tsFiles.length > 100, `only ${tsFiles.length} TypeScript files under src`);
    assert.ok(files.some((f) => f.endsWith('.py')));
  });

  it('has no import cycles, type-only imports included', () => {
    assert.deepEqual(importCycles(tsFiles), []);
  });

  it('the cycle check finds a cycle when there is one', () => {
    fs.mkdirSync(path.join(root, 'test-artifacts'), { recursive: true });
    const dir = fs.mkdtempSync(path.join(root, 'test-artifacts', 'cycle-'));
    try {
      fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b';\nexport type A = B[];\n");
      fs.writeFileSync(path.join(dir, 'b.ts'), "import type { A } from './a';\nexport type B = A | string;\n");
      assert.equal(importCycles([path.join(dir, 'a.ts'), path.join(dir, 'b.ts')]).length, 1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has no source file over 500 lines', () => {
    const long = files
      .filter((f) => /\.(ts|py|css)$/.test(f))
      .map((f) => ({ file: rel(f), lines: fs.readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > 500);
    assert.deepEqual(long, []);
  });

  it('names files in one case style: camelCase TypeScript and CSS, snake_case Python', () => {
    const bad = files.filter((f) => {
      const name = path.basename(f);
      if (name.endsWith('.py')) return !/^[a-z][a-z0-9_]*\.py$/.test(name);
      return !/^[a-z][A-Za-z0-9]*(\.[a-z]+)?\.(ts|css)$/.test(name);
    });
    assert.deepEqual(bad.map(rel), []);
  });

  it('puts every file of src/core in a zone', async () => {
    const { CORE_ZONES } = (await import(pathToFileURL(path.join(root, 'eslint.config.mjs')).href)) as { CORE_ZONES: Record<string, string[]> };
    const outside = files.filter((f) => rel(f).startsWith('src/core/') && !(rel(f).split('/')[2] in CORE_ZONES));
    assert.deepEqual(outside.map(rel), []);
    for (const folder of fs.readdirSync(path.join(src, 'core'))) assert.ok(folder in CORE_ZONES, `src/core/${folder} is not a zone`);
  });

  it('enforces the zones with ESLint', async () => {
    const { UNTYPED } = (await import(pathToFileURL(path.join(root, 'eslint.config.mjs')).href)) as { UNTYPED: Linter.Config };
    const eslint = new ESLint({ cwd: root, ignore: false, overrideConfig: UNTYPED });
    const lint = async (file: string, text: string) => {
      const [r] = await eslint.lintText(text, { filePath: path.join(root, file) });
      assert.deepEqual(
        r.messages.filter((m) => m.fatal),
        [],
        file,
      );
      return r.messages.filter((m) => m.ruleId === 'import-x/no-restricted-paths');
    };
    const bad: Array<[string, string]> = [
      ['src/core/runtime/zoneProbe.ts', "import { loadTools } from '../tools/declarations';\nexport const x = loadTools;\n"],
      ['src/core/providers/zoneProbe.ts', "import { Agent } from '../agent/agent';\nexport const x = Agent;\n"],
      ['src/core/util/zoneProbe.ts', "import { formatBytes } from '../../common/format';\nexport const x = formatBytes;\n"],
      ['src/core/gateway/zoneProbe.ts', "import { resolveEngineConfig } from '../config/resolve';\nexport const x = resolveEngineConfig;\n"],
    ];
    for (const [file, text] of bad) {
      const messages = await lint(file, text);
      assert.equal(messages.length, 1, `${file}: ${JSON.stringify(messages)}`);
      assert.match(messages[0].message, /docs\/architecture\.md/);
    }
    const good: Array<[string, string]> = [
      [
        'src/core/runtime/zoneProbe.ts',
        "import { newId } from '../util/ids';\nimport { formatBytes } from '../../common/format';\nexport const x = [newId, formatBytes];\n",
      ],
      ['src/core/turn/zoneProbe.ts', "import { Agent } from '../agent/agent';\nexport const x = Agent;\n"],
    ];
    for (const [file, text] of good) assert.deepEqual(await lint(file, text), [], file);
  });
});
