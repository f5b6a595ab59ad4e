/**
 * Rewind (issue 35) for files: the content-addressed store kept by stat scans, on real files in temporary
 * folders. The scenario (a rewritten out.csv, a deleted data.csv, a side.txt written by a
 * subprocess, an untouched 50 MB file), renames, modes, links, FIFOs, a swapped folder, the budgets; as root
 * and as an unprivileged user.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { FileChange } from '../../src/common/rewind';
import { diffManifests } from '../../src/core/runtime/rewind/changeset';
import { FileStore, type StoreBudgets } from '../../src/core/runtime/rewind/fileStore';
import { TESTER, cannotSwitchUser, runScriptInChild } from '../security/support/asUser';

const REPO = path.resolve(__dirname, '..', '..');
const MB = 1 << 20;
const BUDGETS: StoreBudgets = { storeBytes: 1024 * MB, maxFileBytes: 100 * MB, maxFiles: 20_000 };

/** The scenario, as a script (run here in a child as the unprivileged user); prints what it saw. */
const SCENARIO = String.raw`
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { diffManifests } from '${REPO}/src/core/runtime/rewind/changeset';
import { FileStore } from '${REPO}/src/core/runtime/rewind/fileStore';
(async () => {
  const base = fs.mkdtempSync(path.join(tmpdir(), 'codeact-rewind-'));
  const root = path.join(base, 'ws');
  fs.mkdirSync(root);
  const sha = (p: string) => createHash('sha256').update(fs.readFileSync(p)).digest('hex');
  fs.writeFileSync(path.join(root, 'data.csv'), 'a,b\n1,2\n');
  fs.writeFileSync(path.join(root, 'out.csv'), 'x,y\n3,4\n');
  fs.writeFileSync(path.join(root, 'big.bin'), Buffer.alloc(50 << 20, 7));
  const store = new FileStore(path.join(base, 'store'), { storeBytes: 1 << 30, maxFileBytes: 100 << 20, maxFiles: 20000 });
  const before = { out: sha(path.join(root, 'out.csv')), data: sha(path.join(root, 'data.csv')) };
  const big0 = fs.statSync(path.join(root, 'big.bin'), { bigint: true });
  const baseline = await store.scan(root);
  fs.writeFileSync(path.join(root, 'out.csv'), 'x,y\n5,6\n');
  fs.unlinkSync(path.join(root, 'data.csv'));
  execFileSync('python3', ['-c', 'open("side.txt", "w").write("side")'], { cwd: root });
  const after = await store.scan(root, baseline);
  const changes = diffManifests(baseline, after);
  const res = await store.restore(root, baseline, changes.map((c) => c.path));
  const big1 = fs.statSync(path.join(root, 'big.bin'), { bigint: true });
  const out = {
    uid: process.getuid!(),
    changes: changes.map((c) => [c.kind, c.path]),
    res,
    outBack: sha(path.join(root, 'out.csv')) === before.out,
    dataBack: sha(path.join(root, 'data.csv')) === before.data,
    side: fs.existsSync(path.join(root, 'side.txt')),
    bigSame: big0.ino === big1.ino && big0.mtimeNs === big1.mtimeNs,
    storeMode: (fs.statSync(path.join(base, 'store')).mode & 0o777).toString(8),
  };
  fs.rmSync(base, { recursive: true, force: true });
  console.log(JSON.stringify(out));
})();
`;

const timings: Record<string, number[]> = {};
async function timed<T>(what: string, work: Promise<T>): Promise<T> {
  const t0 = performance.now();
  const r = await work;
  (timings[what] ??= []).push(Math.round(performance.now() - t0));
  return r;
}

const sha = (p: string) => createHash('sha256').update(fs.readFileSync(p)).digest('hex');
const kinds = (changes: FileChange[]) => changes.map((c) => (c.kind === 'renamed' ? [c.kind, c.path, c.from] : [c.kind, c.path]));

