/**
 * The extension on the session host (codeact.session.host "auto"): the controller over its fakes for VS Code,
 * but a real session host (the bundle's dist/sessionHost.js: run `node esbuild.mjs` first) and real python3
 * guests. A "reload" is the controller shut down (deactivate) and a new one made over the same folder,
 * conversations and workspace state.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { RuntimeConfig } from '../../src/core/runtime/factory';
import type { Runtime } from '../../src/core/runtime/types';
import { RUN_LEFT_RUNNING, type HostedRuntime } from '../../src/core/sessionHost/client';
import { everyHost, hostRunning, openRuntime } from '../../src/core/sessionHost/launch';
import { isAlive } from '../../src/core/util/processTree';
import { buildTranscript, type ExecView, type JobView, type TranscriptEvent } from '../../src/common/transcript';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { SESSION_GONE_NOTICE } from '../../src/vscode/conversationMemory';
import { RUN_ENDED_NOTE, runLeftRunning } from '../../src/vscode/reattach';
import { RuntimeCache } from '../../src/vscode/runtimeCache';
import { FakeLog, FakeRuntimeApis, harness, resolved, type Harness } from './fakes';
import { waitFor } from '../support/wait';
import { startOpenAIChatServer } from '../support/wire/openaiChat';
import { turn } from '../support/wire/turn';

const HOST_ENTRY = path.resolve(__dirname, '../../dist/sessionHost.js');
const SETTINGS = { 'session.host': 'auto', 'sandbox.kind': 'none' };

/** The runtime seam of the extension (runtimeCache.apis.ts) with this test's host folder and program. */
class HostApis extends FakeRuntimeApis {
  readonly attached: HostedRuntime[] = [];
  constructor(private readonly env: NodeJS.ProcessEnv) {
    super();
  }
  override async createRuntime(config: RuntimeConfig): Promise<Runtime> {
    const runtime = await openRuntime(config, { entry: HOST_ENTRY, env: this.env });
    if ('connection' in runtime) this.attached.push(runtime as HostedRuntime);
    return runtime;
  }
  override hostRunning(config: RuntimeConfig): boolean {
    return hostRunning(config, this.env);
  }
}

describe('the run a window left running (runLeftRunning)', () => {
  const item = (id: string, extra: object = {}) => ({
    type: 'code_interpreter_call' as const,
    id,
    status: 'interpreting' as const,
    code: 'x',
    runtime: 'local' as const,
    outputs: [],
    ...extra,
  });
  const added = (id: string): TranscriptEvent => ({ type: 'response.output_item.added', item: item(id) });
  const done = (id: string, message?: string): TranscriptEvent => ({
    type: 'response.output_item.done',
    item: item(id, { status: message ? 'failed' : 'completed', ...(message ? { error: { type: 'SessionHostError', message } } : {}) }),
  });
  it('is the last execution when a reload let go of it, or a crash cut it off before its end; none when it ended', () => {
    assert.equal(runLeftRunning([added('a'), done('a'), added('b'), done('b', RUN_LEFT_RUNNING)])?.id, 'b', 'let go of by a reload');
    assert.equal(
      runLeftRunning([added('a'), done('a'), added('b'), { type: 'codeact.turn.ended', turn_id: 't', status: 'stopped', interrupted: true }])?.id,
      'b',
      'cut off by a crash',
    );
    assert.equal(runLeftRunning([added('a'), done('a', RUN_LEFT_RUNNING), added('b'), done('b')]), undefined, 'an earlier one is not watched: the last ended');
    assert.equal(runLeftRunning([added('a'), done('a', 'NameError')]), undefined, 'a failed run ended');
    assert.equal(runLeftRunning([added('a'), done('a', RUN_LEFT_RUNNING), done('a')]), undefined, 'its end came later');
    assert.equal(runLeftRunning([]), undefined);
  });
});

