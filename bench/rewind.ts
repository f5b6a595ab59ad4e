/**
 * Rewind figures (issue 35), on the local runtime (bubblewrap when it works here, else no sandbox):
 * - checkpoint_ms_p50: the guest's fork of a session holding 500 MB (every page written), per execution;
 * - checkpoint_run_delay_ms_p50: what a small run pays when it follows at once (run time with checkpoints minus
 *   without, same session size, same run);
 * - rewind_ms_p50: "Rewind to here" of that session (the Python state; no workspace files);
 * - checkpoints_10_extra_mb: the unshared memory 10 checkpoints hold when the session writes 1% of its pages between each;
 * - pages_copied_per_run_p50 (and _no_checkpoints): the page faults a small session's `return 1` takes, checkpoint
 *   included, with checkpoints and without: after a checkpoint each page the run writes is copied once;
 * - page_copy_fault_us_p50: what one such copy costs on this machine (a plain process writes one byte per page of
 *   8 MB its paused fork shares). With the two, a run's delay after a checkpoint is explained, and carried over to
 *   a machine whose page faults cost less (a virtual machine's cost many times a bare one's).
 */
import { execFileSync } from 'node:child_process';
import { LocalRuntime } from '../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../src/core/runtime/local/sandbox';

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const r2 = (x: number) => Math.round(x * 100) / 100;
const MB = 1 << 20;

async function session(kind: 'none' | 'bubblewrap', max: number) {
  const rt = new LocalRuntime({ python: '/usr/bin/python3', sandbox: { kind, limits: { memory: '4g' } }, checkpoints: { max, memoryBytes: 64 * 1024 * MB } });
  const run = async (code: string) => {
    const item = await rt.execute({ code, sessionId: 'bench', timeoutMs: 300_000 });
    if (item.status !== 'completed') throw new Error(`bench run failed: ${JSON.stringify(item.error)}`);
    return item;
  };
  await run('big = bytearray(b"\\x01") * (500 << 20)\nreturn len(big)');
  return { rt, run, checkpoints: () => rt.sessions.list()[0].checkpoints };
}

export async function benchRewind(): Promise<Record<string, unknown>> {
  const kind = (await probeBubblewrap()) ? 'none' : 'bubblewrap';
  const out: Record<string, unknown> = { rewind_sandbox: kind };
  const runs = 15;

  // The fork per execution, and what a run that follows at once pays.
  const on = await session(kind, 10);
  const forks: number[] = [];
  const withCkp: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await on.run(`n = ${i}`);
    withCkp.push(performance.now() - t0);
    const ms = on.checkpoints().lastMs;
    if (ms !== undefined && i > 0) forks.push(ms);
  }
  out.checkpoint_ms_p50 = r2(p50(forks));
  // Rewind: back to before the 10th run, then again (each rewind takes the point's checkpoint anew).
  const target = await on.run('n = "target"');
  await on.run('n = "after"');
  const rewinds: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const r = await on.rt.rewind(target.id);
    rewinds.push(performance.now() - t0);
    if (!r.python.restored) throw new Error(`the bench's rewind failed: ${JSON.stringify(r)}`);
    await on.run('n = "after again"');
  }
  out.rewind_ms_p50 = r2(p50(rewinds));
  await on.rt.dispose();

  const off = await session(kind, 0);
  const without: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await off.run(`n = ${i}`);
    without.push(performance.now() - t0);
  }
  await off.rt.dispose();
  out.exec_500mb_session_ms_p50 = r2(p50(without));
  out.checkpoint_run_delay_ms_p50 = r2(p50(withCkp) - p50(without));

  // 10 checkpoints, 1% of the pages written between each.
  const mem = await session(kind, 10);
  for (let i = 0; i < 11; i++) await mem.run(`for j in range(${i * 4096}, len(big), 409600): big[j] = 2`);
  await mem.run('pass'); // the last checkpoint's figures arrive before this run
  out.checkpoints_10_extra_mb = r2(mem.checkpoints().usage.bytes / MB);
  out.checkpoints_10_count = mem.checkpoints().usage.count;
  await mem.rt.dispose();
  Object.assign(out, await pageCopies(kind));
  return out;
}

/** Minor page faults per small run, with checkpoints and without, and one copy-on-write fault's cost here. */
export async function pageCopies(kind: 'none' | 'bubblewrap'): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const code = 'import resource\nreturn resource.getrusage(resource.RUSAGE_SELF).ru_minflt';
  for (const max of [10, 0]) {
    const rt = new LocalRuntime({ python: '/usr/bin/python3', sandbox: { kind }, checkpoints: { max } });
    const faults: number[] = [];
    let last: number | undefined;
    for (let i = 0; i < 30; i++) {
      const item = await rt.execute({ code, sessionId: 'bench' });
      if (item.status !== 'completed' || typeof item.value !== 'number') throw new Error(`bench run failed: ${JSON.stringify(item.error)}`);
      if (last !== undefined && i > 5) faults.push(item.value - last);
      last = item.value;
    }
    await rt.dispose();
    out[max ? 'pages_copied_per_run_p50' : 'pages_copied_per_run_no_checkpoints_p50'] = p50(faults);
  }
  out.page_copy_fault_us_p50 = r2(Number(execFileSync('/usr/bin/python3', ['-c', PAGE_COPY], { encoding: 'utf8' }).trim()));
  return out;
}

const PAGE_COPY = `
import mmap, os, time
n = 2048
m = mmap.mmap(-1, 4096 * n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for i in range(0, 4096 * n, 4096): m[i] = 1
times = []
for _ in range(7):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w); os.read(r, 1); os._exit(0)
    os.close(r)
    t = time.perf_counter()
    for i in range(0, 4096 * n, 4096): m[i] = 2
    times.append((time.perf_counter() - t) / n * 1e6)
    os.close(w); os.waitpid(pid, 0)
print(sorted(times)[3])
`;
