/**
 * `npm run bench`: performance figures of the engine, printed as one JSON object.
 * Floors from the same run sit next to the figures they bound, so ratios mean something on a noisy machine.
 *
 * Options: --only local|sandbox|sessions|jupyter|webview|tools|display|context|launcher|rewind (repeatable), --runs N.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { ManagedTool } from '../src/core/gateway/toolSet';
import type * as Engine from './engine';
import { benchSessionHost } from './sessionHost';

// The built engine (dist/bench-engine.js, made by `npm run bench`'s build step): the figures are the shipped code's.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a built file, loaded at run time
const engine = require(path.join(__dirname, '../dist/bench-engine.js')) as typeof Engine;
const { ToolGateway, LocalRuntime, resolvePython, probeBubblewrap } = engine;
type LocalRuntime = InstanceType<typeof Engine.LocalRuntime>;

const argv = process.argv.slice(2);
const only = argv.flatMap((a, i) => (a === '--only' ? [argv[i + 1]] : []));
const want = (name: string) => only.length === 0 || only.includes(name);
const runsArg = argv.indexOf('--runs');
const RUNS = runsArg >= 0 ? Number(argv[runsArg + 1]) : 30;

const p50 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const r2 = (x: number) => Math.round(x * 100) / 100;

function noopTool(name: string, invoke: ManagedTool['invoke']): ManagedTool {
  return { name, description: '', inputSchema: { type: 'object' }, approval: 'auto', expose: 'code', source: 'bench', invoke };
}

async function pythonStartup(python: string, runs: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const c = spawn(python, ['-I', '-c', 'pass'], { stdio: 'ignore', env: { PATH: '/usr/bin:/bin' } });
      c.on('exit', () => resolve());
      c.on('error', reject);
    });
    times.push(performance.now() - t0);
  }
  return p50(times);
}

/** A minimal Node <-> Python JSON echo over a pipe: the floor under any call_tool round trip. */
async function pipeRtt(python: string, n: number): Promise<number> {
  const child = spawn(
    python,
    ['-I', '-c', 'import sys, json\nfor line in sys.stdin:\n    sys.stdout.write(json.dumps(json.loads(line)) + "\\n"); sys.stdout.flush()'],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const times: number[] = [];
  let buf = '';
  let waiting: (() => void) | undefined;
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    if (buf.includes('\n')) {
      const line = buf.slice(0, buf.indexOf('\n'));
      buf = buf.slice(buf.indexOf('\n') + 1);
      JSON.parse(line);
      waiting?.();
    }
  });
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      waiting = resolve;
      child.stdin.write(JSON.stringify({ t: 'echo', id: i, args: {} }) + '\n');
    });
    times.push((performance.now() - t0) * 1000);
  }
  child.kill();
  return p50(times.slice(Math.floor(n / 10)));
}

async function coldExec(rt: LocalRuntime, runs: number): Promise<number> {
  await rt.execute({ code: 'return 1' }); // warm the interpreter probe and the page cache
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const item = await rt.execute({ code: 'return 1' });
    if (item.value !== 1) throw new Error(`bench run failed: ${JSON.stringify(item.error)}`);
    times.push(performance.now() - t0);
  }
  return p50(times);
}

