import * as assert from 'node:assert/strict';
import { lmToolSource } from '../../src/vscode/lmToolSource';
import { FakeLmTools } from './fakes';

describe('vscode lmTool source (fake seam)', () => {
  it('names the registered tools when the declared one is missing', () => {
    const lm = new FakeLmTools();
    assert.equal(lmToolSource({ name: 'search', lmTool: 'vendor_search' }, 'auto', lm), 'no language-model tool named "vendor_search" is registered');
    lm.registered = [
      { name: 'zeta', description: '' },
      { name: 'alpha', description: '' },
    ];
    assert.equal(
      lmToolSource({ name: 'search', lmTool: 'vendor_search' }, 'auto', lm),
      'no language-model tool named "vendor_search" is registered (registered: alpha, zeta)',
    );
  });

  it('takes the description and schema from the registered tool unless declared, and the default approval', () => {
    const lm = new FakeLmTools();
    lm.registered = [{ name: 'vendor_search', description: 'Searches.', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } }];
    const t = lmToolSource({ name: 'search', lmTool: 'vendor_search' }, 'ask', lm);
    assert.ok(typeof t !== 'string');
    assert.equal(t.name, 'search');
    assert.equal(t.description, 'Searches.');
    assert.deepEqual(t.inputSchema, { type: 'object', properties: { q: { type: 'string' } } });
    assert.equal(t.approval, 'ask');
    assert.equal(t.expose, 'code');
    assert.equal(t.source, 'lmTool');

    const d = lmToolSource(
      { name: 'search', lmTool: 'vendor_search', description: 'Mine.', inputSchema: { type: 'object' }, approval: 'deny', expose: 'both' },
      'ask',
      lm,
    );
    assert.ok(typeof d !== 'string');
    assert.deepEqual([d.description, d.inputSchema, d.approval, d.expose], ['Mine.', { type: 'object' }, 'deny', 'both']);

    lm.registered = [{ name: 'vendor_search', description: 'Searches.' }];
    const n = lmToolSource({ name: 'search', lmTool: 'vendor_search' }, 'auto', lm);
    assert.ok(typeof n !== 'string');
    assert.deepEqual(n.inputSchema, { type: 'object' });
  });

  it("invokes the registered tool by its own name with the run's signal; JSON text is parsed, other text kept", async () => {
    const lm = new FakeLmTools();
    lm.registered = [{ name: 'vendor_search', description: '' }];
    const t = lmToolSource({ name: 'search', lmTool: 'vendor_search' }, 'auto', lm);
    assert.ok(typeof t !== 'string');
    const signal = new AbortController().signal;
    lm.reply = () => '{"hits":[1,2]}';
    assert.deepEqual(await t.invoke({ q: 'x' }, { signal, callId: 'c1' }), { hits: [1, 2] });
    lm.reply = () => 'plain words';
    assert.equal(await t.invoke({ q: 'y' }, { signal, callId: 'c2' }), 'plain words');
    assert.deepEqual(
      lm.calls.map((c) => [c.name, c.input, c.signal === signal]),
      [
        ['vendor_search', { q: 'x' }, true],
        ['vendor_search', { q: 'y' }, true],
      ],
    );
  });
});
