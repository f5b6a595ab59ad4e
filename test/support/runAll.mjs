// `npm test`: every suite, as two mocha processes at once (one per core of a two-core machine): the UI lane (the
// files whose imports reach code-server or Chromium, as lanes.mjs reads them) and the rest. The rest is printed
// as it runs; the UI lane is kept whole in test-artifacts/lanes/ui.log and printed once both have ended, so no
// lane's lines cut into the other's. The last line sums both: "N passed, N failed, N skipped in N s" (wall time).
//
//   npm test                              both lanes
//   npm test -- --grep 'Stop'             mocha's own options go to both lanes
//   CODEACT_TEST_LANES=1 npm test         one mocha process over every file, as before the lanes
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT, needsOf, testFiles } from './lanes.mjs';

const MOCHA = join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
const LOGS = join(ROOT, 'test-artifacts', 'lanes');
const TOTALS = /^(\d+) passed, (\d+) failed, (\d+) skipped in [\d.]+ s$/m;
const started = Date.now();
const extra = process.argv.slice(2);

/** The lanes and their files; a lane with no file is left out. */
function lanes() {
  const files = testFiles();
  if (process.env.CODEACT_TEST_LANES === '1') return [{ name: 'all', files: files.map((f) => relative(ROOT, f)), live: true }];
  const ui = (f) => {
    const needs = needsOf(f);
    return needs.has('code-server') || needs.has('Chromium');
  };
  return [
    { name: 'rest', files: files.filter((f) => !ui(f)).map((f) => relative(ROOT, f)), live: true },
    { name: 'ui', files: files.filter(ui).map((f) => relative(ROOT, f)), live: false },
  ].filter((l) => l.files.length);
}

/** Runs one lane; resolves with its exit code once its output is all written to its log. */
function run(lane) {
  const log = join(LOGS, `${lane.name}.log`);
  const out = createWriteStream(log);
  // Its own process group, so that a Ctrl+C or a CI timeout ends the lane's whole tree.
  const child = spawn(process.execPath, [MOCHA, ...extra, ...lane.files], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', (d) => {
      out.write(d);
      if (lane.live) process.stdout.write(d);
    });
  }
  return new Promise((resolve) => {
    child.once('error', (err) => {
      out.end(`could not start mocha: ${err.message}\n`);
      resolve(1);
    });
    child.once('close', (code, signal) => out.end(() => resolve(code ?? (signal ? 128 : 1))));
  }).then((code) => ({ ...lane, code, log }));
}

const children = [];
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    for (const c of children) {
      try {
        process.kill(-c.pid, sig);
      } catch {
        // already gone
      }
    }
    process.exit(130);
  });
}

mkdirSync(LOGS, { recursive: true });
const plan = lanes();
const results = await Promise.all(plan.map(run));
let passed = 0;
let failed = 0;
let skipped = 0;
const summary = [];
for (const r of results) {
  const text = readFileSync(r.log, 'utf8');
  if (!r.live) process.stdout.write(`\n==> the ${r.name} lane (${r.files.length} files; whole in ${relative(ROOT, r.log)})\n${text}`);
  const m = [...text.matchAll(new RegExp(TOTALS.source, 'gm'))].at(-1);
  if (m) {
    passed += +m[1];
    failed += +m[2];
    skipped += +m[3];
  } else {
    // A lane that ended before its totals (a crash, a kill) counts as a failure, never as nothing.
    failed += 1;
  }
  summary.push(`  ${r.name} lane: ${r.files.length} files, ${m ? m[0] : `no totals (mocha exited ${r.code}): counted as 1 failure`}`);
}
if (results.length > 1) process.stdout.write(`\n${summary.join('\n')}\n`);
process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
process.exit(failed || results.some((r) => r.code !== 0) ? 1 : 0);