describe('rewind file store: scans, changesets and restores on real files', function () {
  this.timeout(120_000);
  let base: string;
  let root: string;
  let storeDir: string;
  const write = (rel: string, data: string | Buffer) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), data);
  };

  beforeEach(() => {
    base = fs.mkdtempSync(path.join(tmpdir(), 'codeact-rewind-'));
    root = path.join(base, 'ws');
    storeDir = path.join(base, 'store');
    fs.mkdirSync(root);
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));
  after(() => console.log(`    rewind file store timings (ms): ${JSON.stringify(timings)}`));

  for (const sameSize of [true, false]) {
    it(`the issue's scenario (out.csv rewritten ${sameSize ? 'keeping its size' : 'with another size'}): exactly changed out.csv, deleted data.csv, created side.txt; the restore gives the bytes back and leaves the 50 MB file alone`, async () => {
      write('data.csv', 'id,value\n1,10\n2,20\n');
      write('out.csv', 'id,total\n1,100\n');
      write('big.bin', Buffer.alloc(50 * MB, 0x5a));
      const want = { data: sha(path.join(root, 'data.csv')), out: sha(path.join(root, 'out.csv')) };
      const big0 = fs.statSync(path.join(root, 'big.bin'), { bigint: true });
      const store = new FileStore(storeDir, BUDGETS);
      const baseline = await timed('baseline scan (50 MB)', store.scan(root));
      assert.deepEqual(Object.keys(baseline.files).sort(), ['big.bin', 'data.csv', 'out.csv']);
      assert.equal(baseline.incomplete, undefined);
      const unchanged = await timed('rescan, nothing changed', store.scan(root, baseline));
      assert.deepEqual(diffManifests(baseline, unchanged), []);

      // Turn 2: the code rewrites out.csv, deletes data.csv, and a subprocess writes side.txt.
      write('out.csv', sameSize ? 'id,total\n1,999\n' : 'id,total\n1,100\n2,200\n');
      fs.unlinkSync(path.join(root, 'data.csv'));
      execFileSync('python3', ['-c', 'open("side.txt", "w").write("written by a subprocess\\n")'], { cwd: root });
      const after = await timed('rescan after turn 2', store.scan(root, baseline));
      const changes = diffManifests(baseline, after);
      assert.deepEqual(kinds(changes), [
        ['deleted', 'data.csv'],
        ['changed', 'out.csv'],
        ['created', 'side.txt'],
      ]);
      assert.ok(changes.every((c) => !c.notRestorable));
      assert.equal(after.files['big.bin'], baseline.files['big.bin'], 'the untouched file is not hashed again');

      const res = await timed(
        'restore of 3 paths',
        store.restore(
          root,
          baseline,
          changes.map((c) => c.path),
        ),
      );
      assert.deepEqual(res, { written: ['data.csv', 'out.csv'], removed: ['side.txt'], failed: [] });
      assert.equal(sha(path.join(root, 'out.csv')), want.out);
      assert.equal(sha(path.join(root, 'data.csv')), want.data);
      assert.ok(!fs.existsSync(path.join(root, 'side.txt')));
      assert.deepEqual(fs.readdirSync(root).sort(), ['big.bin', 'data.csv', 'out.csv'], 'no temporary file is left');
      const big1 = fs.statSync(path.join(root, 'big.bin'), { bigint: true });
      assert.equal(big1.ino, big0.ino);
      assert.equal(big1.mtimeNs, big0.mtimeNs);
      assert.deepEqual(diffManifests(baseline, await store.scan(root, after)), [], 'a scan after the restore sees the baseline again');
    });
  }

  it('a tree of 2,000 files: a rescan with nothing changed hashes nothing; edits, a chmod, a rename, deletions and a new folder are restored', async () => {
    for (let i = 0; i < 2000; i++) write(`d${i % 40}/f${i}.csv`, Buffer.alloc(256 * (1 + (i % 64)), i % 251));
    const store = new FileStore(storeDir, BUDGETS);
    const baseline = await timed('baseline scan (2,000 files)', store.scan(root));
    assert.equal(Object.keys(baseline.files).length, 2000);
    const same = await timed('rescan, 2,000 files, nothing changed', store.scan(root, baseline));
    assert.ok(
      Object.entries(same.files).every(([p, e]) => e === baseline.files[p]),
      'nothing was hashed again',
    );
    for (let i = 0; i < 10; i++) {
      const fd = fs.openSync(path.join(root, `d${i % 40}/f${i}.csv`), 'r+');
      fs.writeSync(fd, Buffer.from('X'.repeat(16))); // in place, same size
      fs.closeSync(fd);
    }
    fs.chmodSync(path.join(root, 'd11/f11.csv'), 0o600);
    fs.renameSync(path.join(root, 'd12/f12.csv'), path.join(root, 'd12/renamed.csv'));
    for (let i = 13; i < 18; i++) fs.unlinkSync(path.join(root, `d${i % 40}/f${i}.csv`));
    for (let i = 0; i < 20; i++) write(`outputs/o${i}.txt`, `out ${i}`);
    const after = await timed('rescan, 2,000 files, after the changes', store.scan(root, baseline));
    const changes = diffManifests(baseline, after);
    const count = (k: string) => changes.filter((c) => c.kind === k).length;
    assert.deepEqual([count('changed'), count('mode'), count('renamed'), count('deleted'), count('created')], [10, 1, 1, 5, 20]);
    const res = await timed(
      'restore, 2,000 files, 37 paths',
      store.restore(
        root,
        baseline,
        changes.flatMap((c) => (c.from ? [c.from, c.path] : [c.path])),
      ),
    );
    assert.deepEqual([res.written.length, res.removed.length, res.failed], [17, 21, []]);
    assert.deepEqual(diffManifests(baseline, await store.scan(root)), []);
    assert.ok(!fs.existsSync(path.join(root, 'outputs')));
    assert.deepEqual(fs.readdirSync(path.join(storeDir, 'tmp')), [], 'no temporary file is left in the store');
  });

  it('tracks files named like Object properties (constructor, __proto__, hasOwnProperty)', async () => {
    write('constructor', 'c');
    write('__proto__', 'p');
    const store = new FileStore(storeDir, BUDGETS);
    const baseline = await store.scan(root);
    assert.deepEqual(Object.keys(baseline.files).sort(), ['__proto__', 'constructor']);
    fs.unlinkSync(path.join(root, '__proto__'));
    write('hasOwnProperty', 'h');
    const changes = diffManifests(baseline, await store.scan(root, baseline));
    assert.deepEqual(kinds(changes), [
      ['deleted', '__proto__'],
      ['created', 'hasOwnProperty'],
    ]);
    const res = await store.restore(root, JSON.parse(JSON.stringify(baseline)) as typeof baseline, ['__proto__', 'hasOwnProperty']);
    assert.deepEqual(res, { written: ['__proto__'], removed: ['hasOwnProperty'], failed: [] });
  });

  it('keeps the store private (folders 0700, blobs 0600), serves blobs by digest and counts its bytes', async () => {
    write('a.txt', 'alpha');
    write('b.txt', 'alpha'); // the same content is kept once
    const store = new FileStore(path.join(storeDir, 'deep', 'er'), BUDGETS);
    const m = await store.scan(root);
    const blob = store.blob(m.files['a.txt'].digest!);
    assert.ok(blob);
    assert.equal(fs.readFileSync(blob, 'utf8'), 'alpha');
    assert.equal(fs.statSync(blob).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.join(storeDir, 'deep', 'er')).mode & 0o777, 0o700);
    assert.equal(fs.statSync(path.dirname(blob)).mode & 0o777, 0o700);
    assert.equal(await store.size(), 5);
    assert.equal(store.blob('0'.repeat(64)), null);
    assert.equal(store.blob('../../etc/passwd'), null);
    // A rescan with nothing changed copies nothing: a blob removed behind its back stays gone.
    fs.unlinkSync(blob);
    await store.scan(root, m);
    assert.equal(store.blob(m.files['a.txt'].digest!), null);
    const res = await store.restore(root, { files: {} }, []);
    assert.deepEqual(res, { written: [], removed: [], failed: [] });
    fs.unlinkSync(path.join(root, 'a.txt'));
    const lost = await store.restore(root, m, ['a.txt']);
    assert.deepEqual(lost.failed, [{ path: 'a.txt', why: 'its content is no longer in the rewind store' }]);
  });

  it('sees a rename, a chmod and a new folder; the restore puts back the old name and mode and removes the new folder', async () => {
    write('src/report.csv', 'r1\nr2\n');
    write('keep/x.txt', 'x');
    write('script.sh', '#!/bin/sh\necho hi\n');
    fs.chmodSync(path.join(root, 'script.sh'), 0o755);
    const store = new FileStore(storeDir, BUDGETS);
    const baseline = await store.scan(root);
    fs.renameSync(path.join(root, 'src/report.csv'), path.join(root, 'src/final.csv'));
    fs.chmodSync(path.join(root, 'script.sh'), 0o600);
    write('outputs/deep/o1.txt', 'o1');
    write('outputs/o2.txt', 'o2');
    const after = await store.scan(root, baseline);
    const changes = diffManifests(baseline, after);
    assert.deepEqual(kinds(changes), [
      ['created', 'outputs/deep/o1.txt'],
      ['created', 'outputs/o2.txt'],
      ['mode', 'script.sh'],
      ['renamed', 'src/final.csv', 'src/report.csv'],
    ]);
    const mode = changes.find((c) => c.kind === 'mode')!;
    assert.deepEqual([mode.before?.mode, mode.after?.mode], [0o755, 0o600]);

    const paths = changes.flatMap((c) => (c.from ? [c.from, c.path] : [c.path]));
    const res = await store.restore(root, baseline, paths);
    assert.deepEqual(res.failed, []);
    assert.deepEqual(res.written, ['script.sh', 'src/report.csv']);
    assert.deepEqual(res.removed, ['outputs/deep/o1.txt', 'outputs/o2.txt', 'src/final.csv']);
    assert.equal(fs.statSync(path.join(root, 'script.sh')).mode & 0o7777, 0o755);
    assert.equal(fs.readFileSync(path.join(root, 'src/report.csv'), 'utf8'), 'r1\nr2\n');
    assert.ok(!fs.existsSync(path.join(root, 'outputs')), 'the folder the code made is gone');
    assert.ok(fs.existsSync(path.join(root, 'src')), 'a folder of the baseline stays');
    assert.deepEqual(diffManifests(baseline, await store.scan(root)), []);
  });

  it('restores a file whose folder was deleted (the folder is made again) and drops setuid/setgid bits', async () => {
    write('a/b/c.txt', 'c');
    fs.chmodSync(path.join(root, 'a/b/c.txt'), 0o6755);
    const store = new FileStore(storeDir, BUDGETS);
    const baseline = await store.scan(root);
    fs.rmSync(path.join(root, 'a'), { recursive: true });
    const res = await store.restore(root, baseline, ['a/b/c.txt']);
    assert.deepEqual(res, { written: ['a/b/c.txt'], removed: [], failed: [] });
    assert.equal(fs.statSync(path.join(root, 'a/b/c.txt')).mode & 0o7777, 0o755);
  });

  it('skips a FIFO (never opened: the scan does not hang) and a symbolic link to /etc/passwd', async () => {
    write('real.txt', 'real');
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    fs.symlinkSync('/etc/passwd', path.join(root, 'passwd'));
    fs.mkdirSync(path.join(root, 'sub'));
    fs.symlinkSync('/etc', path.join(root, 'sub', 'etc'));
    const store = new FileStore(storeDir, BUDGETS);
    const m = await store.scan(root);
    assert.deepEqual(Object.keys(m.files), ['real.txt']);
    const passwd = createHash('sha256').update(fs.readFileSync('/etc/passwd')).digest('hex');
    assert.equal(store.blob(passwd), null, '/etc/passwd was not copied into the store');
  });

  it('never writes through a parent folder swapped for a symbolic link, and refuses paths outside the root', async () => {
    write('sub/a.txt', 'a');
    const store = new FileStore(storeDir, BUDGETS);
    const baseline = await store.scan(root);
    const elsewhere = fs.mkdtempSync(path.join(base, 'elsewhere-'));
    fs.rmSync(path.join(root, 'sub'), { recursive: true });
    fs.symlinkSync(elsewhere, path.join(root, 'sub'));
    const res = await store.restore(root, baseline, ['sub/a.txt', '/etc/passwd', '../x', 'sub/../y']);
    assert.deepEqual(res.written, []);
    assert.deepEqual(res.removed, []);
    assert.deepEqual(
      res.failed.map((f) => f.path),
      ['../x', '/etc/passwd', 'sub/../y', 'sub/a.txt'],
    );
    assert.match(res.failed.find((f) => f.path === 'sub/a.txt')!.why, /symbolic link/);
    assert.deepEqual(fs.readdirSync(elsewhere), [], 'nothing was written in the folder the link points to');
    // A file the code replaced by a link is put back as a file; the link's target is untouched.
    fs.unlinkSync(path.join(root, 'sub'));
    write('sub/a.txt', 'a');
    const again = await store.scan(root);
    fs.writeFileSync(path.join(elsewhere, 'target'), 'target');
    fs.unlinkSync(path.join(root, 'sub/a.txt'));
    fs.symlinkSync(path.join(elsewhere, 'target'), path.join(root, 'sub/a.txt'));
    const back = await store.restore(root, again, ['sub/a.txt']);
    assert.deepEqual(back.written, ['sub/a.txt']);
    assert.ok(fs.lstatSync(path.join(root, 'sub/a.txt')).isFile());
    assert.equal(fs.readFileSync(path.join(elsewhere, 'target'), 'utf8'), 'target');
  });

  it('budgets: past maxFiles the manifest says it is incomplete; top-level names in skip are not walked', async () => {
    for (let i = 0; i < 12; i++) write(`f${String(i).padStart(2, '0')}.txt`, `file ${i}`);
    write('.git/HEAD', 'ref');
    const m = await new FileStore(storeDir, { ...BUDGETS, maxFiles: 10 }).scan(root, undefined, ['.git']);
    assert.equal(Object.keys(m.files).length, 10);
    assert.equal(m.incomplete, 'more than 10 files: the rest are not tracked');
    assert.ok(!Object.keys(m.files).some((p) => p.startsWith('.git')));
    // Paths an incomplete scan did not reach are not reported as deleted.
    const full = await new FileStore(storeDir, BUDGETS).scan(root);
    assert.deepEqual(diffManifests(full, m), []);
  });

  it('budgets: a file over maxFileBytes is not kept (digest null, why) and its change is marked not restorable', async () => {
    write('small.txt', 'small');
    write('large.bin', Buffer.alloc(2048, 1));
    const store = new FileStore(storeDir, { ...BUDGETS, maxFileBytes: 1024 });
    const baseline = await store.scan(root);
    assert.equal(baseline.files['large.bin'].digest, null);
    assert.equal(baseline.files['large.bin'].why, 'larger than the 1024 bytes limit');
    assert.equal(await store.size(), 5);
    write('large.bin', Buffer.alloc(2048, 2));
    fs.unlinkSync(path.join(root, 'small.txt'));
    const changes = diffManifests(baseline, await store.scan(root, baseline));
    assert.deepEqual(kinds(changes), [
      ['changed', 'large.bin'],
      ['deleted', 'small.txt'],
    ]);
    assert.equal(changes[0].notRestorable, 'larger than the 1024 bytes limit');
    assert.equal(changes[1].notRestorable, undefined);
    const res = await store.restore(root, baseline, ['large.bin', 'small.txt']);
    assert.deepEqual(res.failed, [{ path: 'large.bin', why: 'larger than the 1024 bytes limit' }]);
    assert.deepEqual(res.written, ['small.txt']);
    assert.equal(fs.readFileSync(path.join(root, 'large.bin'))[0], 2, 'a file that cannot be restored is left as it is');
  });

  it('budgets: past storeBytes a file is not kept (the store is full), unless its bytes are there already', async () => {
    write('a.bin', Buffer.alloc(600, 1));
    write('b.bin', Buffer.alloc(600, 2));
    write('c.bin', Buffer.alloc(600, 1)); // the same bytes as a.bin
    const store = new FileStore(storeDir, { ...BUDGETS, storeBytes: 1000 });
    const m = await store.scan(root);
    // Files are kept as they come (the scan reads several at once): whichever 600 bytes came first fill the store.
    // Either a.bin's bytes (c.bin's too, the same) or b.bin's are kept, never both, and the other is said not kept.
    const [kept, full] = m.files['a.bin'].digest ? [['a.bin', 'c.bin'], ['b.bin']] : [['b.bin'], ['a.bin', 'c.bin']];
    for (const f of kept) assert.ok(m.files[f].digest, `${f} kept: ${JSON.stringify(m.files)}`);
    assert.equal(m.files['c.bin'].digest, m.files['a.bin'].digest, 'the same bytes, the same answer');
    for (const f of full) {
      assert.equal(m.files[f].digest, null);
      assert.equal(m.files[f].why, 'the rewind store is full (1000 bytes)');
    }
    assert.equal(await store.size(), 600);
    fs.unlinkSync(path.join(root, full[0]));
    assert.equal(diffManifests(m, await store.scan(root, m))[0].notRestorable, 'the rewind store is full (1000 bytes)');
  });

  it('restore never removes or writes over a folder the code put where a file was', async () => {
    write('data.csv', 'd');
    const store = new FileStore(storeDir, BUDGETS);
    const baseline = await store.scan(root);
    fs.unlinkSync(path.join(root, 'data.csv'));
    write('data.csv/inner.txt', 'inner');
    write('made/x.txt', 'x');
    fs.mkdirSync(path.join(root, 'made/x.txt.d')); // keeps made/ from being empty
    const res = await store.restore(root, baseline, ['data.csv', 'made/x.txt']);
    assert.deepEqual(res.failed, [{ path: 'data.csv', why: 'a folder is there now' }]);
    assert.deepEqual(res.removed, ['made/x.txt']);
    assert.equal(fs.readFileSync(path.join(root, 'data.csv/inner.txt'), 'utf8'), 'inner');
    assert.ok(fs.existsSync(path.join(root, 'made/x.txt.d')), 'a folder that is not empty stays');
  });

  it('diffManifests: pairs each deletion with one creation of the same kept bytes; compares files not kept by their stat key', () => {
    const e = (digest: string | null, more: Partial<{ mode: number; size: number; mtimeNs: string; why: string }> = {}) => ({
      ino: 1,
      size: 1,
      mtimeNs: '1',
      ctimeNs: '1',
      mode: 0o100644,
      digest,
      ...more,
    });
    const before = { files: { 'a.txt': e('aa'), 'b.txt': e('aa'), 'big.bin': e(null, { why: 'too big' }), 'huge.bin': e(null, { why: 'too big' }) } };
    const after = {
      files: { 'c.txt': e('aa'), 'b.txt': e('aa'), 'big.bin': e(null, { mode: 0o100600 }), 'huge.bin': e(null, { mtimeNs: '2' }), 'd.txt': e('aa') },
    };
    const changes = diffManifests(before, after);
    assert.deepEqual(kinds(changes), [
      ['mode', 'big.bin'],
      ['renamed', 'c.txt', 'a.txt'],
      ['created', 'd.txt'],
      ['changed', 'huge.bin'],
    ]);
    assert.deepEqual(
      changes.map((c) => c.notRestorable),
      ['too big', undefined, undefined, 'too big'],
    );
    assert.deepEqual(changes[0].after, { digest: null, mode: 0o600, size: 1 });
    assert.deepEqual(diffManifests(after, after), []);
  });

  it(`the issue's scenario as the unprivileged user (${TESTER.name})`, async function () {
    const why = cannotSwitchUser();
    if (why) {
      console.log(`    skipped: ${why}`);
      this.skip();
    }
    const out = await runScriptInChild<{
      uid: number;
      changes: string[][];
      res: { written: string[]; removed: string[]; failed: unknown[] };
      outBack: boolean;
      dataBack: boolean;
      side: boolean;
      bigSame: boolean;
      storeMode: string;
    }>(SCENARIO, {}, TESTER, 'the scenario as tester');
    assert.equal(out.uid, TESTER.uid);
    assert.deepEqual(out.changes, [
      ['deleted', 'data.csv'],
      ['changed', 'out.csv'],
      ['created', 'side.txt'],
    ]);
    assert.deepEqual(out.res, { written: ['data.csv', 'out.csv'], removed: ['side.txt'], failed: [] });
    assert.deepEqual([out.outBack, out.dataBack, out.side, out.bigSame, out.storeMode], [true, true, false, true, '700']);
  });
});