async function local(out: Record<string, unknown>): Promise<void> {
  const python = (await resolvePython('python3')).executable;
  const rt = new LocalRuntime({ sandbox: { kind: 'none' }, limits: { maxOutputBytes: 64 * 1024 * 1024, timeoutMs: 300_000 } });
  out.python = python;
  out.python_startup_ms_p50 = r2(await pythonStartup(python, RUNS));
  out.exec_cold_ms_p50 = r2(await coldExec(rt, RUNS));
  out.pipe_rtt_us_p50 = r2(await pipeRtt(python, 5000));

  // call_tool round trip, measured inside the guest: guest -> host gateway (schema check, record) -> guest.
  const gw = new ToolGateway([noopTool('noop', async () => null), noopTool('sleep100', async () => (await new Promise((r) => setTimeout(r, 100)), null))]);
  const N = 5000;
  const rtt = await rt.execute(
    {
      code: [
        'import time',
        'times = []',
        `t_all = time.perf_counter()`,
        `for _ in range(${N}):`,
        '    t0 = time.perf_counter_ns()',
        '    await call_tool("noop")',
        '    times.append(time.perf_counter_ns() - t0)',
        'total = time.perf_counter() - t_all',
        `times = sorted(times[${N / 10}:])`,
        'return {"p50_us": times[len(times) // 2] / 1000, "per_s": ' + N + ' / total}',
      ].join('\n'),
    },
    { onToolCall: gw.handler },
  );
  const v = rtt.value as { p50_us: number; per_s: number };
  out.call_tool_rtt_us_p50 = r2(v.p50_us);
  out.call_tool_per_s = Math.round(v.per_s);

  const gather = await rt.execute(
    {
      code: [
        'import asyncio, time',
        't0 = time.perf_counter()',
        'for _ in range(8):',
        '    await call_tool("sleep100")',
        'seq = time.perf_counter() - t0',
        't0 = time.perf_counter()',
        'await asyncio.gather(*(call_tool("sleep100") for _ in range(8)))',
        'par = time.perf_counter() - t0',
        'return seq / par',
      ].join('\n'),
    },
    { onToolCall: gw.handler },
  );
  out.gather8_speedup = r2(gather.value as number);

  // stdout throughput: 20 MB of 100-byte lines, first to last byte seen by the host.
  let first = 0;
  let last = 0;
  let bytes = 0;
  await rt.execute(
    { code: 'import sys\nline = "y" * 99 + "\\n"\nw = sys.stdout.write\nfor _ in range(200_000):\n    w(line)\nreturn 0' },
    {
      onEvent: (e) => {
        if (e.type !== 'codeact.output.delta') return;
        const now = performance.now();
        if (!first) first = now;
        last = now;
        bytes += e.delta.length;
      },
    },
  );
  out.stdout_mb_per_s = r2(bytes / 1e6 / ((last - first) / 1000));

  // stdout latency: a short print, then a pause (no flood that would fill the buffer): from the guest's
  // clock at print() to the host's clock when the line arrives (both wall clocks of this machine).
  const latencies: number[] = [];
  let pending = '';
  await rt.execute(
    { code: 'import time\nfor _ in range(40):\n    print(f"t={time.time() * 1000:.3f}")\n    time.sleep(0.03)\nreturn 0' },
    {
      onEvent: (e) => {
        if (e.type !== 'codeact.output.delta' || e.stream !== 'stdout') return;
        const now = performance.timeOrigin + performance.now();
        pending += e.delta;
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          const m = /^t=([\d.]+)$/.exec(pending.slice(0, nl));
          pending = pending.slice(nl + 1);
          if (m) latencies.push(now - Number(m[1]));
        }
      },
    },
  );
  out.stdout_latency_ms_p50 = r2(p50(latencies.slice(5)));
  out.ratio_exec_cold_to_python_startup = r2((out.exec_cold_ms_p50 as number) / (out.python_startup_ms_p50 as number));
  out.ratio_call_tool_rtt_to_pipe_rtt = r2((out.call_tool_rtt_us_p50 as number) / (out.pipe_rtt_us_p50 as number));
  await rt.dispose();
}

async function sandbox(out: Record<string, unknown>): Promise<void> {
  const reason = await probeBubblewrap();
  if (reason) {
    out.exec_cold_sandbox_ms_p50 = null;
    out.sandbox_skipped = reason;
    return;
  }
  const rt = new LocalRuntime({ sandbox: { kind: 'bubblewrap' } });
  out.exec_cold_sandbox_ms_p50 = r2(await coldExec(rt, RUNS));
  if (typeof out.exec_cold_ms_p50 === 'number') out.ratio_exec_cold_sandbox_to_exec_cold = r2((out.exec_cold_sandbox_ms_p50 as number) / out.exec_cold_ms_p50);
  await rt.dispose();
}

/** The interpreter for the pandas figures: the one `python3` resolves to when it has pandas, else Debian's. */
async function pandasPython(): Promise<string | undefined> {
  const candidates = [(await resolvePython('python3').catch(() => undefined))?.executable, '/usr/bin/python3'].filter((p): p is string => !!p);
  for (const p of candidates) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = spawn(p, ['-I', '-c', 'import pandas'], { stdio: 'ignore' });
      c.on('exit', (code) => resolve(code === 0));
      c.on('error', () => resolve(false));
    });
    if (ok) return p;
  }
  return undefined;
}

async function timed(
  rt: Pick<LocalRuntime, 'execute'>,
  code: string,
  runs: number,
  request: { sessionId?: string } = {},
  between?: () => Promise<void>,
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    await between?.();
    const t0 = performance.now();
    const item = await rt.execute({ code, ...request });
    if (item.status !== 'completed') throw new Error(`bench run failed: ${JSON.stringify(item.error)}`);
    times.push(performance.now() - t0);
  }
  return p50(times);
}

