/**
 * The host state is computed on change, not on read: the settings, the tool set and key presence are
 * resolved once per change event of the seams (settings, trust, folders; the secret storage) and kept, and
 * a page is posted the state only when it differs from the last one it was sent.
 */
import * as assert from 'node:assert/strict';
import { ChangeCache } from '../../src/vscode/changeCache';
import { StatePosts } from '../../src/vscode/hostStateCache';
import { harness, lmToolDecl, type Harness } from './fakes';

describe('vscode host state, computed on change (fake seams)', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.controller.shutdown();
    h?.cleanup();
  });

  it('reading the state again resolves nothing again: no settings, no key presence, no tool set', async () => {
    h = harness({ provider: 'openai', tools: [lmToolDecl('search')] });
    h.lm.registered = [{ name: 'vendor_search', description: '' }];
    const first = await h.controller.hostState();
    const resolved = h.apis.resolved;
    const asked = h.secrets.asked;
    const tools = h.controller.toolSet();
    assert.ok(resolved > 0 && asked > 0, 'the first read resolves them');
    for (let i = 0; i < 5; i++) {
      assert.deepEqual(await h.controller.hostState(), first);
      void h.controller.settings;
    }
    assert.equal(h.apis.resolved, resolved, 'settings resolved once');
    assert.equal(h.secrets.asked, asked, 'key presence asked once');
    assert.equal(h.controller.toolSet(), tools, 'the same tool set, not loaded again');
  });

  it('a settings change is resolved again, reaches the state, and tells the state listeners', async () => {
    h = harness({ provider: 'openai', model: 'one' });
    assert.equal((await h.controller.hostState()).model, 'one');
    const resolved = h.apis.resolved;
    let told = 0;
    h.controller.onState(() => told++);
    h.apis.values = { provider: 'openai', model: 'two', tools: [lmToolDecl('search')] };
    h.lm.registered = [{ name: 'vendor_search', description: '' }];
    assert.equal(told, 1, 'the change event fires the state');
    const state = await h.controller.hostState();
    assert.equal(state.model, 'two');
    assert.deepEqual(
      state.tools.map((t) => t.name),
      ['search'],
      'the tool set follows the settings',
    );
    assert.ok(h.apis.resolved > resolved, 'resolved again after the change');
  });

  it('Workspace Trust and the folders are settings changes too', async () => {
    h = harness({ tools: [lmToolDecl('search')] });
    h.lm.registered = [{ name: 'vendor_search', description: '' }];
    assert.equal((await h.controller.hostState()).tools.length, 1);
    h.apis.trusted = false;
    const untrusted = await h.controller.hostState();
    assert.deepEqual([untrusted.trusted, untrusted.tools.length], [false, 0]);
    h.apis.workspaceFolders = [];
    assert.equal((await h.controller.hostState()).workspace, null);
  });

  it("a key stored or deleted is asked again on the secret storage's change, and reaches the state", async () => {
    h = harness({ provider: 'openai' });
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const hasKey = async () => (await h.controller.hostState()).providers.find((p) => p.id === 'openai')?.hasKey;
      assert.equal(await hasKey(), false);
      let told = 0;
      h.controller.onState(() => told++);
      h.secrets.keys.openai = 'sk-test';
      assert.equal(told, 1);
      assert.equal(await hasKey(), true);
      const asked = h.secrets.asked;
      await hasKey();
      assert.equal(h.secrets.asked, asked, 'not asked again without a change');
      delete h.secrets.keys.openai;
      assert.equal(await hasKey(), false);
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });

  it('a language-model tool registered later (VS Code says nothing) still reaches the tool set', async () => {
    h = harness({ tools: [lmToolDecl('search')] });
    assert.deepEqual(h.controller.toolSet().tools, []);
    h.lm.registered = [{ name: 'vendor_search', description: '' }];
    assert.deepEqual(
      h.controller.toolSet().tools.map((t) => t.name),
      ['search'],
    );
  });

  it('after shutdown the change events are no longer heard', async () => {
    h = harness();
    await h.controller.shutdown();
    assert.equal(h.apis.settingsChanged.size, 0);
  });
});

describe('StatePosts: a page is posted the state only when it changed', () => {
  it('an unchanged state is not posted again; a changed one is', async () => {
    const posts = new StatePosts<{ n: number }>();
    assert.deepEqual(await posts.initial(async () => ({ n: 1 })), { n: 1 });
    assert.equal(await posts.changed(async () => ({ n: 1 })), undefined, 'the same as the page has');
    assert.deepEqual(await posts.changed(async () => ({ n: 2 })), { n: 2 });
    assert.equal(await posts.changed(async () => ({ n: 2 })), undefined);
    assert.deepEqual(await posts.initial(async () => ({ n: 2 })), { n: 2 }, 'a page that reloaded is always given it');
  });

  it('an older read that finishes after a newer one is dropped', async () => {
    const posts = new StatePosts<{ n: number }>();
    let release!: () => void;
    const slow = posts.changed(() => new Promise((r) => (release = () => r({ n: 1 }))));
    assert.deepEqual(await posts.changed(async () => ({ n: 2 })), { n: 2 });
    release();
    assert.equal(await slow, undefined);
    let late!: () => void;
    const init = posts.initial(() => new Promise((r) => (late = () => r({ n: 3 }))));
    assert.deepEqual(await posts.changed(async () => ({ n: 4 })), { n: 4 });
    late();
    assert.deepEqual(await init, { n: 4 }, 'a reloaded page gets the newest state');
  });
});

describe('ChangeCache', () => {
  it('computes a key once until cleared; a throw is not kept', () => {
    let computed = 0;
    const c = new ChangeCache<string, number>((k) => {
      computed++;
      if (k === 'bad') throw new Error('no');
      return k.length;
    }, 2);
    assert.equal(c.get('ab'), 2);
    assert.equal(c.get('ab'), 2);
    assert.equal(computed, 1);
    assert.throws(() => c.get('bad'));
    assert.throws(() => c.get('bad'));
    assert.equal(computed, 3);
    c.clear();
    c.get('ab');
    assert.equal(computed, 4);
  });
});
