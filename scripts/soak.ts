/**
 * Soak test (run by hand, not in CI): `npm run soak -- --runs 1000 [--kills 20] [--sandbox auto|bubblewrap|none]`.
 * Mixed runs against the local guest: half one-shot, half in six sessions (at most four alive, so
 * sessions are evicted and come back), guests forked from a warm zygote, with tool-call-heavy runs and
 * calls to a real stdio MCP server. Reports orphans left, host file descriptors, memory growth and
 * unexpected outcomes, as JSON.
 *
 * Then the kills (scripts/soakKills.ts, needs the built CLI: `node esbuild.mjs`): `--kills` times, a
 * child CLI runs code that starts a command tool, a stdio MCP server and a daemon, and is killed with
 * SIGKILL at a random point; a last CLI start sweeps what they left. Reported: orphans and leftover
 * temporary folders after the kills (both must be 0).
 */
import { readdirSync } from 'node:fs';
import * as path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ToolGateway } from '../src/core/gateway/gateway';
import { loadTools } from '../src/core/tools/declarations';
import { disposeDefaultMcpPool } from '../src/core/tools/sources/mcp/pool';
import { LocalRuntime } from '../src/core/runtime/local/localRuntime';
import { processesWithCmdline } from '../src/core/util/processTree';
import type { SandboxSetting } from '../src/core/runtime/local/sandbox';
import { soakKills } from './soakKills';

const argv = process.argv.slice(2);
const arg = (name: string, fallback: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const RUNS = Number(arg('--runs', '1000'));
const KILLS = Math.min(200, Number(arg('--kills', '20')));
const SANDBOX = arg('--sandbox', 'auto') as SandboxSetting;
const MARK = `codeact-soak-${process.pid}`;

const cases: Array<{ name: string; code: string; timeoutMs?: number; expect: (v: { status: string; value: unknown; type?: string }) => boolean }> = [
  { name: 'value', code: 'return sum(range(1000))', expect: (r) => r.value === 499500 },
  { name: 'stdout', code: 'for i in range(1000):\n    print(i)\nreturn 1', expect: (r) => r.value === 1 },
  { name: 'tools', code: 'import asyncio\nreturn sum(await asyncio.gather(*(call_tool("inc", n=i) for i in range(16))))', expect: (r) => r.value === 136 },
  { name: 'error', code: 'raise ValueError("x")', expect: (r) => r.type === 'ValueError' },
  { name: 'timeout', code: 'while True:\n    pass', timeoutMs: 300, expect: (r) => r.type === 'Timeout' },
  {
    name: 'daemon',
    code: `import subprocess, sys\nsubprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "${MARK}"], start_new_session=True)\nreturn 1`,
    expect: (r) => r.value === 1,
  },
  { name: 'flood', code: 'import sys\nfor _ in range(64):\n    sys.stdout.write("q" * 65536)\nreturn 1', expect: (r) => r.value === 1 },
  { name: 'crash', code: 'import os\nos._exit(3)', expect: (r) => r.type === 'Crash' },
  { name: 'tool-heavy', code: 'total = 0\nfor i in range(200):\n    total += await call_tool("inc", n=i)\nreturn total', expect: (r) => r.value === 20100 },
  {
    name: 'mcp',
    code: 'import asyncio\nr = await asyncio.gather(*(call_tool("echo", text=f"x{i}") for i in range(4)))\nreturn r',
    expect: (r) => JSON.stringify(r.value) === '["x0","x1","x2","x3"]',
  },
  {
    name: 'state',
    code: 'soak_counter = globals().get("soak_counter", 0) + 1\nreturn soak_counter',
    expect: (r) => typeof r.value === 'number' && r.value >= 1,
  },
];

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function main(): Promise<void> {
  const rt = new LocalRuntime({ sandbox: { kind: SANDBOX }, zygote: true, prestart: true, maxAlive: 4 });
  const mcpServer = [process.execPath, path.join(__dirname, '../test/fixtures/mcp/server.mjs'), `--tag=${MARK}-mcp`];
  const { tools } = loadTools([{ name: 'echo', mcp: { command: mcpServer, tool: 'echo_text' }, inputSchema: { type: 'object' } }], {
    workspace: process.cwd(),
  });
  const gw = new ToolGateway([
    {
      name: 'inc',
      description: '',
      inputSchema: { type: 'object' },
      approval: 'auto',
      expose: 'code',
      source: 'soak',
      invoke: async (a) => (a.n as number) + 1,
    },
    ...tools,
  ]);
  const fds = () => readdirSync('/proc/self/fd').length;
  await rt.execute({ code: 'return 1' });
  gc();
  const start = { fds: fds(), rss: process.memoryUsage().rss, heap: process.memoryUsage().heapUsed };
  const errors: string[] = [];
  const t0 = Date.now();
  for (let i = 0; i < RUNS; i++) {
    const c = cases[i % cases.length];
    // Even runs are one-shot; odd runs go to one of six sessions (four alive at most).
    const sessionId = i % 2 ? `soak-${(i >> 1) % 6}` : undefined;
    const item = await rt.execute({ code: c.code, timeoutMs: c.timeoutMs ?? 10_000, sessionId }, { onToolCall: gw.handler });
    if (!c.expect({ status: item.status, value: item.value, type: item.error?.type }))
      errors.push(`run ${i} (${c.name}): ${item.status} ${JSON.stringify(item.error ?? item.value).slice(0, 200)}`);
    if ((i + 1) % 100 === 0) process.stderr.write(`  ${i + 1}/${RUNS} runs, ${errors.length} errors\n`);
  }
  await rt.dispose();
  await disposeDefaultMcpPool();
  await new Promise((r) => setTimeout(r, 1000));
  gc();
  const end = { fds: fds(), rss: process.memoryUsage().rss, heap: process.memoryUsage().heapUsed };
  const kills = await soakKills(KILLS, SANDBOX, `${MARK}-kills`);
  const orphans = processesWithCmdline(MARK);
  const report = {
    runs: RUNS,
    sandbox: SANDBOX,
    seconds: Math.round((Date.now() - t0) / 100) / 10,
    orphans_left: orphans.length,
    host_fds_start: start.fds,
    host_fds_end: end.fds,
    host_rss_growth_mb: Math.round(((end.rss - start.rss) / 1048576) * 10) / 10,
    host_heap_growth_mb: Math.round(((end.heap - start.heap) / 1048576) * 10) / 10,
    errors: errors.length,
    first_errors: errors.slice(0, 5),
    ...kills,
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  process.exit(orphans.length || errors.length || kills.orphans_after_kills || kills.temp_leftovers_after_kills ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
