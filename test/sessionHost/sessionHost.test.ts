/**
 * The session host (src/core/sessionHost): real host processes (the bundle's dist/sessionHost.js, so run
 * `node esbuild.mjs` first), real python3 guests, real clients in other processes killed with SIGKILL.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, JobChanged, JobOutput } from '../../src/common/events';
import type { ToolCallRequest } from '../../src/core/runtime/types';
import type { HostedRuntime } from '../../src/core/sessionHost/client';
import { attachSessionHost, type AttachOptions } from '../../src/core/sessionHost/launch';
import { hostFolder, hostName, placeOf } from '../../src/core/sessionHost/place';
import { PROVIDERS } from '../../src/common/providers';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { waitFor } from '../support/wait';
import { isAlive as alive, processesWithCmdline } from '../../src/core/util/processTree';

const lines = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join('');

const REPO = path.resolve(__dirname, '../..');
const HOST_ENTRY = path.join(REPO, 'dist/sessionHost.js');

/** A client in its own process: attaches, runs `code` in `sessionId`, prints each output line and the host's pid as JSON lines, then waits to be killed. */
const CLIENT = String.raw`
import { attachSessionHost } from '${REPO}/src/core/sessionHost/launch';
(async () => {
  const { options, code, sessionId } = JSON.parse(process.argv[2]);
  const rt = await attachSessionHost(options);
  console.log(JSON.stringify({ pid: rt.connection.welcome.pid }));
  const item = await rt.execute({ code, sessionId, timeoutMs: 600_000 }, {
    onEvent: (e) => { if (e.type === 'codeact.output.delta') console.log(JSON.stringify({ out: e.delta })); },
  });
  console.log(JSON.stringify({ item: item.status, value: item.value }));
  setInterval(() => {}, 1 << 30);
})();
`;

interface Client {
  child: ChildProcess;
  lines: Array<Record<string, unknown>>;
}

function startClient(dir: string, options: AttachOptions, code: string, sessionId: string): Client {
  const file = path.join(dir, `client-${Math.random().toString(16).slice(2)}.ts`);
  writeFileSync(file, CLIENT);
  const child = spawn(
    process.execPath,
    // One process (tsx as a loader, not its CLI, which would leave the client running in a child of its own).
    ['--require', path.join(REPO, 'test/support/pyText.cjs'), '--import', 'tsx', file, JSON.stringify({ options, code, sessionId })],
    { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const client: Client = { child, lines: [] };
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      client.lines.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
      buf = buf.slice(nl + 1);
    }
  });
  return client;
}

async function killed(c: Client) {
  const exited = new Promise((r) => c.child.once('exit', r));
  c.child.kill('SIGKILL');
  await exited;
}