/** Sessions and the warm zygote (issue 9): a warm session, a forked child with pandas preloaded, the same cold. */
async function sessions(out: Record<string, unknown>): Promise<void> {
  const kind = (await probeBubblewrap()) ? 'none' : 'bubblewrap';
  out.sessions_sandbox = kind;
  const warm = new LocalRuntime({ sandbox: { kind } });
  await warm.execute({ code: 'return 1', sessionId: 'bench' });
  out.exec_session_ms_p50 = r2(await timed(warm, 'return 1', Math.max(RUNS, 100), { sessionId: 'bench' }));
  await warm.dispose();
  // The same without checkpoints (codeact.rewind.maxCheckpoints 0): what keeping one per run costs a small session.
  const bare = new LocalRuntime({ sandbox: { kind }, checkpoints: { max: 0 } });
  await bare.execute({ code: 'return 1', sessionId: 'bench' });
  out.exec_session_no_checkpoints_ms_p50 = r2(await timed(bare, 'return 1', Math.max(RUNS, 100), { sessionId: 'bench' }));
  await bare.dispose();
  await benchSessionHost(engine, out, kind, RUNS);

  const python = await pandasPython();
  if (!python) {
    out.pandas_skipped = 'no interpreter with pandas (Debian: apt-get install python3-pandas)';
    return;
  }
  out.python_pandas = python;
  const code = 'import pandas as pd\nreturn pd.DataFrame({"a": [1, 2]}).shape';
  // As in the extension: the next guest is forked ahead of need, so a run takes a fresh child that is ready.
  const zygote = new LocalRuntime({ python, sandbox: { kind }, preload: ['pandas'], prestart: true });
  await zygote.execute({ code }); // starts the zygote (the preload import is paid once, here)
  // Each run takes the fresh child forked for it in the background; the refill is timed apart.
  out.exec_zygote_pandas_ms_p50 = r2(await timed(zygote, code, RUNS, {}, () => zygote.warm()));
  await zygote.dispose();
  const refill = new LocalRuntime({ python, sandbox: { kind }, preload: ['pandas'] });
  await refill.execute({ code });
  out.zygote_fork_and_run_pandas_ms_p50 = r2(await timed(refill, code, RUNS));
  await refill.dispose();
  const cold = new LocalRuntime({ python, sandbox: { kind } });
  await cold.execute({ code });
  out.exec_cold_pandas_ms_p50 = r2(await timed(cold, code, Math.min(RUNS, 15)));
  await cold.dispose();
  out.ratio_cold_to_zygote_pandas = r2((out.exec_cold_pandas_ms_p50 as number) / (out.exec_zygote_pandas_ms_p50 as number));
}

async function optional(out: Record<string, unknown>, name: string, file: string, fn: string): Promise<void> {
  const full = path.join(__dirname, file);
  if (!existsSync(full)) return;
  try {
    const mod = await import(full);
    Object.assign(out, await mod[fn]());
  } catch (e) {
    out[`${name}_error`] = (e as Error).message;
  }
}

/** Runs a bench script that prints one JSON object on its last stdout line, and merges it. */
async function subprocessJson(out: Record<string, unknown>, name: string, file: string): Promise<void> {
  const full = path.join(__dirname, file);
  if (!existsSync(full)) return;
  const stdout = await new Promise<string>((resolve) => {
    const child = spawn(process.execPath, [full], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.on('close', () => resolve(text));
  });
  try {
    Object.assign(out, JSON.parse(stdout.trim().split('\n').pop() ?? ''));
  } catch {
    out[`${name}_error`] = `no JSON from ${file}: ${stdout.slice(-300)}`;
  }
}

async function main(): Promise<void> {
  const out: Record<string, unknown> = { node: process.version, platform: `${process.platform}-${process.arch}`, runs: RUNS };
  if (want('local')) await local(out);
  if (want('sandbox')) await sandbox(out);
  if (want('sessions')) await sessions(out);
  if (want('jupyter')) await optional(out, 'jupyter', 'jupyter.mjs', 'benchJupyter');
  if (want('webview')) await subprocessJson(out, 'webview', 'webview.mjs');
  if (want('tools')) await optional(out, 'tools', 'tools.ts', 'benchTools');
  if (want('display')) await optional(out, 'display', 'display.ts', 'benchDisplay');
  if (want('context')) await optional(out, 'context', 'context.ts', 'benchContext');
  if (want('launcher')) await optional(out, 'launcher', 'launcher.ts', 'benchLauncher');
  if (want('rewind')) await optional(out, 'rewind', 'rewind.ts', 'benchRewind');
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
