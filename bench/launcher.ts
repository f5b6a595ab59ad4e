/**
 * Command tools (and stdio MCP servers) start through a python3 launcher (src/core/util/launcher.ts:
 * the program dies with the host, its timeout holds when the host cannot act). What that costs per call,
 * against the same program started directly, interleaved in ONE run:
 *
 * - launcher_spawn_ms_p50, direct_spawn_ms_p50: spawn to 'close' of `true` with pipes, in its own process
 *   group, through spawnGuarded and through a plain spawn; ratio_launcher_to_direct_spawn.
 * - launcher_cpu_ms_per_call, direct_cpu_ms_per_call: the CPU time the children used (user + system, from
 *   the host's cutime and cstime, which count every reaped descendant), per call.
 * - python_floor_cpu_ms_per_call: the same for `python3 -I -S -c pass` (the interpreter the launcher runs
 *   on, doing nothing): what is left of the launcher's cost above it is its own script.
 * - command_tool_call_ms_p50: a whole call of a `command` tool through the gateway (schema check, the
 *   launcher, stdin, stdout, the record), the figure a person sees.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { ToolGateway } from '../src/core/gateway/gateway';
import { loadTools } from '../src/core/tools/declarations';
import { spawnGuarded } from '../src/core/util/launcher';

const RUNS = 40;
const TICK_MS = 1000 / 100; // USER_HZ: cutime and cstime are in clock ticks of 1/100 s on Linux

/** CPU time of this process's reaped children (all descendants that were waited for), in ms. */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const r2 = (x: number) => Math.round(x * 100) / 100;

const SYSTEM_PYTHON = '/usr/bin/python3';

async function once(guarded: boolean, argv = ['true']): Promise<number> {
  const options = { cwd: tmpdir(), env: { PATH: '/usr/bin:/bin' } };
  const t0 = performance.now();
  const [program, ...args] = argv;
  const child = guarded ? spawnGuarded(program, args, options, 30_000) : spawn(program, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0) throw new Error(`${program} exited with ${code} (${guarded ? 'launcher' : 'direct'})`);
  return performance.now() - t0;
}

export async function benchLauncher(): Promise<Record<string, number>> {
  if (process.platform !== 'linux') return {};
  await once(true); // finds python3 once, warms the page cache
  await once(false);
  const times = { launcher: [] as number[], direct: [] as number[] };
  const cpu = { launcher: 0, direct: 0 };
  for (let i = 0; i < RUNS; i++) {
    for (const guarded of [true, false]) {
      const key = guarded ? 'launcher' : 'direct';
      const c0 = childrenCpuMs();
      times[key].push(await once(guarded));
      cpu[key] += childrenCpuMs() - c0;
    }
  }

  let floor: number | undefined;
  if (existsSync(SYSTEM_PYTHON)) {
    const c0 = childrenCpuMs();
    for (let i = 0; i < RUNS; i++) await once(false, [SYSTEM_PYTHON, '-I', '-S', '-c', 'pass']);
    floor = (childrenCpuMs() - c0) / RUNS;
  }

  const set = loadTools([{ name: 'noop', command: ['true'] }], { workspace: tmpdir() });
  if (set.errors.length) throw new Error(set.errors[0].message);
  const gw = new ToolGateway(set.tools);
  const calls: number[] = [];
  for (let i = 0; i < RUNS / 2; i++) {
    const t0 = performance.now();
    await gw.call({ itemId: 'bench', callId: `c${i}`, name: 'noop', arguments: {} }, new AbortController().signal);
    calls.push(performance.now() - t0);
  }

  return {
    launcher_spawn_ms_p50: r2(p50(times.launcher)),
    direct_spawn_ms_p50: r2(p50(times.direct)),
    ratio_launcher_to_direct_spawn: r2(p50(times.launcher) / p50(times.direct)),
    launcher_cpu_ms_per_call: r2(cpu.launcher / RUNS),
    direct_cpu_ms_per_call: r2(cpu.direct / RUNS),
    ...(floor === undefined ? {} : { python_floor_cpu_ms_per_call: r2(floor) }),
    command_tool_call_ms_p50: r2(p50(calls)),
  };
}