describe('the session host', function () {
  this.timeout(120_000);
  let root: string;
  let env: NodeJS.ProcessEnv;
  const opened: HostedRuntime[] = [];
  const options = (workspace: string, extra: Partial<AttachOptions> = {}): AttachOptions => ({
    workspace,
    local: { sandbox: { kind: 'none' } },
    idleMs: 10 * 60_000,
    entry: HOST_ENTRY,
    env,
    ...extra,
  });
  const assertGone = (ws: string) => {
    const place = placeOf(hostFolder(env), hostName(ws, { sandbox: { kind: 'none' } }));
    for (const f of [place.socket, place.token, place.lock]) assert.ok(!existsSync(f), `${f} is left behind`);
  };
  const attach = async (o: AttachOptions) => {
    const rt = await attachSessionHost(o);
    opened.push(rt);
    return rt;
  };

  before(function () {
    if (!existsSync(HOST_ENTRY)) throw new Error(`${HOST_ENTRY} is missing: run node esbuild.mjs first`);
    root = mkdtempSync(path.join(tmpdir(), 'codeact-host-'));
    const runtimeDir = path.join(root, 'run');
    mkdirSync(runtimeDir, { mode: 0o700 });
    env = { ...process.env, XDG_RUNTIME_DIR: runtimeDir };
  });
  after(async () => {
    // Every host this file started ends (asked), and its processes with it.
    const pids = opened.map((r) => r.connection.welcome.pid);
    for (const r of opened) {
      r.connection.end();
      await r.dispose();
    }
    await waitFor(() => pids.every((p) => !alive(p)), { what: 'the hosts to end', timeoutMs: 60_000 });
    rmSync(root, { recursive: true, force: true });
  });

  it('keeps a session when its client is killed: a second client reads the variable the first defined', async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const a = startClient(root, options(ws), 'x = 41 + 1\nreturn x', 'conv-1');
    await waitFor(() => a.lines.some((l) => 'item' in l), { what: 'client A to define x', timeoutMs: 90_000 });
    const pid = a.lines[0].pid as number;
    await killed(a);
    assert.ok(alive(pid), 'the host outlives its client');
    const b = await attach(options(ws));
    assert.equal(b.connection.welcome.pid, pid, 'B attached to the same host');
    assert.ok(b.sessions.has('conv-1'), 'the session is live');
    const item = await b.execute({ code: 'return x', sessionId: 'conv-1' });
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    assert.equal(item.value, 42);
  });

  it('tells its clients the live sessions when they change, not after every run', async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const rt = await attach(options(ws));
    let lists = 0;
    (rt.connection as unknown as { socket: Socket }).socket.on('data', (d: Buffer) => (lists += d.toString().split('"type":"sessions"').length - 1));
    for (let i = 1; i <= 3; i++) assert.equal((await rt.execute({ code: `return ${i}`, sessionId: 'conv-live' })).value, i);
    assert.ok(rt.sessions.has('conv-live'));
    assert.equal(lists, 1, 'one list: when the session started');
  });

  it('goes on with a run while no client is attached; a client that watches gets every line in order', async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const go = path.join(root, 'go'); // the run waits for this file halfway (a barrier, not a clock)
    const finished = path.join(root, 'finished');
    const code = [
      'import os, time',
      'for i in range(1, 51): print(f"line {i}", flush=True)',
      `while not os.path.exists(${JSON.stringify(go)}): time.sleep(0.01)`,
      'for i in range(51, 201): print(f"line {i}", flush=True)',
      `open(${JSON.stringify(finished)}, "w").close()`,
      'return "done"',
    ].join('\n');
    const a = startClient(root, options(ws), code, 'conv-2');
    await waitFor(() => a.lines.some((l) => l.out && String(l.out).includes('line 50')), { what: 'client A to see line 50', timeoutMs: 90_000 });
    await killed(a);
    writeFileSync(go, '');
    await waitFor(() => existsSync(finished), { what: 'the run to finish with no client', timeoutMs: 90_000 });
    const b = await attach(options(ws));
    const events: CodeActEvent[] = [];
    const watched = await b.watch('conv-2', { onEvent: (e) => events.push(e) });
    assert.equal(watched.item?.status, 'completed');
    assert.equal(watched.item?.value, 'done');
    const printed = events
      .filter((e) => e.type === 'codeact.output.delta')
      .map((e) => (e as { delta: string }).delta)
      .join('');
    assert.deepEqual(
      printed.trim().split('\n'),
      Array.from({ length: 200 }, (_, i) => `line ${i + 1}`),
    );
  });

  it("relays a run's tool calls to the client (its gateway answers), and fails them plainly once no client is attached", async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const b = await attach(options(ws));
    const asked: unknown[] = [];
    const item = await b.execute(
      { code: 'r = await call_tool("double", n=21)\nreturn r["v"]', sessionId: 'conv-3' },
      {
        onToolCall: async (call) => {
          asked.push(call.arguments);
          return { v: (call.arguments as { n: number }).n * 2 };
        },
      },
    );
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    assert.equal(item.value, 42);
    assert.deepEqual(asked, [{ n: 21 }]);

    const go = path.join(root, 'go-tools');
    const code = [
      'import os, asyncio',
      'print("waiting", flush=True)',
      `while not os.path.exists(${JSON.stringify(go)}): await asyncio.sleep(0.01)`,
      'try:',
      '    await call_tool("double", n=1)',
      'except Exception as e:',
      '    return str(e)',
    ].join('\n');
    const a = startClient(root, options(ws), code, 'conv-4');
    await waitFor(() => a.lines.some((l) => l.out && String(l.out).includes('waiting')), { what: 'client A to start the run', timeoutMs: 90_000 });
    await killed(a);
    writeFileSync(go, '');
    const watched = await b.watch('conv-4');
    assert.equal(watched.item?.status, 'completed', JSON.stringify(watched.item?.error));
    assert.match(String(watched.item?.value), /No CodeAct client is attached to this session/);
  });

  it('replays the run going on, not the next one waiting its turn in the same session', async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const b = await attach(options(ws));
    const go = path.join(root, 'go-queued');
    let printed = false;
    const first = b.execute(
      { code: `import os, time\nprint("first", flush=True)\nwhile not os.path.exists(${JSON.stringify(go)}): time.sleep(0.01)\nreturn 1`, sessionId: 'conv-5' },
      { onEvent: (e) => (printed ||= e.type === 'codeact.output.delta') },
    );
    await waitFor(() => printed, { what: 'the first run to print', timeoutMs: 90_000 });
    const second = b.execute({ code: 'return 2', sessionId: 'conv-5' });
    const c = await attach(options(ws));
    const events: CodeActEvent[] = [];
    const watching = c.watch('conv-5', { onEvent: (e) => events.push(e) });
    // The first run ends only once the watch has it (its replay brings "first"): else the watch could come after the
    // first run's end and take the second, waiting its turn.
    await waitFor(() => events.some((e) => e.type === 'codeact.output.delta' && e.delta.includes('first')), {
      what: 'the watch to replay the first run',
      timeoutMs: 90_000,
    });
    writeFileSync(go, '');
    const watched = await watching;
    assert.equal(watched.item?.value, 1);
    assert.ok(events.some((e) => e.type === 'codeact.output.delta' && e.delta.includes('first')));
    assert.equal((await first).value, 1);
    assert.equal((await second).value, 2);
  });

  it('starts one host when two clients attach at once, and ends it when idle (the host process exits)', async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const o = options(ws, { idleMs: 300 });
    const [one, two] = await Promise.all([attachSessionHost(o), attachSessionHost(o)]);
    const pid = one.connection.welcome.pid;
    assert.equal(two.connection.welcome.pid, pid, 'both clients reached the same host');
    await one.dispose();
    await two.dispose();
    await waitFor(() => !alive(pid), { what: 'the idle host to exit', timeoutMs: 60_000 });
    assertGone(ws);
  });

  it('runs a background job through the host, and a later client is told once that it ended', async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const a = await attach(options(ws));
    const started = await a.execute({ code: 'print("job says hi")\n6 * 7', sessionId: 'conv-jobs', background: true });
    assert.equal(started.status, 'completed', JSON.stringify(started.error));
    assert.deepEqual(started.value, { job: 1, status: 'running' });
    // wait_job returns once the guest has reaped the job (its note is made then).
    const waited = await a.execute({ code: 'wait_job(1, timeout=60)', sessionId: 'conv-jobs' });
    assert.equal(waited.status, 'completed', JSON.stringify(waited.error));
    await a.dispose(); // a client going leaves the host and its sessions running
    const b = await attach(options(ws));
    let notes: Awaited<ReturnType<HostedRuntime['sessions']['takeJobNotes']>> = [];
    await waitFor(async () => (notes = await b.sessions.takeJobNotes('conv-jobs')).length > 0, { what: 'the job note', timeoutMs: 60_000 });
    assert.equal(notes.length, 1);
    assert.match(notes[0].message, /^Background job 1 finished after .*; its value: 42\nThe end of its output:\njob says hi/);
    assert.deepEqual(await b.sessions.takeJobNotes('conv-jobs'), [], 'each end is told once');
  });
  for (const kind of ['none', 'bubblewrap'] as const)
    it(`lists each session with the memory of its process tree and its running jobs (sandbox ${kind})`, async function () {
      if (kind === 'bubblewrap' && (await probeBubblewrap())) this.skip();
      const ws = mkdtempSync(path.join(root, 'ws-'));
      const rt = await attach(options(ws, { local: { sandbox: { kind } } }));
      const held = await rt.execute({ code: 'big = b"x" * (96 << 20)\nreturn len(big)', sessionId: 'conv-mem' });
      assert.equal(held.status, 'completed', JSON.stringify(held.error));
      await rt.execute({ code: 'return 1', sessionId: 'conv-small' });
      const job = await rt.execute({ code: 'import time\nwhile True: time.sleep(0.05)', sessionId: 'conv-mem', background: true });
      assert.deepEqual(job.value, { job: 1, status: 'running' }, JSON.stringify(job.error));
      const row = async (id: string) => (await rt.sessions.list()).find((r) => r.id === id)!;
      await waitFor(async () => (await row('conv-mem')).jobs === 1, { what: 'the job listed as running' });
      const [mem, small] = [await row('conv-mem'), await row('conv-small')];
      assert.ok(mem.memoryBytes! >= 96 << 20, `the tree holds the 96 MiB: ${mem.memoryBytes}`);
      assert.ok(small.memoryBytes! > 1 << 20 && small.memoryBytes! < 96 << 20, `the other session's tree is its own: ${small.memoryBytes}`);
      assert.equal(small.jobs, 0);
      const stopped = await rt.execute({ code: 'stop_job(1)', sessionId: 'conv-mem' });
      assert.equal(stopped.status, 'completed', JSON.stringify(stopped.error));
      await waitFor(async () => (await row('conv-mem')).jobs === 0, { what: 'the job listed as ended', timeoutMs: 60_000 });
    });
  it("journals a job's output for a client that attaches later (whole, in order, then live), and stops a job's tree when a client asks", async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const a = await attach(options(ws));
    const sid = 'conv-job-journal';
    assert.equal((await a.execute({ code: 'import os\nos.mkfifo("gate")', sessionId: sid })).status, 'completed');
    const code =
      "for i in range(1, 61):\n    print(f'line {i}', flush=True)\nopen('gate').read()\nfor i in range(61, 121):\n    print(f'line {i}', flush=True)";
    assert.deepEqual((await a.execute({ code, sessionId: sid, background: true })).value, { job: 1, status: 'running' });
    await a.dispose(); // the job goes on printing with no client attached
    const b = await attach(options(ws));
    const live: Array<JobChanged | JobOutput> = [];
    b.onJob((e) => e.session_id === sid && live.push(e));
    const text = (events: Array<JobChanged | JobOutput>) => events.map((e) => (e.type === 'codeact.job.output' ? e.delta : '')).join('');
    let before: Array<JobChanged | JobOutput> = [];
    await waitFor(async () => text((before = await b.sessions.jobEvents(sid))).includes('line 60\n'), {
      what: 'the first 60 lines in the journal',
      timeoutMs: 60_000,
    });
    assert.equal(before[0].type === 'codeact.job' && before[0].state, 'running');
    assert.equal(text(before), lines(1, 60), 'what it printed while no client was attached, whole and in order');
    // The gate opens: the rest comes live, then the end, which carries the whole output.
    assert.equal((await b.execute({ code: "open('gate', 'w').write('go')", sessionId: sid })).status, 'completed');
    await waitFor(() => live.some((e) => e.type === 'codeact.job' && e.state === 'done'), { what: "the job's end", timeoutMs: 60_000 });
    // Live from the attach on: what came before the gate may be live too (b attached while the job printed); the rest
    // is live only, whole and in order.
    assert.ok(text(live).endsWith(lines(61, 120)) && lines(1, 120).endsWith(text(live)), text(live).slice(0, 200));
    const end = live.find((e): e is JobChanged => e.type === 'codeact.job' && e.state === 'done')!;
    assert.equal(end.output, lines(1, 120));
    // Later, the journal holds its start and end only (the end carries the output).
    assert.deepEqual(
      (await b.sessions.jobEvents(sid)).map((e) => e.type === 'codeact.job' && e.state),
      ['running', 'done'],
    );
    // Stop through the host: the job's tree is gone, and its end says stopped.
    const mark = `codeact-host-job-${process.pid}`;
    const sleeper = `import subprocess, sys\nsubprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "${mark}"]).wait()`;
    assert.deepEqual((await b.execute({ code: sleeper, sessionId: sid, background: true })).value, { job: 2, status: 'running' });
    await waitFor(() => processesWithCmdline(mark).length === 1, { what: "the job's child", timeoutMs: 60_000 });
    await b.sessions.stopJob(sid, 2);
    await waitFor(() => processesWithCmdline(mark).length === 0, { what: "the job's child to be gone", timeoutMs: 60_000 });
    await waitFor(() => live.some((e) => e.type === 'codeact.job' && e.job === 2 && e.state === 'stopped'), { what: 'job 2 stopped', timeoutMs: 60_000 });
    await assert.rejects(b.sessions.stopJob(sid, 2), /There is no running background job 2 in this session/);
  });

  it('sends a running execution to the background through the host: its call resolves, the host journals the rest as the job, the next run waits, forks number past it', async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const a = await attach(options(ws));
    const sid = 'conv-detach';
    const fifo = path.join(ws, 'gate-detach');
    execFileSync('mkfifo', [fifo]);
    const live: Array<JobChanged | JobOutput> = [];
    a.onJob((e) => e.session_id === sid && live.push(e));
    const seen: string[] = [];
    const code = `for i in range(1, 4):\n    print(f'line {i}', flush=True)\nopen(${JSON.stringify(fifo)}).read()\nfor i in range(4, 7):\n    print(f'line {i}', flush=True)\n'the end'`;
    const foreground = a.execute(
      { code, sessionId: sid, itemId: 'exec-h' },
      { onEvent: (e) => void (e.type === 'codeact.output.delta' && seen.push(e.delta)) },
    );
    await waitFor(() => seen.join('').includes('line 3\n'), { what: 'the first lines', timeoutMs: 60_000 });
    assert.equal(await a.sessions.detach(sid, 'exec-h'), 1);
    const item = await foreground;
    assert.equal(item.status, 'completed');
    assert.match(JSON.stringify(item.outputs), /line 3\\n[^]*it goes on as background job 1/);
    const next = a.execute({ code: '7', sessionId: sid, itemId: 'exec-next' });
    // The next run has reached the host (it waits for the job) before the gate opens: else, on a busy machine, the job
    // could end before the run is even sent, and it would have nothing to wait for.
    await waitFor(async () => (await a.sessions.list()).some((s) => s.id === sid && s.running === 'exec-next'), {
      what: 'the next run to reach the host',
      timeoutMs: 60_000,
    });
    writeFileSync(fifo, 'go'); // the run, blocked at the gate, goes on
    await waitFor(() => live.some((e) => e.type === 'codeact.job' && e.state === 'done'), { what: "job 1's end", timeoutMs: 60_000 });
    const end = live.find((e): e is JobChanged => e.type === 'codeact.job' && e.state === 'done')!;
    assert.equal(end.job, 1);
    assert.match(end.message, /^Background job 1 \(execution \d+, sent to the background\) finished after .*; its value: "the end"$/);
    assert.equal(end.output, lines(1, 6));
    const after = await next;
    assert.equal(after.value, 7);
    assert.match(JSON.stringify(after.outputs), /waited .* for background job 1 \(a run sent to the background\) to finish/);
    assert.deepEqual(
      (await a.sessions.jobEvents(sid)).map((e) => e.type === 'codeact.job' && `${e.job} ${e.state}`),
      ['1 running', '1 done'],
    );
    assert.deepEqual(
      (await a.sessions.takeJobNotes(sid)).map((n) => n.job),
      [1],
    );
    assert.deepEqual((await a.execute({ code: '1', sessionId: sid, background: true })).value, { job: 2, status: 'running' });
  });

  it("relays a background job's tool call with the job's number: to a run of its session that takes tool calls, else to the client that started it while attached; with none, it fails at once", async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const a = await attach(options(ws));
    const seen: Array<number | undefined> = [];
    const onToolCall = async (call: ToolCallRequest) => {
      seen.push(call.job);
      return { v: (call.arguments as { n: number }).n * 2 };
    };
    const gate = (n: number) => JSON.stringify(path.join(ws, `gate-${n}`));
    const job = (n: number) =>
      `import os, asyncio\nwhile not os.path.exists(${gate(n)}): await asyncio.sleep(0.01)\ntry:\n    r = await call_tool("double", n=${n})\nexcept Exception as e:\n    r = str(e)\nr`;
    for (const n of [1, 2, 3]) {
      const started = await a.execute({ code: job(n), sessionId: 'conv-jt', background: true }, { onToolCall });
      assert.deepEqual(started.value, { job: n, status: 'running' });
    }
    type Notes = Awaited<ReturnType<HostedRuntime['sessions']['takeJobNotes']>>;
    // Job 3 calls while no run goes on: the client that started it (still attached) answers, told which job asks.
    writeFileSync(path.join(ws, 'gate-3'), '');
    let notes: Notes = [];
    await waitFor(async () => (notes = await a.sessions.takeJobNotes('conv-jt')).length > 0, { what: "job 3's note", timeoutMs: 60_000 });
    assert.match(notes[0].message, /^Background job 3 finished after .*; its value: \{"v": ?6\}/);
    assert.deepEqual(seen, [3]);
    // That client goes; another attaches but runs nothing: job 1's call is refused at once, in plain words.
    await a.dispose();
    const b = await attach(options(ws));
    writeFileSync(path.join(ws, 'gate-1'), '');
    await waitFor(async () => (notes = await b.sessions.takeJobNotes('conv-jt')).length > 0, { what: "job 1's note", timeoutMs: 60_000 });
    assert.match(
      notes[0].message,
      /^Background job 1 finished after .*; its value: "No CodeAct client takes this session's tool calls now, so background job 1's tool was not called/,
    );
    // Job 2 calls while a run of its session waits for it: that run's client answers.
    const waited = await b.execute({ code: `open(${gate(2)}, "w").close()\nwait_job(2, timeout=60)`, sessionId: 'conv-jt' }, { onToolCall });
    assert.equal(waited.status, 'completed', JSON.stringify(waited.error));
    assert.deepEqual((waited.value as { value: unknown }).value, { v: 4 });
    assert.deepEqual(seen, [3, 2]);
  });

  it('ends when asked: its socket, token and lock are gone', async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const rt = await attachSessionHost(options(ws));
    const pid = rt.connection.welcome.pid;
    rt.connection.end();
    await waitFor(() => !alive(pid), { what: 'the host to exit', timeoutMs: 60_000 });
    assertGone(ws);
    await rt.dispose();
  });

  it('keeps provider keys out of its environment', async () => {
    const ws = mkdtempSync(path.join(root, 'ws-'));
    const keys = Object.values(PROVIDERS).flatMap((p) => p.keyEnv);
    const withKeys = { ...env, ...Object.fromEntries(keys.map((k) => [k, `secret-${k}`])), CODEACT_JUPYTER_TOKEN: 'secret-jupyter' };
    const rt = await attach(options(ws, { env: withKeys }));
    const environ = readFileSync(`/proc/${rt.connection.welcome.pid}/environ`, 'utf8');
    assert.ok(keys.length >= 4);
    for (const k of [...keys, 'CODEACT_JUPYTER_TOKEN']) assert.ok(!environ.includes(k), `${k} is in the host's environment`);
    assert.ok(!environ.includes('secret-'), 'a key value is in the host environment');
    assert.match(environ, /(^|\0)PATH=/);
  });
});
