/**
 * Sessions on the local runtime, with real python3, cold and forked from the warm zygote, without a
 * sandbox and in bubblewrap: state that survives, Stop that keeps it, an interrupt that does not take,
 * restart, idle expiry, LRU eviction, teardown that leaves no process, and fork safety.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { CodeInterpreterCallItem, SessionChanged } from '../../src/common/events';
import { logsOf } from '../../src/common/events';
import { codeOf, findCells } from '../../src/common/cells';
import { LocalRuntime, type LocalRuntimeOptions } from '../../src/core/runtime/local/localRuntime';
import { processesWithCmdline } from '../../src/core/util/processTree';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { barrier, waitFor } from '../support/wait';
import { daemonLines } from '../support/daemons';

const variants: Array<{ kind: 'none' | 'bubblewrap'; zygote: boolean }> = [
  { kind: 'none', zygote: false },
  { kind: 'none', zygote: true },
  { kind: 'bubblewrap', zygote: false },
  { kind: 'bubblewrap', zygote: true },
];

for (const { kind, zygote } of variants) {
  describe(`local sessions (sandbox: ${kind}, ${zygote ? 'forked from the zygote' : 'cold start'})`, function () {
    this.timeout(60_000);
    const runtimes: LocalRuntime[] = [];
    const events: SessionChanged[] = [];

    function runtime(extra: Partial<LocalRuntimeOptions> = {}): LocalRuntime {
      const rt = new LocalRuntime({ sandbox: { kind }, zygote, onSessionEvent: (e) => events.push(e), ...extra });
      runtimes.push(rt);
      return rt;
    }

    async function run(
      rt: LocalRuntime,
      code: string,
      sessionId?: string,
      extra: { timeoutMs?: number; signal?: AbortSignal } = {},
    ): Promise<CodeInterpreterCallItem> {
      return rt.execute({ code, sessionId, timeoutMs: extra.timeoutMs }, { signal: extra.signal });
    }

    before(async function () {
      if (kind === 'bubblewrap') {
        const reason = await probeBubblewrap();
        if (reason) {
          console.log(`      skipped: ${reason} (install bubblewrap to run these)`);
          this.skip();
        }
      }
    });
    afterEach(() => (events.length = 0));
    after(async () => Promise.all(runtimes.map((r) => r.dispose())));

    it('keeps state across three executions, in one process', async () => {
      const rt = runtime();
      const a = await run(rt, 'import os\nrows = [1, 2]\ndef total():\n    return sum(rows)\nos.getpid()', 's');
      const b = await run(rt, 'rows.append(3)\nos.getpid()', 's');
      const c = await run(rt, 'return {"total": total(), "pid": os.getpid(), "cwd_files": sorted(os.listdir("."))}', 's');
      assert.equal(c.status, 'completed', JSON.stringify(c.error));
      assert.deepEqual((c.value as { total: number }).total, 6);
      assert.equal(a.value, b.value);
      assert.equal((c.value as { pid: number }).pid, a.value);
      assert.deepEqual([a.session?.execution, b.session?.execution, c.session?.execution], [1, 2, 3]);
      // The working directory persists for the session.
      await run(rt, 'open("notes.txt", "w").write("kept")', 's');
      assert.equal((await run(rt, 'open("notes.txt").read()', 's')).value, 'kept');
      // Executions without a session id, and other sessions, do not see it.
      assert.equal((await run(rt, "'rows' in globals()")).value, false);
      assert.equal((await run(rt, "'rows' in globals()", 'other')).value, false);
    });

    it("summarises the session's variables without running their code: builtin values, functions, classes, modules", async () => {
      const rt = runtime();
      const code = [
        'import math',
        'readings = [10, 20, 30]',
        'name = "pump"',
        'limits = {"low": 1, "high": 9}',
        'def mean(xs):',
        '    return sum(xs) / len(xs)',
        'class Loud:',
        '    def __repr__(self):',
        '        raise RuntimeError("a repr that must never run")',
        'loud = Loud()',
      ].join('\n');
      assert.equal((await run(rt, code, 's')).status, 'completed');
      const summary = await rt.sessions.variables('s');
      assert.ok(summary);
      const byName = Object.fromEntries(summary.variables.map((v) => [v.name, v]));
      assert.deepEqual(byName.readings, { name: 'readings', type: 'list', summary: '[10, 20, 30]', len: 3 });
      assert.equal(byName.name.summary, "'pump'");
      assert.equal(byName.limits.summary, "{'low': 1, 'high': 9}");
      assert.equal(byName.math.type, 'module');
      assert.equal(byName.mean.type, 'function');
      assert.equal(byName.loud.type, 'Loud');
      assert.equal(byName.loud.summary, '<Loud>');
      assert.equal(await rt.sessions.variables('nobody'), null);
    });

    it('a run stopped while it waits for its turn does not let the next one in early', async () => {
      const rt = runtime();
      await run(rt, 'import os, time', 's');
      // A waits on a tool call the test answers (a barrier, not a clock); C reports whether A had finished.
      const gate = barrier();
      const first = rt.execute(
        { code: 'await call_tool("gate")\nopen("a_done", "w").close()\n"a"', sessionId: 's', tools: true },
        { onToolCall: async () => (await gate.opened, 'open') },
      );
      const controller = new AbortController();
      const second = run(rt, '"b"', 's', { signal: controller.signal });
      const third = run(rt, 'os.path.exists("a_done")', 's');
      controller.abort();
      const b = await second;
      assert.equal(b.status, 'incomplete');
      assert.equal(b.error?.type, 'Cancelled');
      // The barrier is lifted only after B was stopped: with the bug, C had already started beside A.
      gate.open();
      const [a, c] = await Promise.all([first, third]);
      assert.equal(a.status, 'completed', JSON.stringify(a.error));
      assert.equal(a.value, 'a');
      assert.equal(c.status, 'completed', JSON.stringify(c.error));
      assert.equal(c.value, true, 'C ran only after A had finished');
    });

    it('runs # %% cells of one document so that each builds on the one before', async () => {
      const rt = runtime();
      const lines = readFileSync(path.join(__dirname, '../fixtures/cells/analysis.py'), 'utf8').split('\n');
      const cells = findCells(lines);
      assert.equal(cells.length, 3);
      const items: CodeInterpreterCallItem[] = [];
      for (const cell of cells) items.push(await run(rt, codeOf(lines, cell.codeStart, cell.end).code, 'doc:analysis.py'));
      assert.deepEqual(
        items.map((i) => i.status),
        ['completed', 'completed', 'completed'],
        JSON.stringify(items.map((i) => i.error)),
      );
      assert.deepEqual(items[2].value, { count: 3, mean: 20 });
    });

    it('Stop interrupts the code and keeps the state, and the processes the run started die (setsid and double fork included)', async () => {
      const rt = runtime();
      await run(rt, 'kept = "still here"', 's');
      const marker = `codeact-stopped-${kind}-${zygote}-${Date.now()}`;
      const controller = new AbortController();
      const code = [...daemonLines(marker), 'print("working", flush=True)', 'while True:', '    time.sleep(0.05)'].join('\n');
      const stopped = run(rt, code, 's', { signal: controller.signal });
      await waitFor(() => processesWithCmdline(marker).length === 2, { what: 'the run to start its processes' });
      controller.abort();
      const item = await stopped;
      assert.equal(item.error?.type, 'Cancelled');
      assert.equal(item.status, 'incomplete');
      assert.equal(item.session?.state_lost, undefined);
      await waitFor(() => processesWithCmdline(marker).length === 0, { what: "the stopped run's processes to die" });
      assert.equal((await run(rt, 'kept', 's')).value, 'still here');
    });

    it('a timeout interrupts a busy loop (KeyboardInterrupt) and keeps the state', async () => {
      const rt = runtime();
      await run(rt, 'kept = 41', 's');
      const item = await run(rt, 'while True:\n    pass', 's', { timeoutMs: 1200 });
      assert.equal(item.error?.type, 'Timeout');
      assert.doesNotMatch(item.error!.message, /variables from earlier runs are gone/);
      assert.equal((await run(rt, 'kept + 1', 's')).value, 42);
    });

    it('an interrupt that does not take kills the tree and says the state is gone', async () => {
      const rt = runtime({ interruptGraceMs: 800 });
      await run(rt, 'kept = 1', 's');
      const marker = `codeact-stubborn-${kind}-${zygote}-${Date.now()}`;
      const code = [
        'import subprocess, sys, time',
        `subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "${marker}"], start_new_session=True)`,
        'while True:',
        '    try:',
        '        time.sleep(10)',
        '    except KeyboardInterrupt:',
        '        pass',
      ].join('\n');
      const item = await run(rt, code, 's', { timeoutMs: 1000 });
      assert.equal(item.error?.type, 'Timeout');
      assert.match(
        item.error!.message,
        /did not respond to the interrupt within 0\.8 s, so its Python session was ended: variables from earlier runs are gone/,
      );
      assert.equal(item.session?.state_lost, true);
      await waitFor(() => processesWithCmdline(marker).length === 0, { what: 'the stubborn tree to die' });
      const next = await run(rt, "'kept' in globals()", 's');
      assert.equal(next.value, false);
      assert.match(logsOf(next, 'stderr'), /\[codeact\] The Python session ended .*variables from earlier runs are gone/);
      assert.ok(events.some((e) => e.state === 'ended' && e.reason === 'interrupt'));
    });

    it('restart starts a fresh session and says so', async () => {
      const rt = runtime();
      await run(rt, 'kept = 1', 's');
      assert.equal(await rt.sessions.restart('s'), true);
      assert.ok(events.some((e) => e.session_id === 's' && e.state === 'ended' && e.reason === 'restarted'));
      const next = await run(rt, "'kept' in globals()", 's');
      assert.equal(next.value, false);
      assert.equal(next.session?.execution, 1);
      assert.match(logsOf(next, 'stderr'), /restarted: variables from earlier runs are gone/);
    });

    it('an idle session expires, is announced, and the next run starts fresh', async () => {
      const rt = runtime({ idleMs: 400 });
      await run(rt, 'kept = 1', 's');
      await waitFor(() => events.some((e) => e.reason === 'idle'), { what: 'the idle expiry' });
      assert.equal(rt.sessions.has('s'), false);
      const next = await run(rt, "'kept' in globals()", 's');
      assert.equal(next.value, false);
      assert.match(logsOf(next, 'stderr'), /without a run: variables from earlier runs are gone/);
    });

    it('keeps at most maxAlive sessions: the least recently used goes first, announced', async () => {
      const rt = runtime({ maxAlive: 2 });
      await run(rt, 'v = "a"', 'a');
      await run(rt, 'v = "b"', 'b');
      await run(rt, 'v', 'a'); // a is now more recent than b
      await run(rt, 'v = "c"', 'c');
      const evicted = events.filter((e) => e.reason === 'evicted').map((e) => e.session_id);
      assert.deepEqual(evicted, ['b']);
      assert.match(events.find((e) => e.reason === 'evicted')!.message, /at most 2 sessions alive \(codeact\.session\.maxAlive\)/);
      assert.equal((await run(rt, 'v', 'a')).value, 'a');
      const b = await run(rt, "'v' in globals()", 'b');
      assert.equal(b.value, false);
    });

    it('no process survives the end of a session: setsid and double-fork daemons included', async () => {
      const rt = runtime();
      const marker = `codeact-session-orphan-${kind}-${zygote}-${Date.now()}`;
      const code = [...daemonLines(marker), 'time.sleep(0.3)'].join('\n');
      await run(rt, code, 'closing');
      await run(rt, code.replace(/sleep\(30(\d)\)/g, 'sleep(40$1)'), 'disposing');
      await waitFor(() => processesWithCmdline(marker).length === 4, { what: 'both sessions to run their daemons' });
      // Between executions the daemons live on with their session, as in a kernel.
      await run(rt, 'x = 1', 'closing');
      assert.equal(processesWithCmdline(marker).length, 4);
      await rt.sessions.close('closing');
      await waitFor(() => processesWithCmdline(marker).length === 2, { what: "the closed session's daemons to die" });
      await rt.dispose();
      await waitFor(() => processesWithCmdline(marker).length === 0, { what: 'every daemon to die on dispose' });
    });
  });
}

describe('local sessions: the warm zygote', function () {
  this.timeout(120_000);
  const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

  for (const kind of ['none', 'bubblewrap'] as const) {
    it(`gives every forked guest fresh random state, no inherited threads or descriptors (sandbox: ${kind})`, async function () {
      if (kind === 'bubblewrap' && (await probeBubblewrap())) this.skip();
      const hasNumpy =
        (
          await new LocalRuntime({ python, sandbox: { kind: 'none' } }).execute({
            code: 'import importlib.util\nreturn importlib.util.find_spec("numpy") is not None',
          })
        ).value === true;
      // No checkpoints: their sockets are the guest's own descriptors, and this looks for inherited ones.
      const rt = new LocalRuntime({ python, sandbox: { kind }, preload: hasNumpy ? ['random', 'numpy'] : ['random'], checkpoints: { max: 0 } });
      try {
        const code = [
          'import os, random, sys, threading',
          'np = sys.modules.get("numpy")',
          'return {',
          '  "random": random.random(),',
          '  "numpy": float(np.random.random()) if np else None,',
          '  "numpy_preloaded": np is not None,',
          '  "threads": sorted(t.name for t in threading.enumerate()),',
          '  "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),',
          '}',
        ].join('\n');
        const seen: Array<Record<string, unknown>> = [];
        for (const s of ['one', 'two', 'three']) {
          const item = await rt.execute({ code, sessionId: s });
          assert.equal(item.status, 'completed', JSON.stringify(item.error));
          seen.push(item.value as Record<string, unknown>);
        }
        const one = await rt.execute({ code });
        seen.push(one.value as Record<string, unknown>);
        assert.equal(new Set(seen.map((v) => v.random)).size, seen.length, `random state repeated: ${JSON.stringify(seen)}`);
        if (hasNumpy) {
          assert.ok(
            seen.every((v) => v.numpy_preloaded),
            'numpy was preloaded in the zygote',
          );
          assert.equal(new Set(seen.map((v) => v.numpy)).size, seen.length, `numpy state repeated: ${JSON.stringify(seen)}`);
        }
        for (const v of seen) {
          // Only the guest's own: the main thread and its output flusher (none from the zygote).
          assert.deepEqual(v.threads, ['MainThread', 'codeact-output']);
          // stdin, stdout, stderr, the protocol channel, and the fd listdir itself opened.
          assert.ok(
            (v.fds as number[]).every((fd) => fd <= 4),
            `inherited descriptors: ${JSON.stringify(v.fds)}`,
          );
        }
      } finally {
        await rt.dispose();
      }
    });
  }

  it('falls back to a cold start when the zygote cannot start, and says so once', async () => {
    const logs: string[] = [];
    const rt = new LocalRuntime({ python, sandbox: { kind: 'none' }, preload: ['json'], log: (l) => logs.push(l) });
    try {
      // Kill the zygote as soon as it is up: the next guests start cold.
      const first = await rt.execute({ code: 'return 1', sessionId: 'a' });
      assert.equal(first.value, 1);
      const launcher = (rt as unknown as { launcher: { zygote: Promise<{ dispose(): void } | undefined>; zygoteStarts: number } }).launcher;
      const z = await launcher.zygote;
      assert.ok(z, 'the first guest came from the zygote');
      z.dispose();
      launcher.zygoteStarts = 99;
      const second = await rt.execute({ code: 'return 2', sessionId: 'b' });
      const third = await rt.execute({ code: 'return 3' });
      assert.deepEqual([second.value, third.value], [2, 3]);
    } finally {
      await rt.dispose();
    }
  });
});
