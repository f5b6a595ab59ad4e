/**
 * Issue 35: where a checkpoint's time goes, in the bench's own session (a local guest holding 500 MB, bubblewrap).
 * Prints one JSON object: the checkpoint's own figure (the guest's `ms`), a bare `os.fork()` + `_exit` in the same
 * process (timed in the parent, up to the fork's return), and the memory facts that set a fork's cost (page-table
 * size, anonymous and huge-page memory, mappings).
 *
 *   npx tsx --require ./test/support/pyText.cjs bench/experiments/rewind/checkpoint_breakdown.ts
 */
import { LocalRuntime } from '../../../src/core/runtime/local/localRuntime';

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const PROBE = String.raw`
import os, time
def facts():
    out = {}
    for line in open('/proc/self/status'):
        k, _, v = line.partition(':')
        if k in ('VmPTE', 'VmRSS', 'RssAnon'): out[k] = v.strip()
    for line in open('/proc/self/smaps_rollup'):
        k, _, v = line.partition(':')
        if k in ('AnonHugePages', 'Anonymous', 'Private_Dirty'): out[k] = v.strip()
    out['maps'] = sum(1 for _ in open('/proc/self/maps'))
    return out
ts = []
for _ in range(15):
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    ts.append((time.perf_counter() - t0) * 1000)
    os.waitpid(pid, 0)
ts.sort()
return {"bare_fork_ms_p50": round(ts[len(ts) // 2], 3), **facts()}
`;

async function main() {
  const out: Record<string, unknown> = {};
  for (const zygote of [false, true]) {
    const max = Number(process.env.CKP ?? 10); // CKP=0: no checkpoints
    const rt = new LocalRuntime({
      python: '/usr/bin/python3',
      zygote,
      sandbox: { kind: 'auto', limits: { memory: '4g' } },
      checkpoints: { max, memoryBytes: 64 << 30 },
    });
    const run = async (code: string) => {
      const item = await rt.execute({ code, sessionId: 'b', timeoutMs: 300_000 });
      if (item.status !== 'completed') throw new Error(JSON.stringify(item.error));
      return item;
    };
    await run('big = bytearray(b"\\x01") * (500 << 20)\nreturn len(big)');
    const ckp: number[] = [];
    for (let i = 0; i < 12; i++) {
      await run(`n = ${i}`);
      const ms = rt.sessions.list()[0].checkpoints?.lastMs;
      if (ms !== undefined && i > 0) ckp.push(ms);
    }
    const probe = await run(PROBE);
    out[zygote ? 'zygote' : 'cold'] = { checkpoint_ms_p50: p50(ckp), ...(probe.value as object) };
    await rt.dispose();
  }
  console.log(JSON.stringify(out, null, 1));
}

void main();
