import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { SessionChanged } from '../../src/common/events';
import { runtimeConfigKey } from '../../src/core/runtime/factory';
import type { Runtime } from '../../src/core/runtime/types';
import { CONFIGURED_RUNTIMES, configuredRuntime } from '../../src/common/runtimes';
import { RuntimeCache, documentSessionId } from '../../src/vscode/runtimeCache';
import { FakeLog, FakeRuntimeApis, resolved } from './fakes';

function setup(values: Record<string, unknown> = {}) {
  const apis = new FakeRuntimeApis();
  const log = new FakeLog();
  const state = { values, token: undefined as string | undefined, folder: '/ws' as string | undefined, tokenReads: 0, trusted: true };
  const sessionEvents: SessionChanged[] = [];
  const sweeps: Runtime[] = [];
  const cache = new RuntimeCache({
    apis,
    settings: () => resolved(state.values, true).config,
    jupyterToken: async () => {
      state.tokenReads++;
      return state.token;
    },
    workspaceFolder: () => state.folder,
    log,
    onSessionEvent: (e) => sessionEvents.push(e),
    trusted: () => state.trusted,
    built: (r) => void sweeps.push(r),
  });
  return { apis, log, state, cache, sessionEvents, sweeps };
}

describe('vscode runtime cache (fake seams)', () => {
  it('builds nothing until asked, then one long-lived runtime for the workspace, reused while its settings stay', async () => {
    const { apis, cache, state, sweeps } = setup({ 'python.path': '/usr/bin/python3' });
    assert.equal(cache.current, undefined);
    assert.equal(apis.built.length, 0);
    const a = await cache.get();
    assert.equal(cache.current, a);
    const cfg = apis.last!.config;
    assert.equal(cfg.runtime, 'local');
    assert.equal(cfg.local?.python, '/usr/bin/python3');
    assert.equal(cfg.local?.sandbox?.workspace, '/ws');
    assert.equal(cfg.local?.zygote, true, 'a warm zygote (long-lived host)');
    assert.equal(cfg.local?.prestart, true);
    assert.equal(await cache.get(), a);
    // Settings the runtime is not made of (the model, approvals, the tools) do not rebuild it.
    state.values = { ...state.values, model: 'gpt-5-mini', 'approval.default': 'ask', 'approval.alwaysAllow': ['x'], tools: [] };
    assert.equal(await cache.get(), a);
    assert.equal(apis.built.length, 1);
    assert.deepEqual(sweeps, [a], 'the sweep of left sessions starts once, when the runtime is built');
    assert.equal(state.tokenReads, 0, 'the Jupyter token is read only for the Jupyter runtime');
  });

  for (const [key, value] of [
    ['python.path', '/opt/python'],
    ['python.preload', ['numpy']],
    ['session.policy', 'run'],
    ['session.idleMinutes', 3],
    ['sandbox.kind', 'none'],
    ['sandbox.network', true],
    ['sandbox.mountWorkspace', 'readwrite'],
    ['sandbox.limits', { memory: '1g' }],
  ] as const) {
    it(`rebuilds (and disposes the old one) when codeact.${key} changes`, async () => {
      const { apis, cache, state } = setup();
      const a = await cache.get();
      state.values = { [key]: value };
      const b = await cache.get();
      assert.notEqual(b, a);
      assert.equal(apis.built.length, 2);
      assert.equal(apis.built[0].disposed, 1);
      assert.equal(apis.built[1].disposed, 0);
      assert.equal(await cache.get(), b);
    });
  }

  it("rebuilds when the folder's interpreter changes: a .venv created, the Python extension's choice, the setting", async () => {
    const { apis, cache, state } = setup();
    const folder = mkdtempSync(path.join(tmpdir(), 'codeact-cache-venv-'));
    try {
      state.folder = folder;
      const a = await cache.get();
      assert.equal(apis.last!.config.local?.python, 'python3');
      assert.equal(await cache.get(), a);
      execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', path.join(folder, '.venv')]);
      const b = await cache.get();
      assert.notEqual(b, a, 'a .venv created in the folder rebuilds the runtime');
      assert.equal(apis.last!.config.local?.python, path.join(folder, '.venv', 'bin', 'python'));
      assert.equal(apis.built[0].disposed, 1);
      assert.equal(await cache.get(), b);
      apis.pythonExtension.set(folder, '/usr/bin/python3');
      const c = await cache.get();
      assert.notEqual(c, b);
      assert.equal(apis.last!.config.local?.python, '/usr/bin/python3', "the Python extension's environment comes before the .venv");
      state.values = { 'python.path': path.join(folder, '.venv', 'bin', 'python') };
      await cache.get();
      assert.equal(apis.last!.config.local?.python, path.join(folder, '.venv', 'bin', 'python'), 'the setting comes first');
      assert.equal(apis.built.length, 4);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('a Jupyter runtime is keyed by its URL, kernel and token (a new token takes effect on the next run)', async () => {
    const { apis, cache, state } = setup({ runtime: 'jupyter', 'jupyter.serverURL': 'http://127.0.0.1:8888' });
    state.token = 'one';
    const a = await cache.get();
    assert.equal(apis.last!.config.jupyter?.token, 'one');
    assert.equal(apis.last!.config.jupyter?.url, 'http://127.0.0.1:8888');
    assert.equal(await cache.get(), a);
    state.token = 'two';
    const b = await cache.get();
    assert.notEqual(b, a);
    assert.equal(apis.last!.config.jupyter?.token, 'two');
    state.values = { ...state.values, 'jupyter.kernelName': 'julia' };
    assert.notEqual(await cache.get(), b);
    assert.equal(apis.built.length, 3);
    assert.ok(state.tokenReads >= 3);
  });

  it('reads the runtime token only for a runtime whose catalogue row says its connection takes one', async () => {
    for (const runtime of CONFIGURED_RUNTIMES) {
      const { cache, state } = setup({ runtime, 'jupyter.serverURL': 'http://127.0.0.1:8888' });
      await cache.get();
      assert.equal(state.tokenReads > 0, configuredRuntime(runtime).token, runtime);
    }
  });

  it('passes warnings to the log and a toast, and session events to the session', async () => {
    const { apis, cache, log, sessionEvents } = setup();
    await cache.get();
    const local = apis.last!.config.local!;
    local.onWarning!('no sandbox here');
    local.log!('a line');
    local.onSessionEvent!({ type: 'codeact.session', session_id: 's', state: 'ended', message: 'bye' });
    assert.deepEqual(apis.toasts, ['CodeAct: no sandbox here']);
    assert.ok(log.lines.includes('warn no sandbox here'));
    assert.ok(log.lines.includes('info a line'));
    assert.equal(sessionEvents.length, 1);
  });

  it('dispose drops the runtime; the next get builds a new one', async () => {
    const { apis, cache } = setup();
    const a = await cache.get();
    await cache.dispose();
    assert.equal(cache.current, undefined);
    assert.equal(apis.built[0].disposed, 1);
    assert.notEqual(await cache.get(), a);
  });

  it('release (the extension goes): a runtime whose sessions can outlive the window lets go of them, left running; the others are disposed', async () => {
    const { apis, cache, state } = setup();
    let released = 0;
    apis.setup = (r) => {
      if (apis.built.length === 0) Object.assign(r.sessions, { handover: { idOf: () => undefined, adopt: () => {}, release: async () => void released++ } });
    };
    await cache.get();
    state.folder = '/other';
    await cache.get();
    await cache.release();
    assert.equal(released, 1);
    assert.equal(apis.built[0].disposed, 0, 'its kernels stay for the next window');
    assert.equal(apis.built[1].disposed, 1);
    assert.equal(cache.current, undefined);
  });

  it('with codeact.session.host "auto", a local runtime kept per conversation goes through the session host: the choice is part of the key', async () => {
    const { apis, cache, state } = setup({ 'session.host': 'auto', 'session.hostIdleMinutes': 5 });
    const a = await cache.get();
    assert.deepEqual(apis.last!.config.sessionHost, { workspace: '/ws', idleMs: 5 * 60_000 });
    state.values = { 'session.host': 'off' };
    const b = await cache.get();
    assert.notEqual(b, a, 'turning the host off rebuilds the runtime');
    assert.equal(apis.last!.config.sessionHost, undefined);
    for (const values of [
      { 'session.host': 'auto', 'session.policy': 'run' },
      { 'session.host': 'auto', runtime: 'jupyter', 'jupyter.serverURL': 'http://127.0.0.1:8888' },
    ]) {
      state.values = values;
      await cache.get();
      assert.equal(apis.last!.config.sessionHost, undefined, JSON.stringify(values));
    }
    state.values = { 'session.host': 'auto' };
    state.folder = undefined;
    await cache.get();
    assert.equal(apis.last!.config.sessionHost, undefined, 'no folder, no host (a host is named by its folder)');
  });

  it('never attaches to a session host in an untrusted workspace, a cached attachment included', async () => {
    const { apis, cache, state } = setup({ 'session.host': 'auto' });
    state.trusted = false;
    await assert.rejects(cache.get(), (e: Error) => e.name === 'UntrustedWorkspaceError' && /not trusted/.test(e.message));
    assert.equal(apis.built.length, 0, 'nothing attached');
    state.trusted = true;
    const a = await cache.get();
    state.trusted = false;
    await assert.rejects(cache.get(), /not trusted/, 'asked again on every attach');
    state.trusted = true;
    assert.equal(await cache.get(), a);
    state.values = { 'session.host': 'off' };
    state.trusted = false;
    assert.ok(await cache.get(), 'a runtime in this process is not an attach (the front doors gate running code)');
  });

  it("a document's session id is its own", () => {
    assert.equal(documentSessionId('file:///w/a.py'), 'doc:file:///w/a.py');
  });

  it('keys a runtime by its resolved config: key order and callbacks do not count, the Jupyter token is only hashed', () => {
    const a = runtimeConfigKey({
      runtime: 'jupyter',
      jupyter: { url: 'http://h', token: 'secret-token', log: () => {} },
      limits: { hidpi: true, maxDisplays: 3 },
    });
    const b = runtimeConfigKey({ limits: { maxDisplays: 3, hidpi: true }, jupyter: { token: 'secret-token', url: 'http://h' }, runtime: 'jupyter' });
    assert.equal(a, b);
    assert.doesNotMatch(a, /secret-token/);
    assert.notEqual(
      runtimeConfigKey({ runtime: 'jupyter', jupyter: { url: 'http://h', token: 'other' } }),
      runtimeConfigKey({ runtime: 'jupyter', jupyter: { url: 'http://h', token: 'secret-token' } }),
    );
    assert.notEqual(runtimeConfigKey({ runtime: 'local', local: { idleMs: 1 } }), runtimeConfigKey({ runtime: 'local', local: { idleMs: 2 } }));
  });
});
