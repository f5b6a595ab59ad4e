/**
 * The per-workspace tracker of the rewind slice (src/core/runtime/rewind/workspaceChanges.ts) on real files, without
 * a guest: the scans before and after a run, what a revert puts back, and the cases a review found: a file named
 * `__proto__`, a long multi-byte name, a scan cut short by the file budget, a revert while a run goes on.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { diffManifests } from '../../src/core/runtime/rewind/changeset';
import { FileStore } from '../../src/core/runtime/rewind/fileStore';
import { WorkspaceChanges } from '../../src/core/runtime/rewind/workspaceChanges';

const BUDGETS = { storeBytes: 64 << 20, maxFileBytes: 16 << 20, maxFiles: 1000 };

describe('rewind: what a run changed in a folder, and reverting it (no guest)', () => {
  let ws = '';
  let tracker: WorkspaceChanges | undefined;
  beforeEach(() => {
    ws = mkdtempSync(path.join(tmpdir(), 'codeact-wschanges-'));
  });
  afterEach(async () => {
    await tracker?.dispose();
    tracker = undefined;
    rmSync(ws, { recursive: true, force: true });
  });
  const file = (name: string) => path.join(ws, name);
  /** One "run": the scan before, `write` (the code), the scan after. */
  const run = async (t: WorkspaceChanges, id: string, write: () => void) => {
    await t.ready();
    write();
    return t.after(id);
  };

  it("the person's edits between runs are not the next run's; a file named __proto__ and a long multi-byte name are reverted, not removed", async () => {
    const long = '数据'.repeat(40) + '.txt'; // 244 bytes: a temporary name built from it would not fit
    writeFileSync(file('__proto__'), 'one');
    writeFileSync(file(long), 'first');
    tracker = new WorkspaceChanges(ws, BUDGETS);
    await tracker.warm();
    writeFileSync(file('mine.txt'), 'my notes'); // the person, before the run
    const changed = await run(tracker, 'x1', () => {
      writeFileSync(file('__proto__'), 'two!');
      writeFileSync(file(long), 'second');
    });
    assert.deepEqual(
      changed.changes.map((c) => `${c.kind} ${c.path}`),
      [`changed __proto__`, `changed ${long}`],
    );
    const done = await tracker.revert('x1');
    assert.deepEqual(done.failed, []);
    assert.equal(readFileSync(file('__proto__'), 'utf8'), 'one');
    assert.equal(readFileSync(file(long), 'utf8'), 'first');
    assert.equal(readFileSync(file('mine.txt'), 'utf8'), 'my notes');
  });

  it('a scan cut short by the file budget reports no made-up creations, and a revert removes nothing the run did not make', async () => {
    for (const n of ['a', 'b', 'c', 'd', 'e', 'f']) writeFileSync(file(n), n);
    tracker = new WorkspaceChanges(ws, { ...BUDGETS, maxFiles: 3 });
    const changed = await run(tracker, 'x1', () => unlinkSync(file('b')));
    assert.ok(changed.incomplete, 'the list says it is not complete');
    assert.ok(!changed.changes.some((c) => c.kind === 'created'), JSON.stringify(changed.changes));
    await tracker.revert('x1').catch(() => undefined);
    for (const n of ['a', 'c', 'd', 'e', 'f']) assert.ok(existsSync(file(n)), `${n} is still there`);
  });

  it('refuses to revert while a run goes on, and pairs many renames of the same content one to one', async () => {
    for (let i = 0; i < 200; i++) writeFileSync(file(`old${i}`), '');
    tracker = new WorkspaceChanges(ws, BUDGETS);
    const changed = await run(tracker, 'x1', () => {
      for (let i = 0; i < 200; i++) unlinkSync(file(`old${i}`));
      for (let i = 0; i < 200; i++) writeFileSync(file(`new${i}`), '');
    });
    assert.equal(changed.changes.length, 200);
    assert.ok(changed.changes.every((c) => c.kind === 'renamed'));
    assert.equal(new Set(changed.changes.map((c) => c.from)).size, 200, 'each old name once');
    await tracker.ready(); // a run starts
    await assert.rejects(tracker.revert('x1'), /Code is running/);
    await tracker.after('x2');
    const done = await tracker.revert('x1');
    assert.equal(done.written.length + done.removed.length, 400);
    assert.ok(existsSync(file('old7')) && !existsSync(file('new7')));
  });

  it('a revert removes the folders the run made, and keeps the ones that were there before, empty ones too', async () => {
    mkdirSync(file('results/plots'), { recursive: true });
    tracker = new WorkspaceChanges(ws, BUDGETS);
    await run(tracker, 'x1', () => {
      writeFileSync(file('results/plots/a.png'), 'png');
      mkdirSync(file('out/deep'), { recursive: true });
      writeFileSync(file('out/deep/x.txt'), 'x');
    });
    const done = await tracker.revert('x1');
    assert.deepEqual(done.removed, ['out/deep/x.txt', 'results/plots/a.png']);
    assert.ok(existsSync(file('results/plots')), 'the empty folder the person had stays');
    assert.ok(!existsSync(file('out')), 'the folder the run made goes');
  });

  it('files with the same bytes copied at once count once against the store budget', async () => {
    for (let i = 0; i < 16; i++) writeFileSync(file(`same${i}`), Buffer.alloc(1 << 20, 1));
    const dir = mkdtempSync(path.join(tmpdir(), 'codeact-store-'));
    try {
      const store = new FileStore(dir, { ...BUDGETS, storeBytes: 3 << 20 });
      const first = await store.scan(ws);
      assert.ok(Object.values(first.files).every((e) => e.digest !== null));
      writeFileSync(file('other'), Buffer.alloc(3 << 19, 2)); // 1.5 MB: fits beside the one 1 MB blob
      const next = await store.scan(ws, first);
      assert.notEqual(next.files.other.digest, null, next.files.other.why);
      assert.equal(await store.size(), (1 << 20) + (3 << 19));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('diffManifests: with the scan before incomplete, a path it lacks is not created; with the one after, not deleted', () => {
    const e = { ino: 1, size: 1, mtimeNs: '1', ctimeNs: '1', mode: 0o100644, digest: 'a'.repeat(64) };
    assert.deepEqual(diffManifests({ files: { a: e }, incomplete: 'cut' }, { files: { a: e, b: { ...e, ino: 2 } } }), []);
    assert.deepEqual(diffManifests({ files: { a: e, b: { ...e, ino: 2 } } }, { files: { a: e }, incomplete: 'cut' }), []);
  });
});
