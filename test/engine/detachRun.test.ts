/**
 * "Keep running in background" for a run already going on (issue 34 point 3; core/runtime/local/detach.ts), on
 * the real local runtime with real python3: the run is held at a tool call (the barrier the test releases), sent
 * to the background, its execute() resolves at once and says so, its later lines come as the job's output, the
 * next execution waits for it and says so, its end is a job's end with the number it took, a fork started after
 * gets the next number, and Stop of the job interrupts the run and kills what it started.
 */
import assert from 'node:assert/strict';
import type { CodeInterpreterCallItem, JobChanged } from '../../src/common/events';
import { LocalRuntime, type LocalRuntimeOptions } from '../../src/core/runtime/local/localRuntime';
import type { ExecuteRequest, ToolCallHandler } from '../../src/core/runtime/types';
import { processesWithCmdline } from '../../src/core/util/processTree';
import { until, waitFor } from '../support/wait';

const textOf = (item: CodeInterpreterCallItem): string => JSON.stringify(item.outputs);

describe('a running execution sent to the background (local session)', function () {
  this.timeout(90_000);
  const runtimes: LocalRuntime[] = [];
  after(async () => Promise.all(runtimes.map((r) => r.dispose())));

  function runtime(extra: Partial<LocalRuntimeOptions> = {}): LocalRuntime {
    const rt = new LocalRuntime({ sandbox: { kind: 'auto' }, ...extra });
    runtimes.push(rt);
    return rt;
  }
  const ok = (item: CodeInterpreterCallItem): unknown => {
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    return item.value;
  };
  /** A tool call the run waits at until the test opens it. */
  function gate(): { handler: ToolCallHandler; reached: Promise<void>; open: () => void } {
    let reached!: () => void;
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    const atGate = new Promise<void>((r) => (reached = r));
    return {
      handler: async () => {
        reached();
        await opened;
        return 'open';
      },
      reached: atGate,
      open,
    };
  }

  it('resolves at once with the output so far, streams the rest as the job, makes the next run wait and say so, and numbers past it', async () => {
    const rt = runtime();
    const run = (code: string, extra: Partial<ExecuteRequest> = {}, handler?: ToolCallHandler) =>
      rt.execute({ code, sessionId: 's', ...extra }, handler ? { onToolCall: handler } : {});
    // A fork job first: it takes number 1 and ends.
    const firstEnded = until(rt.onJob.bind(rt), (e: JobChanged) => e.job === 1 && e.state !== 'running', { timeoutMs: 60_000, what: 'job 1 to end' });
    assert.deepEqual(ok(await run('1', { background: true })), { job: 1, status: 'running' });
    assert.equal((await firstEnded).state, 'done');
    await rt.sessions.takeJobNotes('s');

    const g = gate();
    const pieces: string[] = [];
    rt.onJobOutput((e) => e.job === 2 && pieces.push(e.delta));
    const started = until(rt.onJob.bind(rt), (e: JobChanged) => e.job === 2 && e.state === 'running', { timeoutMs: 60_000, what: 'job 2 to start' });
    const ended = until(rt.onJob.bind(rt), (e: JobChanged) => e.job === 2 && e.state !== 'running', { timeoutMs: 60_000, what: 'job 2 to end' });
    const code =
      "for i in range(1, 4):\n    print(f'line {i}', flush=True)\nawait call_tool('gate')\nfor i in range(4, 7):\n    print(f'line {i}', flush=True)\n'the end'";
    const foreground = run(code, { itemId: 'exec-a' }, g.handler);
    await g.reached;
    await assert.rejects(rt.sessions.detach('s', 'exec-other'), /not running in this session/);
    assert.equal(await rt.sessions.detach('s', 'exec-a'), 2);
    await assert.rejects(rt.sessions.detach('s', 'exec-a'), /already runs in the background as job 2/);

    const item = await foreground;
    assert.equal(item.status, 'completed');
    assert.equal(item.value, null);
    assert.match(textOf(item), /line 1\\nline 2\\nline 3\\n/);
    assert.doesNotMatch(textOf(item), /line 4/);
    assert.match(textOf(item), /sent execution \d+ to the background: it goes on as background job 2/);
    const running = await started;
    assert.equal(running.item_id, 'exec-a');

    // The next execution waits for it: it is queued now, and the run goes on only when the gate opens.
    const next = run("print('after')\n7");
    g.open();
    const end = await ended;
    assert.equal(end.state, 'done');
    assert.match(end.message, /^Background job 2 \(execution \d+, sent to the background\) finished after .*; its value: "the end"$/);
    assert.match(end.output ?? '', /line 1\nline 2\nline 3\n[^]*line 4\nline 5\nline 6\n/);
    assert.equal(
      pieces
        .join('')
        .match(/line \d/g)
        ?.join(','),
      'line 4,line 5,line 6',
    );
    const after = await next;
    assert.equal(ok(after), 7);
    assert.match(textOf(after), /waited [^"]* for background job 2 \(a run sent to the background\) to finish/);
    const notes = await rt.sessions.takeJobNotes('s');
    assert.deepEqual(
      notes.map((n) => n.job),
      [2],
    );
    // A fork started after it is numbered past it.
    assert.deepEqual(ok(await run('2', { background: true })), { job: 3, status: 'running' });
  });

  it('Stop of the job interrupts the run and kills what it started; the session lives on; jobs turned off refuse it', async () => {
    const rt = runtime();
    const mark = `codeact-detached-child-${process.pid}`;
    const ended = until(rt.onJob.bind(rt), (e: JobChanged) => e.job === 1 && e.state !== 'running', { timeoutMs: 60_000, what: 'job 1 to end' });
    const code = `import subprocess, sys\np = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "${mark}"])\np.wait()`;
    const foreground = rt.execute({ code, sessionId: 's', itemId: 'exec-b' });
    await waitFor(() => processesWithCmdline(mark).length === 1, { timeoutMs: 30_000, what: "the run's child process" });
    assert.equal(await rt.sessions.detach('s', 'exec-b'), 1);
    assert.equal((await foreground).status, 'completed');
    await rt.sessions.stopJob('s', 1);
    await waitFor(() => processesWithCmdline(mark).length === 0, { timeoutMs: 30_000, what: "the run's child to be gone" });
    const end = await ended;
    assert.equal(end.state, 'stopped');
    assert.match(end.message, /^Background job 1 \(execution \d+, sent to the background\) was stopped after /);
    assert.equal(ok(await rt.execute({ code: '6 * 7', sessionId: 's' })), 42, 'the session lives on');

    const off = runtime({ limits: { maxJobs: 0 } });
    const g = gate();
    const held = off.execute({ code: "await call_tool('gate')", sessionId: 't', itemId: 'exec-c' }, { onToolCall: g.handler });
    await g.reached;
    await assert.rejects(off.sessions.detach('t', 'exec-c'), /Background jobs are turned off/);
    g.open();
    assert.equal((await held).status, 'completed');
  });
});
