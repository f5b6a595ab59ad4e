/**
 * Multi-root workspaces in the session over fakes of VS Code's seams: each folder's
 * settings and `codeact.tools` apply to that folder (command tools are real processes that run in it), each
 * folder has its own runtime (its workspace mount), a chat turn runs in the conversation's folder (the picked
 * one, else the active editor's, else the first), a conversation remembers it, and a folder that left the
 * workspace refuses the turn with what to do.
 */
import * as assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { FolderGoneError } from '../../src/vscode/chatFolder';
import { MAX_FOLDER_RUNTIMES, RuntimeCache } from '../../src/vscode/runtimeCache';
import { callTool, FakeLog, FakeRuntimeApis, harness, resolved, type Harness } from './fakes';

/** A command tool (a real python3 process) that says its working directory and which folder declared it. */
function whereTool(folder: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'where_am_i',
    description: `the ${folder} folder's tool`,
    command: ['python3', '-c', `import json, os, sys; json.dump({"declared_in": ${JSON.stringify(folder)}, "cwd": os.getcwd()}, sys.stdout)`],
    inputSchema: { type: 'object' },
    ...extra,
  };
}

describe('vscode multi-root: per-folder settings, tools and runtime (fake seams, real command tools)', () => {
  let h: Harness;
  let alpha: string;
  let beta: string;
  beforeEach(() => {
    h = harness();
    alpha = join(h.dir, 'alpha');
    beta = join(h.dir, 'beta');
    mkdirSync(alpha);
    mkdirSync(beta);
    h.apis.workspaceFolders = [
      { name: 'alpha', path: alpha },
      { name: 'beta', path: beta },
    ];
    h.apis.folderValues = {
      [alpha]: { tools: [whereTool('alpha'), { ...whereTool('alpha'), name: 'alpha_only' }], timeoutSeconds: 11 },
      [beta]: { tools: [whereTool('beta')], 'python.path': '/usr/bin/python3' },
    };
  });
  afterEach(async () => {
    await h.controller.shutdown();
    h.cleanup();
  });

  const run = async (o?: { document?: { uri: string; name: string; folder?: string } }) => {
    h.runtimes.setup = (r) => (r.script = callTool('where_am_i'));
    const item = await h.controller.runCode('r = await call_tool("where_am_i")', 'where', o?.document ? 'run_with_tools' : 'chat', o);
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    return item.value as { declared_in: string; cwd: string };
  };

  it("each folder's settings and tools apply to it; the chat's turns run in the picked folder, with its runtime", async () => {
    // No editor, no pick: the first folder.
    assert.deepEqual((await h.controller.hostState()).workspace, { folders: h.apis.workspaceFolders, folder: { name: 'alpha', path: alpha } });
    assert.deepEqual(
      h.controller
        .toolSet()
        .tools.map((t) => t.name)
        .sort(),
      ['alpha_only', 'where_am_i'],
    );
    assert.equal(h.controller.settings.timeoutMs, 11_000, "alpha's folder settings");

    h.controller.pickFolder(beta);
    const state = await h.controller.hostState();
    assert.deepEqual(state.workspace?.folder, { name: 'beta', path: beta });
    assert.deepEqual(
      state.tools.map((t) => `${t.name}: ${t.description}`),
      ["where_am_i: the beta folder's tool"],
    );
    assert.notEqual(h.controller.settings.timeoutMs, 11_000, "alpha's settings do not apply in beta");
    assert.deepEqual(await run(), { declared_in: 'beta', cwd: beta }, "beta's tool ran, in beta");
    const betaRuntime = h.runtimes.last!;
    assert.equal(betaRuntime.config.local?.sandbox?.workspace, beta, 'the runtime mounts beta');
    assert.equal(betaRuntime.config.local?.python, '/usr/bin/python3', "beta's interpreter setting");
    assert.equal(h.controller.currentConversation!.meta.workspace, beta, 'the conversation remembers beta');

    // Run with Tools on a file of alpha: alpha's tools and runtime, whatever the chat's folder.
    assert.deepEqual(await run({ document: { uri: 'file:///alpha/a.py', name: 'alpha/a.py', folder: alpha } }), { declared_in: 'alpha', cwd: alpha });
    assert.equal(h.runtimes.built.length, 2, 'one runtime per folder');
    assert.equal(h.runtimes.last!.config.local?.sandbox?.workspace, alpha);
    assert.equal(h.controller.currentConversation!.meta.workspace, alpha, "the document's conversation is alpha's");
    assert.equal(betaRuntime.disposed, 0, "beta's runtime is kept (its sessions live on)");
    // The document's session restarts in alpha's runtime; the chat's in beta's.
    assert.equal(await h.controller.restartSession('doc:file:///alpha/a.py'), true);
    assert.deepEqual(h.runtimes.last!.restarted, ['doc:file:///alpha/a.py']);
    assert.deepEqual(betaRuntime.restarted, []);
  });

  it("a new conversation takes the active editor's folder; a reopened one keeps its own", async () => {
    h.apis.editorFolder = beta;
    assert.equal((await h.controller.hostState()).workspace?.folder?.path, beta);
    assert.deepEqual(await run(), { declared_in: 'beta', cwd: beta });
    const first = h.controller.currentConversation!.id;
    h.controller.newConversation();
    h.apis.editorFolder = alpha;
    assert.equal((await h.controller.hostState()).workspace?.folder?.path, alpha, 'a new conversation follows the editor');
    assert.deepEqual(await run(), { declared_in: 'alpha', cwd: alpha });
    await h.controller.openConversation(first);
    assert.equal((await h.controller.hostState()).workspace?.folder?.path, beta, "reopened: its own folder, not the editor's");
    assert.deepEqual(await run(), { declared_in: 'beta', cwd: beta });
    // Saved in the transcript's meta: a new window reads it back.
    assert.equal(new TranscriptStore(h.controller.store.dir).open(first).meta.workspace, beta);
  });

  it('a conversation whose folder left the workspace refuses its turn, says what to do, and moves where the person picks', async () => {
    h.controller.pickFolder(beta);
    await run();
    const id = h.controller.currentConversation!.id;
    const built = h.runtimes.built.length;
    h.apis.workspaceFolders = [{ name: 'alpha', path: alpha }];
    const bar = (await h.controller.hostState()).workspace;
    assert.deepEqual(bar, { folders: [{ name: 'alpha', path: alpha }], folder: { name: 'beta', path: beta, gone: true } }, 'shown even with one folder left');
    const refused = (e: unknown) =>
      e instanceof FolderGoneError &&
      e.message.includes(`worked in the folder ${beta}, which is not open in this window`) &&
      /Add it back .*pick one of "alpha" in the panel's folder bar/.test(e.message);
    await assert.rejects(h.controller.runCode('print(1)', 'again', 'chat'), refused);
    await assert.rejects(h.controller.send('again'), refused);
    assert.equal(h.runtimes.built.length, built, 'nothing ran in another folder');
    assert.equal(h.controller.busy, false);
    assert.throws(() => h.controller.pickFolder(beta), /is not a folder of this workspace/);
    h.controller.pickFolder(alpha);
    assert.equal((await h.controller.hostState()).workspace, null, 'one folder, nothing gone: no bar');
    assert.deepEqual(await run(), { declared_in: 'alpha', cwd: alpha });
    assert.equal(h.controller.currentConversation!.id, id, 'the same conversation, moved');
    assert.equal(new TranscriptStore(h.controller.store.dir).open(id).meta.workspace, alpha);
  });

  it('one folder (or none): no folder bar, the folder is the one open', async () => {
    h.apis.workspaceFolders = [{ name: 'alpha', path: alpha }];
    assert.equal((await h.controller.hostState()).workspace, null);
    assert.deepEqual(await run(), { declared_in: 'alpha', cwd: alpha });
    h.controller.newConversation();
    h.apis.workspaceFolders = [];
    assert.equal((await h.controller.hostState()).workspace, null);
    assert.deepEqual(h.controller.toolSet(), { tools: [], errors: [] }, 'no folder: no folder tools');
  });

  it('the settings a folder may set for itself are resource-scoped in the manifest (VS Code ignores window-scoped ones of a folder)', () => {
    const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      contributes: { configuration: { properties: Record<string, { scope?: string }> } | Array<{ properties: Record<string, { scope?: string }> }> };
    };
    const c = manifest.contributes.configuration;
    const props = Object.assign({}, ...(Array.isArray(c) ? c : [c]).map((x) => x.properties)) as Record<string, { scope?: string }>;
    const perFolder = [
      'tools',
      'python.path',
      'python.preload',
      'runtime',
      'sandbox.kind',
      'sandbox.limits',
      'sandbox.mountWorkspace',
      'sandbox.network',
      'session.policy',
      'session.idleMinutes',
      'session.maxAlive',
      'timeoutSeconds',
      'jupyter.serverURL',
      'jupyter.kernelName',
      'approval.default',
      'approval.reviewCode',
    ];
    assert.deepEqual(
      perFolder.filter((k) => props[`codeact.${k}`]?.scope !== 'resource'),
      [],
    );
    assert.equal(props['codeact.approval.alwaysAllow'].scope, 'application', 'yours alone');
  });

  it('the runtime cache keeps one runtime per folder, at most MAX_FOLDER_RUNTIMES, the least recently used going first', async () => {
    const apis = new FakeRuntimeApis();
    const cache = new RuntimeCache({
      apis,
      settings: () => resolved({}, true).config,
      jupyterToken: async () => undefined,
      workspaceFolder: () => '/f0',
      log: new FakeLog(),
      onSessionEvent: () => {},
      trusted: () => true,
    });
    const a = await cache.get('/f0', 's0');
    for (let i = 1; i < MAX_FOLDER_RUNTIMES; i++) await cache.get(`/f${i}`, `s${i}`);
    assert.equal(await cache.get('/f0'), a, 'reused (and now the most recently used)');
    assert.equal(await cache.get(), a, "no folder given: the chat's");
    await cache.get('/new', 'sn');
    assert.equal(apis.built.length, MAX_FOLDER_RUNTIMES + 1);
    assert.equal(apis.built[1].disposed, 1, '/f1, the least recently used, went');
    assert.equal(apis.built[0].disposed, 0);
    assert.equal(cache.of('s0'), a, "a session is found in its folder's runtime");
    assert.equal(cache.all().length, MAX_FOLDER_RUNTIMES);
    await cache.disposeFolder('/f0');
    assert.equal(apis.built[0].disposed, 1);
    await cache.dispose();
    assert.ok(apis.built.every((r) => r.disposed === 1));
  });
});
