/**
 * Background jobs of a local session (docs/design/backgroundJobs.md), on the real runtime with real python3
 * in its sandbox: a job runs while the session runs other code (a FIFO is the barrier), its output is whole
 * and in order, wait_job's timeout, Stop kills the job's tree while a foreground Stop spares it, the time
 * limit, the limit of jobs per session, and the session's end.
 */
import assert from 'node:assert/strict';
import type { CodeInterpreterCallItem, JobChanged } from '../../src/common/events';
import { LocalRuntime, type LocalRuntimeOptions } from '../../src/core/runtime/local/localRuntime';
import type { ExecuteRequest } from '../../src/core/runtime/types';
import { processesWithCmdline } from '../../src/core/util/processTree';
import { until, waitFor } from '../support/wait';

for (const zygote of [false, true])
  describe(`background jobs in a local session (${zygote ? 'forked from the zygote' : 'cold start'})`, function () {
    this.timeout(90_000);
    const runtimes: LocalRuntime[] = [];
    after(async () => Promise.all(runtimes.map((r) => r.dispose())));

    function runtime(extra: Partial<LocalRuntimeOptions> = {}): LocalRuntime {
      const rt = new LocalRuntime({ sandbox: { kind: 'auto' }, zygote, ...extra });
      runtimes.push(rt);
      return rt;
    }
    const run = (rt: LocalRuntime, code: string, extra: Partial<ExecuteRequest> = {}): Promise<CodeInterpreterCallItem> =>
      rt.execute({ code, sessionId: 's', ...extra });
    const ok = (item: CodeInterpreterCallItem): unknown => {
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      return item.value;
    };
    /** A sleeping child process the job starts, found on this machine by a marker in its command line. */
    const sleeper = (mark: string) =>
      `import subprocess, sys\np = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "${mark}"])\np.wait()`;

    it('runs while the session runs other code, keeps its 120 lines whole and in order, and its end reaches the notes once', async () => {
      const rt = runtime();
      ok(await run(rt, 'import os\nos.mkfifo("gate")\nx = 5'));
      const ended = until(rt.onJob.bind(rt), (e: JobChanged) => e.state !== 'running', { timeoutMs: 60_000, what: 'the job to end' });
      const job = "got = open('gate').read()\nfor i in range(1, 121):\n    print(f'line {i}')\n{'got': got, 'x': x}";
      assert.deepEqual(ok(await run(rt, job, { background: true })), { job: 1, status: 'running' });
      // The job blocks on the FIFO until this foreground run opens it: this run runs while the job does.
      const listed = ok(await run(rt, "listed = jobs()\nopen('gate', 'w').write('go')\nlisted")) as Array<{ status: string }>;
      assert.equal(listed[0].status, 'running');
      const waited = ok(await run(rt, 'r = wait_job(1, timeout=60)\n{"r": r, "lines": job_output(1).splitlines()}')) as {
        r: { status: string; value: unknown };
        lines: string[];
      };
      assert.equal(waited.r.status, 'done');
      assert.deepEqual(waited.r.value, { got: 'go', x: 5 });
      assert.deepEqual(
        waited.lines,
        Array.from({ length: 120 }, (_, i) => `line ${i + 1}`),
      );
      const end = await ended;
      assert.equal(end.state, 'done');
      const notes = await rt.sessions.takeJobNotes('s');
      assert.equal(notes.length, 1);
      assert.match(notes[0].message, /^Background job 1 finished after .*; its value: \{"got":"go","x":5\}\nThe end of its output:\n[^]*line 120$/);
      assert.deepEqual(await rt.sessions.takeJobNotes('s'), [], 'each end is told once');
      // What the job assigned stayed in the job.
      assert.equal(ok(await run(rt, '"got" in globals()')), false);
    });

    it("streams a job's output to the host as it is printed (whole and in order), and its end carries the output kept", async () => {
      const rt = runtime();
      ok(await run(rt, 'import os\nos.mkfifo("gate2")'));
      const pieces: string[] = [];
      const off = rt.onJobOutput((e) => pieces.push(e.delta));
      const ended = until(rt.onJob.bind(rt), (e: JobChanged) => e.state !== 'running', { timeoutMs: 60_000, what: 'the job to end' });
      const job = "for i in range(1, 6):\n    print(f'line {i}', flush=True)\nopen('gate2').read()\nfor i in range(6, 121):\n    print(f'line {i}')";
      ok(await run(rt, job, { background: true }));
      // Live: the first five lines arrive while the job still waits at the gate (it cannot end before this run opens it).
      await waitFor(() => pieces.join('').includes('line 5\n'), { timeoutMs: 60_000, what: 'the first lines while the job runs' });
      ok(await run(rt, "open('gate2', 'w').write('go')"));
      const end = await ended;
      off();
      const lines = Array.from({ length: 120 }, (_, i) => `line ${i + 1}`);
      assert.deepEqual(pieces.join('').split('\n').filter(Boolean), lines);
      assert.equal(end.output, lines.join('\n') + '\n');
    });

    it("bounds a job's live output: its start whole, then samples, with how much was left out and what the host cut", async () => {
      const rt = runtime();
      let sent = 0;
      let skipped = 0;
      let first = '';
      const off = rt.onJobOutput((e) => {
        if (!first) first = e.delta;
        sent += e.delta.length;
        skipped += e.skipped ?? 0;
      });
      const ended = until(rt.onJob.bind(rt), (e: JobChanged) => e.state !== 'running', { timeoutMs: 60_000, what: 'the job to end' });
      ok(await run(rt, 'import sys\nsys.stdout.write("a" * (1 << 20) + "b" * (8 << 20) + "END")', { background: true }));
      const end = await ended;
      off();
      assert.ok(first.startsWith('a'.repeat(1000)), 'its start comes whole');
      assert.ok(sent < 2 << 20, `the host got ${sent} characters of 9 MiB`);
      assert.ok(skipped > 6 << 20, `the guest said it left out ${skipped} bytes`);
      assert.ok(end.output?.endsWith('bEND'), 'the kept output ends with the end');
      assert.match(end.output ?? '', /^a{1000}[^]*\n\[codeact: [\d,]+ characters of this job's output were cut here\]\n/);
      assert.ok((end.output?.length ?? 0) < 200_000);
    });

    it("Stop from the host kills the job's whole tree and says it was stopped; a pid the guest forged is refused", async () => {
      const rt = runtime();
      const mark = `codeact-job-child-${process.pid}-s${zygote}`;
      const stoppedEvent = until(rt.onJob.bind(rt), (e: JobChanged) => e.job === 1 && e.state !== 'running', { timeoutMs: 60_000, what: 'the job to end' });
      ok(await run(rt, sleeper(mark), { background: true }));
      await waitFor(() => processesWithCmdline(mark).length === 1, { timeoutMs: 30_000, what: "the job's child process" });
      await rt.sessions.stopJob('s', 1);
      await waitFor(() => processesWithCmdline(mark).length === 0, { timeoutMs: 30_000, what: "the job's child to be gone" });
      assert.equal((await stoppedEvent).state, 'stopped');
      assert.match((await rt.sessions.takeJobNotes('s'))[0].message, /^Background job 1 was stopped after /);
      await assert.rejects(rt.sessions.stopJob('s', 1), /There is no running background job 1 in this session/);
      // The guest (untrusted) claims a job whose pid is its own process, then one whose pid is this test's process:
      // neither is a child of the guest, so neither is killed.
      const forge = (pid: string, job: number) =>
        `import gc, os\nch = [o for o in gc.get_objects() if type(o).__name__ == "Channel"][0]\nch.send({"t": "job", "job": ${job}, "state": "running", "pid": ${pid}})`;
      ok(await run(rt, forge('os.getpid()', 90)));
      ok(await run(rt, forge(String(process.pid), 91)));
      await assert.rejects(rt.sessions.stopJob('s', 90), /the process its guest reported \(\d+\) is not a child of this session's guest/);
      await assert.rejects(rt.sessions.stopJob('s', 91), /is not a child of this session's guest/);
      assert.equal(ok(await run(rt, '6 * 7')), 42, 'the session lives on');
    });

    it("wait_job returns at its timeout while the job runs; a foreground Stop spares the job; stop_job kills the job's tree", async () => {
      const rt = runtime();
      const mark = `codeact-job-child-${process.pid}-a${zygote}`;
      ok(await run(rt, sleeper(mark), { background: true }));
      await waitFor(() => processesWithCmdline(mark).length === 1, { timeoutMs: 30_000, what: "the job's child process" });
      const waited = ok(await run(rt, 'wait_job(1, timeout=0.2)')) as { status: string };
      assert.equal(waited.status, 'running');
      assert.deepEqual(await rt.sessions.takeJobNotes('s'), [], 'no note while the job runs');
      // A foreground run stopped at its timeout kills what it started, not the job's tree.
      const stopped = await run(rt, 'import subprocess\nsubprocess.Popen(["sleep", "600"])\nwhile True:\n    pass', { timeoutMs: 1000 });
      assert.equal(stopped.status, 'failed');
      assert.equal(processesWithCmdline(mark).length, 1, "the job's child outlives a foreground Stop");
      const after = ok(await run(rt, 'stop_job(1)')) as { status: string };
      assert.equal(after.status, 'stopped');
      await waitFor(() => processesWithCmdline(mark).length === 0, { timeoutMs: 30_000, what: "the job's child to be gone" });
      const notes = await rt.sessions.takeJobNotes('s');
      assert.deepEqual(
        notes.map((n) => n.state),
        ['stopped'],
      );
      assert.match(notes[0].message, /^Background job 1 was stopped after /);
    });

    it('stops a job at its time limit, refuses a job over the limit per session with a message that says what to do, and cuts a long output honestly', async () => {
      const rt = runtime({ limits: { maxJobs: 1, maxJobMs: 1500, maxOutputBytes: 8192 } });
      const mark = `codeact-job-child-${process.pid}-b${zygote}`;
      const timedOut = until(rt.onJob.bind(rt), (e: JobChanged) => e.state === 'timed_out', { timeoutMs: 60_000, what: 'the time limit' });
      ok(await run(rt, sleeper(mark), { background: true }));
      const refused = await run(rt, 'print("never")', { background: true });
      assert.equal(refused.status, 'failed');
      assert.match(
        refused.error?.message ?? '',
        /already runs 1 background jobs \(jobs 1\); the limit is 1 \(codeact\.jobs\.maxPerSession\)\. Wait for one with wait_job\(n, timeout=\.\.\.\) or stop one with stop_job\(n\)/,
      );
      const end = await timedOut;
      assert.match(end.message, /reached its time limit of 1\.5 s \(codeact\.jobs\.maxMinutes\)/);
      await waitFor(() => processesWithCmdline(mark).length === 0, { timeoutMs: 30_000, what: "the job's child to be gone" });
      // The slot is free again. A job's output past the cap keeps its start and end, and says what was cut.
      const long = until(rt.onJob.bind(rt), (e: JobChanged) => e.job === 2 && e.state !== 'running', { timeoutMs: 60_000, what: 'job 2 to end' });
      assert.deepEqual(ok(await run(rt, 'for i in range(1, 2001):\n    print(f"line {i}")', { background: true })), { job: 2, status: 'running' });
      const end2 = await long;
      assert.equal(end2.output_cut, true);
      assert.match(end2.message, /line 2000\n\(Its output passed the cap and its middle was cut; job_output\(2\) has its first and last part\.\)$/);
      const text = ok(await run(rt, 'job_output(2)')) as string;
      assert.ok(text.startsWith('line 1\nline 2\n') && text.endsWith('line 1999\nline 2000\n'), text.slice(0, 80));
      assert.match(text, /\n\[codeact: [\d,]+ bytes of this job's output were cut here; its first and last 4,096 bytes are kept\]\n/);
    });

    it("ends a session's running jobs with it, and says so; call_tool in a job started by a run without tools says so; a run without a session cannot start one", async () => {
      const rt = runtime();
      const mark = `codeact-job-child-${process.pid}-c${zygote}`;
      ok(await run(rt, sleeper(mark), { background: true }));
      await waitFor(() => processesWithCmdline(mark).length === 1, { timeoutMs: 30_000, what: "the job's child process" });
      await rt.sessions.close('s');
      await waitFor(() => processesWithCmdline(mark).length === 0, { timeoutMs: 30_000, what: "the job's child to be gone" });
      const notes = await rt.sessions.takeJobNotes('s');
      assert.deepEqual(
        notes.map((n) => n.state),
        ['ended'],
      );
      assert.match(notes[0].message, /with its Python session \(it was closed\); its result is gone/);
      // A new session numbers its jobs from 1. call_tool in a job started by a run that takes no tool calls says so.
      ok(await run(rt, 'await call_tool("anything")', { background: true, tools: true }));
      const failed = ok(await run(rt, 'wait_job(1, timeout=60)')) as { status: string; error: string };
      assert.equal(failed.status, 'failed');
      assert.match(failed.error, /^RuntimeError: No managed tools are available to this background job/);
      const oneShot = await rt.execute({ code: '1', background: true });
      assert.equal(oneShot.status, 'failed');
      assert.match(oneShot.error?.message ?? '', /Background jobs need a session/);
    });
  });
