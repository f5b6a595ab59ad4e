import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { STORE_MESSAGES, TranscriptStore, titleFrom } from '../../src/core/agent/transcriptStore';

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

  it('keeps a torn last line aside and cuts it off before the next append, so the next record is whole', () => {
    const store = new TranscriptStore(dir);
    const c = store.create({ title: 't' });
    c.appendItems([{ type: 'message', id: 'u1', role: 'user', text: 'kept' }]);
    appendFileSync(c.file, '{"t":1,"item":{"type":"mess');
    const again = store.open(c.id);
    assert.ok(again.notices.includes(STORE_MESSAGES.skipped(c.file, [3])), again.notices.join('\n'));
    again.appendItems([{ type: 'message', id: 'u2', role: 'user', text: 'next' }]);
    assert.match(again.notices.join(' '), /last record .* was cut off .* its 27 bytes are kept in /);
    const aside = readdirSync(dir).filter((n) => n.includes('.torn-'));
    assert.equal(readFileSync(path.join(dir, aside[0]), 'utf8'), '{"t":1,"item":{"type":"mess');
    assert.deepEqual(
      store.open(c.id).history.map((i) => i.id),
      ['u1', 'u2'],
    );
    assert.deepEqual(store.open(c.id).notices, []);
  });

  it('says which records in the middle it skipped (open() returns the notice)', () => {
    const store = new TranscriptStore(dir);
    const c = store.create({ title: 't' });
    c.appendItems([{ type: 'message', id: 'u1', role: 'user', text: 'a' }]);
    appendFileSync(c.file, 'not json\n');
    c.appendItems([{ type: 'message', id: 'u2', role: 'user', text: 'b' }]);
    const again = store.open(c.id);
    assert.deepEqual(
      again.history.map((i) => i.id),
      ['u1', 'u2'],
    );
    assert.equal(again.notices.length, 1);
    assert.equal(again.notices[0], STORE_MESSAGES.skipped(c.file, [3]));
  });

  it('a write that fails part way (the disk fills) is cut back to the last whole record and said once', function () {
    const mnt = mkdtempSync(path.join(tmpdir(), 'codeact-store-full-'));
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt]).status !== 0) {
      rmSync(mnt, { recursive: true, force: true });
      console.log('  cannot mount a tmpfs here: skipping the partial-write test');
      return this.skip();
    }
    try {
      const store = new TranscriptStore(mnt);
      const c = store.create({ title: 't' });
      c.appendItems([{ type: 'message', id: 'u1', role: 'user', text: 'kept' }]);
      const before = statSync(c.file).size;
      // Fill the disk, then free one page: the next record (32 KiB) is written in part, then ENOSPC.
      writeFileSync(path.join(mnt, 'page'), Buffer.alloc(4096));
      try {
        writeFileSync(path.join(mnt, 'filler'), Buffer.alloc(1 << 20));
      } catch (e) {
        assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC');
      }
      rmSync(path.join(mnt, 'page'));
      c.appendItems([{ type: 'message', id: 'u2', role: 'user', text: 'x'.repeat(32 * 1024) }]);
      assert.equal(statSync(c.file).size, before, 'cut back to the size before the write');
      const failure = c.takeFailure();
      assert.equal(failure!.message, STORE_MESSAGES.notSaved(c.file, 'the disk is full'));
      assert.equal(c.takeFailure(), undefined, 'said once');
      rmSync(path.join(mnt, 'filler'));
      const again = store.open(c.id);
      assert.deepEqual(again.notices, []);
      again.appendItems([{ type: 'message', id: 'u3', role: 'user', text: 'after' }]);
      assert.deepEqual(
        store.open(c.id).history.map((i) => i.id),
        ['u1', 'u3'],
      );
    } finally {
      spawnSync('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });

  it('refuses ids that could escape the folder', () => {
    assert.throws(() => new TranscriptStore(dir).open('../../etc/passwd'), /not a conversation id/);
  });
});
