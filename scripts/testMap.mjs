// Which tests cover which code: for each folder of src (or the files and folders named on the command line),
// the test files that import a module of it, directly or through the test helpers they import. "unit" marks a
// file of the unit lane (`npm run test:unit`). Made from the imports each time, so it is never out of date.
//
//   npm run testmap                          the whole map, folder by folder
//   npm run testmap -- src/core/agent/agent.ts src/common/events.ts
//                                            the tests of those files (a folder: of every file in it)
//   npm run testmap -- --files src/core/agent the same, as one line of file names for `npx mocha`
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { needsOf, srcImportsOf, testFiles } from '../test/support/lanes.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Every test file with the src files it imports, and whether it is in the unit lane. */
function imports() {
  return testFiles().map((file) => ({ test: relative(ROOT, file), unit: needsOf(file).size === 0, src: [...srcImportsOf(file)] }));
}

function srcFolders(dir = join(ROOT, 'src')) {
  const out = [relative(ROOT, dir)];
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory() && e.name !== 'types') out.push(...srcFolders(join(dir, e.name)));
  return out;
}

/** The test files that import `target` (a src file, or any file directly in a src folder), sorted. */
export function testsOf(target, all = imports()) {
  const rel = relative(ROOT, resolve(ROOT, target)).replace(/\/$/, '');
  const isFolder = existsSync(join(ROOT, rel)) && statSync(join(ROOT, rel)).isDirectory();
  const hit = (src) => (isFolder ? dirname(src) === rel : src === rel || src.replace(/\.ts$/, '') === rel);
  return all.filter((t) => t.src.some(hit)).sort((a, b) => a.test.localeCompare(b.test));
}

/** The map as Markdown: one section per src folder (or per target named), its test files listed. */
export function testMap(targets = srcFolders()) {
  const all = imports();
  const lines = [];
  for (const target of targets) {
    const tests = testsOf(target, all);
    lines.push(`## ${target}`, '');
    if (!tests.length) lines.push('(no test imports it directly: its code is reached through other folders)');
    for (const t of tests) lines.push(`- ${t.test}${t.unit ? ' (unit)' : ''}`);
    lines.push('');
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const files = args.includes('--files');
  const targets = args.filter((a) => a !== '--files');
  const missing = targets.filter((t) => !existsSync(resolve(ROOT, t)) && !existsSync(resolve(ROOT, `${t}.ts`)));
  if (missing.length) {
    console.error(`No such file or folder: ${missing.join(', ')} (name src files or folders, relative to the repository).`);
    process.exit(2);
  }
  if (files) console.log([...new Set((targets.length ? targets : srcFolders()).flatMap((t) => testsOf(t).map((x) => x.test)))].join(' '));
  else console.log(targets.length ? testMap(targets) : testMap());
}
