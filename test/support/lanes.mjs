// Which parts each test file needs, read from what it imports (following imports into test/, not into src/).
// `npm run test:unit` runs the files that need none of them; `node test/support/lanes.mjs --list` shows why
// each other file is left out. A new test joins the unit lane by itself when it imports none of these.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A part a test may need, and the import specifiers (resolved, relative to the root) that mean it. */
const PARTS = [
  ['code-server', [/^test\/e2e\//]],
  ['Chromium', [/^playwright-core/, /^test\/webview\/support\/browser/]],
  ['a build (dist/)', [/^test\/support\/cli/, /^dist\//]],
  ['Jupyter', [/^src\/core\/runtime\/jupyter\//, /^test\/support\/(jupyterServer|jupyterHub|kernelHarness)/]],
  // A real python3 guest or another child process: the slow part of most suites.
  [
    'python3 or a child process',
    [
      /^(node:)?child_process$/,
      /^src\/core\/runtime\/(local\/localRuntime|factory)$/,
      /^src\/core\/config\/engine$/,
      /^src\/core\/tools\/sources\/(command|mcp\/pool|mcp\/stdioTransport)$/,
      /^src\/core\/util\/processTree$/,
      /^test\/support\/(guestHarness|wheels|images)$/,
    ],
  ],
  // ESLint over all of src takes seconds; `npm run lint` runs the same rules.
  ['ESLint over src', [/^eslint$/]],
];
/** Text in a file that means a part, for what is reached without an import (a path to the bundle). */
const TEXT = [['a build (dist/)', /['"`/]dist\/[\w.]+\.js/]];

const IMPORT = /^\s*(import|export)\s+(?!type\b)[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|\brequire\(\s*['"]([^'"]+)['"]\s*\)/gm;

/** Every import, type-only ones too (a test of a type's users names the module it checks). */
const IMPORT_ANY = /^\s*(?:import|export)\s+[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|\brequire\(\s*['"]([^'"]+)['"]\s*\)/gm;

function resolveLocal(from, spec) {
  const base = resolve(dirname(from), spec);
  return [base, `${base}.ts`, `${base}.mjs`, `${base}.cjs`, join(base, 'index.ts')].find((c) => existsSync(c) && statSync(c).isFile());
}

/** The parts `file` needs, each with the import that needs it. */
export function needsOf(file, seen = new Set()) {
  const needs = new Map();
  if (seen.has(file)) return needs;
  seen.add(file);
  const rel = relative(ROOT, file);
  for (const [part, patterns] of PARTS) if (patterns.some((p) => p.test(rel)) && seen.size > 1) needs.set(part, rel);
  const text = readFileSync(file, 'utf8');
  for (const [part, pattern] of TEXT) if (pattern.test(text) && !needs.has(part)) needs.set(part, `${rel} (names the bundle)`);
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[2] ?? m[3] ?? m[4];
    const local = spec.startsWith('.') ? resolveLocal(file, spec) : undefined;
    const name = local ? relative(ROOT, local).replace(/\.(ts|mjs|cjs)$/, '') : spec;
    for (const [part, patterns] of PARTS) if (!needs.has(part) && patterns.some((p) => p.test(name))) needs.set(part, `${rel} imports ${name}`);
    // Test helpers are followed; src is not (what src reaches is decided by what the test builds from it).
    if (local && relative(ROOT, local).startsWith('test/')) {
      for (const [part, why] of needsOf(local, seen)) if (!needs.has(part)) needs.set(part, why);
    }
  }
  if (rel.startsWith('test/e2e/') && !needs.has('code-server')) needs.set('code-server', `${rel} is under test/e2e`);
  return needs;
}

/** The src modules `file` imports, directly or through the test helpers it imports (root-relative, with extension). */
export function srcImportsOf(file, seen = new Set()) {
  const out = new Set();
  if (seen.has(file)) return out;
  seen.add(file);
  for (const m of readFileSync(file, 'utf8').matchAll(IMPORT_ANY)) {
    const spec = m[1] ?? m[2] ?? m[3];
    const local = spec.startsWith('.') ? resolveLocal(file, spec) : undefined;
    if (!local) continue;
    const rel = relative(ROOT, local);
    if (rel.startsWith('src/')) out.add(rel);
    else if (rel.startsWith('test/')) for (const s of srcImportsOf(local, seen)) out.add(s);
  }
  return out;
}

export function testFiles(dir = join(ROOT, 'test')) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'fixtures' && entry.name !== 'node_modules') out.push(...testFiles(full));
    } else if (entry.name.endsWith('.test.ts')) out.push(full);
  }
  return out.sort();
}

export function unitFiles() {
  return testFiles()
    .filter((f) => needsOf(f).size === 0)
    .map((f) => relative(ROOT, f));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--list')) {
    for (const f of testFiles()) {
      const needs = needsOf(f);
      console.log(
        needs.size ? `-    ${relative(ROOT, f)}: needs ${[...needs].map(([part, why]) => `${part} (${why})`).join('; ')}` : `unit ${relative(ROOT, f)}`,
      );
    }
  } else {
    // The unit lane: mocha on those files, with the repository's .mocharc (the totals line says the wall time).
    const mocha = join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
    const r = spawnSync(process.execPath, [mocha, ...process.argv.slice(2), ...unitFiles()], { cwd: ROOT, stdio: 'inherit' });
    process.exit(r.status ?? 1);
  }
}