describe('the extension on the session host (real host and guests)', function () {
  this.timeout(120_000);
  let root: string;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  let state: Map<string, unknown>;
  const windows: Harness[] = [];

  /** A window over the one folder (the same conversations and workspace state as the earlier ones). */
  const open = (settings: Record<string, unknown> = {}) => {
    const h = harness(
      { ...SETTINGS, ...settings },
      {
        dir,
        workspaceState: { get: <T>(k: string) => state.get(k) as T, update: async (k, v) => void state.set(k, v) },
        runtimes: new HostApis(env),
      },
    );
    windows.push(h);
    return h;
  };
  const hostPids = async () => {
    const hosts = await everyHost(env);
    for (const c of hosts) c.close();
    return hosts.map((c) => c.welcome.pid);
  };
  const endHosts = async () => {
    const hosts = await everyHost(env);
    for (const c of hosts) c.end();
    for (const c of hosts) c.close();
    await waitFor(() => hosts.every((c) => !isAlive(c.welcome.pid)), { what: 'the session hosts to end', timeoutMs: 60_000 });
  };

  before(() => {
    if (!existsSync(HOST_ENTRY)) throw new Error(`${HOST_ENTRY} is missing: run node esbuild.mjs first`);
    root = mkdtempSync(path.join(tmpdir(), 'codeact-reattach-'));
    mkdirSync(path.join(root, 'run'), { mode: 0o700 });
    env = { ...process.env, XDG_RUNTIME_DIR: path.join(root, 'run') };
  });
  beforeEach(() => {
    dir = mkdtempSync(path.join(root, 'window-'));
    mkdirSync(path.join(dir, 'workspace'));
    state = new Map();
  });
  afterEach(async () => {
    for (const h of windows.splice(0)) await h.controller.shutdown();
    await endHosts();
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('a reload reattaches the open conversation to its live session: not said to be gone, its variables shown, the next run reads x', async () => {
    const first = open();
    const defined = await first.controller.runCode('x = 41 + 1', 'define x');
    assert.equal(defined.status, 'completed', JSON.stringify(defined.error));
    const [pid] = await hostPids();
    assert.ok(pid, 'the run went through a session host');
    await first.controller.shutdown();
    assert.ok(isAlive(pid), 'the host and its session outlive the window');

    const second = open();
    const notice = await second.controller.restoredNotice();
    assert.equal(notice, undefined, `nothing is said to be gone: ${notice}`);
    const vars = await second.controller.refreshVariables();
    assert.deepEqual(
      vars.summary?.variables.map((v) => [v.name, v.summary]),
      [['x', '42']],
    );
    const read = await second.controller.runCode('return x', 'read x');
    assert.equal(read.status, 'completed', JSON.stringify(read.error));
    assert.equal(read.value, 42);
    assert.deepEqual(await hostPids(), [pid], 'the same host, no other started');
  });

  it('a reload while a run goes on lets go of it, not stops it: the card says so, and the next window reads what it assigned', async () => {
    const work = path.join(dir, 'workspace');
    const started = path.join(work, 'started');
    const go = path.join(work, 'go');
    const first = open();
    // The run waits for a file the test writes (a barrier, bounded), then assigns y.
    const code = `import os, time\nopen(${JSON.stringify(started)}, "w").close()\nfor _ in range(6000):\n    if os.path.exists(${JSON.stringify(go)}): break\n    time.sleep(0.05)\ny = 7\nprint("y assigned")`;
    const running = first.controller.runCode(code, 'long run');
    await waitFor(() => existsSync(started), { what: 'the run to start', timeoutMs: 60_000 });
    const [pid] = await hostPids();
    await first.controller.shutdown();
    const item = await running;
    assert.equal(item.status, 'failed');
    assert.equal(item.error?.message, RUN_LEFT_RUNNING, 'the card says the run goes on');
    assert.ok(isAlive(pid), 'the host still runs it');

    writeFileSync(go, '');
    const second = open();
    assert.equal(await second.controller.restoredNotice(), undefined, 'the session is not said to be gone');
    const read = await second.controller.runCode('return y', 'read y');
    assert.equal(read.status, 'completed', JSON.stringify(read.error));
    assert.equal(read.value, 7, 'the run went on to its end after the window let go');
  });

  it("a run going on across a reload is replayed into its card (whole, in order, then live), its end fills the card and is saved, and the model's next request is told its result once, even after another reload", async () => {
    const work = path.join(dir, 'workspace');
    const [started, mid, go1, go2] = ['started', 'mid', 'go1', 'go2'].map((f) => path.join(work, f));
    const wait = (f: string) => `for _ in range(6000):\n    if os.path.exists(${JSON.stringify(f)}): break\n    time.sleep(0.05)\n`;
    const lines = (a: number, b: number) => `for i in range(${a}, ${b}):\n    print(f"line {i}", flush=True)\n`;
    const touch = (f: string) => `open(${JSON.stringify(f)}, "w").close()\n`;
    // Lines 1-3 while the first window watches; 4-6 while no window is attached; 7-9 while the second one watches,
    // which takes its tool call too.
    const code = `import os, time\n${lines(1, 4)}${touch(started)}${wait(go1)}${lines(4, 7)}${touch(mid)}${wait(go2)}${lines(7, 10)}r = await call_tool("seven")\nreturn r["n"]`;
    const seven = {
      name: 'seven',
      description: 'Says 7.',
      command: ['python3', '-c', 'import json, sys; json.dump({"n": 7}, sys.stdout)'],
      inputSchema: { type: 'object' },
      approval: 'auto',
    };
    const first = open();
    const running = first.controller.runCode(code, 'long run');
    await waitFor(() => existsSync(started), { what: 'the run to start', timeoutMs: 60_000 });
    await first.controller.shutdown();
    const left = await running;
    assert.equal(left.error?.message, RUN_LEFT_RUNNING);
    writeFileSync(go1, '');
    await waitFor(() => existsSync(mid), { what: 'the run to print while no window is attached', timeoutMs: 60_000 });

    const server = await startOpenAIChatServer();
    try {
      const second = open({ provider: 'openai-compatible', baseURL: server.url, model: 'm', tools: [seven] });
      const events: TranscriptEvent[] = [];
      second.controller.onEvent((e) => events.push(e));
      assert.equal(await second.controller.restoredNotice(), undefined);
      const saved = [...second.controller.currentConversation!.events];
      const card = () => Object.values(buildTranscript([...saved, ...events]).items).find((i): i is ExecView => i.kind === 'exec' && i.id === left.id);
      const text = () => (card()?.output.chunks ?? []).map((c) => c.text).join('');
      assert.equal(card()?.status, 'failed', 'the card says the run was let go of');
      await second.controller.replayJobs();
      await waitFor(() => text().includes('line 6'), { what: 'what the run printed while no window was attached', timeoutMs: 60_000 });
      assert.equal(card()?.status, 'running', 'the card runs again');
      writeFileSync(go2, '');
      await waitFor(() => card()?.status === 'done', { what: 'the run to end in its card', timeoutMs: 60_000 });
      const expected = Array.from({ length: 9 }, (_, i) => `line ${i + 1}\n`).join('');
      assert.equal(text(), expected, 'every line, in order, once');
      assert.equal(card()?.error, undefined, JSON.stringify(card()?.error));
      assert.equal(card()?.value, 7, 'its tool call was taken by the window watching it');
      assert.deepEqual(
        card()?.tools.map((t) => [t.name, t.status]),
        [['seven', 'ok']],
      );
      const reopened = buildTranscript(second.controller.currentConversation!.events).items;
      const savedCard = Object.values(reopened).find((i): i is ExecView => i.kind === 'exec' && i.id === left.id);
      assert.equal(savedCard?.status, 'done', 'its end is saved in the conversation');
      assert.equal(savedCard?.value, 7);

      // Another reload before the next turn: the note is kept in the conversation, not lost with the window.
      await second.controller.shutdown();
      const third = open({ provider: 'openai-compatible', baseURL: server.url, model: 'm', tools: [seven] });
      assert.equal(await third.controller.restoredNotice(), undefined);
      server.push(turn().text('It finished.'), turn().text('Nothing more.'));
      await third.controller.send('Did it finish?');
      await third.controller.send('And now?');
      const [told, next] = server.turns.map((t) => JSON.stringify(t.body));
      assert.ok(told.includes(RUN_ENDED_NOTE), told);
      assert.match(told, /\\"value\\":7/);
      assert.match(told, /line 9/);
      assert.ok(!next.includes(RUN_ENDED_NOTE), 'told once');
    } finally {
      await server.close();
    }
  });

  it('opening from history a conversation whose session a running host kept reattaches it (not said to be gone)', async () => {
    const first = open();
    assert.equal((await first.controller.runCode('x = 5', 'define x')).status, 'completed');
    const id = first.controller.currentConversation!.id;
    await first.controller.shutdown();
    state.delete('codeact.openConversation');

    const second = open();
    assert.equal(second.controller.currentConversation, undefined, 'nothing open at start');
    const { notice } = await second.controller.openConversation(id);
    assert.equal(notice, undefined, `said: ${notice}`);
    assert.deepEqual(
      (await second.controller.refreshVariables()).summary?.variables.map((v) => v.name),
      ['x'],
    );
    const read = await second.controller.runCode('return x', 'read x');
    assert.equal(read.value, 5, JSON.stringify(read.error));
  });

  it("a background job of a conversation the chat left ends in that conversation's file (not running forever when opened again), and a notification says so", async () => {
    const server = await startOpenAIChatServer();
    try {
      const first = open({ provider: 'openai-compatible', baseURL: server.url, model: 'm' });
      const sleeper = 'import time\nwhile True:\n    time.sleep(0.05)';
      server.push(turn().call('execute_tool_code', { code: sleeper, background: true }), turn().text('Started.'));
      await first.controller.send('Start the sleeper');
      const id = first.controller.currentConversation!.id;
      const jobs = (events: readonly TranscriptEvent[]) => {
        const t = buildTranscript(events);
        return (t.jobs ?? []).map((k) => t.items[k] as JobView).map((j) => [j.job, j.status]);
      };
      assert.deepEqual(jobs(first.controller.currentConversation!.events), [[1, 'running']]);

      // A new conversation: the left one's session ends, and its job with it, while another conversation is open.
      first.controller.newConversation();
      const store = new TranscriptStore(path.join(dir, 'conversations'));
      await waitFor(() => jobs(store.open(id).events)[0]?.[1] !== 'running', { what: "the job's end saved in its conversation", timeoutMs: 60_000 });
      const [ended] = jobs(store.open(id).events);
      assert.equal(ended[0], 1);
      assert.notEqual(ended[1], 'running');
      const apis = first.apis as unknown as { infos: string[] };
      assert.equal(apis.infos.length, 1, apis.infos.join('\n'));
      assert.match(apis.infos[0], /^CodeAct: Background job 1 .*\(conversation "Start the sleeper"\)$/);
      const { conversation } = await first.controller.openConversation(id);
      assert.deepEqual(jobs(conversation.events), [ended], 'opened again, it shows the job ended, once');
    } finally {
      await server.close();
    }
  });

  it('a session truly gone (its host ended) is said plainly, and coming back starts no host to find out', async () => {
    const first = open();
    assert.equal((await first.controller.runCode('x = 1', 'define x')).status, 'completed');
    await first.controller.shutdown();
    await endHosts();

    const second = open();
    const notice = await second.controller.restoredNotice();
    assert.ok((notice ?? '').includes(SESSION_GONE_NOTICE), notice ?? '(no notice)');
    assert.deepEqual(await hostPids(), [], 'no host was started by coming back');
    const read = await second.controller.runCode('return x', 'read x');
    assert.equal(read.status, 'failed', 'x is gone');
    assert.match(read.error?.message ?? '', /x/);
  });

  it("an untrusted workspace never attaches, not even to a running host that has the conversation's session", async () => {
    const first = open();
    const convo = (await first.controller.runCode('x = 1', 'define x')) && first.controller.currentConversation!;
    await first.controller.shutdown();
    const apis = new HostApis(env);
    let trusted = false;
    const cache = new RuntimeCache({
      apis,
      settings: () => resolved(SETTINGS, true).config,
      jupyterToken: async () => undefined,
      workspaceFolder: () => path.join(dir, 'workspace'),
      log: new FakeLog(),
      onSessionEvent: () => {},
      trusted: () => trusted,
    });
    assert.equal(await cache.live(path.join(dir, 'workspace'), convo.id), undefined);
    await assert.rejects(cache.get(undefined, convo.id), /not trusted/);
    assert.equal(apis.attached.length, 0, 'no connection was made');
    trusted = true;
    const runtime = await cache.live(path.join(dir, 'workspace'), convo.id);
    assert.ok(runtime?.sessions.has(convo.id), 'trusted, the same cache attaches and finds the session');
    await cache.release();
  });
});
