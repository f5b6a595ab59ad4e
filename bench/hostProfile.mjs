// Where a hosted run's extra time goes (issue 34): CPU profiles of the session host process and of a direct
// LocalRuntime doing the same runs, and the per-run difference by function (self time, µs per run).
// Run after `node esbuild.mjs`: `node bench/hostProfile.mjs [runs]`. Profiles land in a temp folder it prints.
// The host is started through a small wrapper that profiles it with node:inspector and writes the profile
// when the host exits (`end`); the host's env is scrubbed (no NODE_OPTIONS), hence the wrapper.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.dirname(path.dirname(new URL(import.meta.url).pathname));
const engine = require(path.join(root, 'dist/bench-engine.js'));
const RUNS = Number(process.argv[2] ?? 1500);
const CODE = 'print("hello")\nreturn 1';
const out = mkdtempSync(path.join(tmpdir(), 'codeact-host-profile-'));

function startProfile(session) {
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 50 });
  session.post('Profiler.start');
}

function selfTimes(file) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const dt = {};
  for (let i = 0; i < p.samples.length; i++) dt[p.samples[i]] = (dt[p.samples[i]] ?? 0) + (p.timeDeltas[i] ?? 0);
  const m = new Map();
  for (const n of p.nodes) {
    const url = n.callFrame.url;
    const k = `${n.callFrame.functionName || 'anon'} ${/sessionHost|bench-engine/.test(url) ? 'APP' : url.split('/').pop()}`;
    m.set(k, (m.get(k) ?? 0) + (dt[n.id] ?? 0));
  }
  return m;
}

const wrapper = path.join(out, 'hostWrap.cjs');
writeFileSync(
  wrapper,
  `const { Session } = require('node:inspector'); const fs = require('node:fs');
const s = new Session(); s.connect(); (${startProfile.toString()})(s);
const exit = process.exit;
process.exit = (c) => s.post('Profiler.stop', (e, r) => { fs.writeFileSync(${JSON.stringify(path.join(out, 'host.cpuprofile'))}, JSON.stringify(r.profile)); exit.call(process, c); });
require(${JSON.stringify(path.join(root, 'dist/sessionHost.js'))});
`,
);

const hosted = await engine.attachSessionHost({
  workspace: out,
  local: { sandbox: { kind: 'bubblewrap' } },
  idleMs: 60_000,
  entry: wrapper,
  env: { ...process.env, XDG_RUNTIME_DIR: out },
});
for (let i = 0; i < RUNS; i++) await hosted.execute({ code: CODE, sessionId: 'p' });
hosted.connection.end();
await hosted.dispose();

const direct = new engine.LocalRuntime({ sandbox: { kind: 'bubblewrap' } });
for (let i = 0; i < 20; i++) await direct.execute({ code: CODE, sessionId: 'p' });
const session = new Session();
session.connect();
startProfile(session);
for (let i = 0; i < RUNS; i++) await direct.execute({ code: CODE, sessionId: 'p' });
const profile = await new Promise((resolve) => session.post('Profiler.stop', (e, r) => resolve(r.profile)));
writeFileSync(path.join(out, 'direct.cpuprofile'), JSON.stringify(profile));
await direct.dispose();

for (
  let i = 0;
  i < 50 &&
  !(() => {
    try {
      return readFileSync(path.join(out, 'host.cpuprofile')).length;
    } catch {
      return 0;
    }
  })();
  i++
)
  await new Promise((r) => setTimeout(r, 100));
const h = selfTimes(path.join(out, 'host.cpuprofile'));
const d = selfTimes(path.join(out, 'direct.cpuprofile'));
const rows = [...new Set([...h.keys(), ...d.keys()])].map((k) => [k, ((h.get(k) ?? 0) - (d.get(k) ?? 0)) / RUNS]).sort((a, b) => b[1] - a[1]);
console.log(`profiles in ${out}; self time per run, host process minus direct process (µs; the host's startup is in it):`);
for (const [k, v] of rows.slice(0, 25)) console.log(`${v.toFixed(1).padStart(8)}  ${k}`);
rmSync(path.join(out, 'hostWrap.cjs'), { force: true });
process.exit(0);
