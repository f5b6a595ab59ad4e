import * as assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { TranscriptStore, titleFrom } from '../../src/core/agent/transcriptStore';

describe('transcript store', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'codeact-store-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('persists events and history items as JSON lines, lists, reopens, and deletes conversations', () => {
    const store = new TranscriptStore(dir);
    const c = store.create({ title: titleFrom('First question\nwith detail'), provider: 'openai', model: 'gpt-5' });
    c.appendEvent({ type: 'response.output_text.delta', item_id: 'm1', delta: 'Hé' });
    c.appendItems([{ type: 'message', id: 'u1', role: 'user', text: 'First question' }]);
    c.update({ containerId: 'cntr_1' });
    c.flush();
    const again = store.open(c.id);
    assert.equal(again.meta.title, 'First question');
    assert.equal(again.meta.containerId, 'cntr_1');
    assert.deepEqual(again.events, [{ type: 'response.output_text.delta', item_id: 'm1', delta: 'Hé' }]);
    assert.equal(again.history.length, 1);
    assert.deepEqual(
      store.list().map((s) => [s.id, s.turns]),
      [[c.id, 1]],
    );
    store.delete(c.id);
    assert.deepEqual(store.list(), []);
  });

  it('does not write live output deltas or displays (the finished item holds the output, every image once)', () => {
    const store = new TranscriptStore(dir);
    const c = store.create({ title: 't' });
    c.appendEvent({ type: 'codeact.output.delta', item_id: 'x', stream: 'stdout', delta: 'hello\n' });
    c.appendEvent({ type: 'codeact.output.display', item_id: 'x', output: { type: 'display', data: { 'image/png': 'AAAA', 'text/plain': '<Figure>' } } });
    c.appendEvent({ type: 'response.output_text.delta', item_id: 'm', delta: 'hi' });
    assert.equal(c.events.length, 3, 'kept in memory for the panel');
    c.flush();
    assert.deepEqual(
      store.open(c.id).events.map((e) => e.type),
      ['response.output_text.delta'],
    );
  });

  it('survives a torn last line after a crash', () => {
    const store = new TranscriptStore(dir);
    const c = store.create({ title: 't' });
    c.appendItems([{ type: 'message', id: 'u1', role: 'user', text: 'kept' }]);
    appendFileSync(c.file, '{"t":1,"item":{"type":"mess');
    assert.equal(store.open(c.id).history.length, 1);
  });

  it('refuses ids that could escape the folder', () => {
    assert.throws(() => new TranscriptStore(dir).open('../../etc/passwd'), /not a conversation id/);
  });
});
