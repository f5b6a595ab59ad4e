/**
 * Files out of the real local guest: the files an execution made or changed in its working directory
 * come back as "file" frames before "complete" (bounded: count, size, total, depth; no link followed,
 * a FIFO never blocks).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { plain, startGuest, type GuestHarness } from '../support/guestHarness';

const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('guest files out (frames of the real guest)', function () {
  this.timeout(60_000);
  let dir: string;
  let g: GuestHarness;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-files-test-'));
    writeFileSync(path.join(dir, 'unchanged.txt'), 'same\n');
    writeFileSync(path.join(dir, 'changed.txt'), 'old\n');
    // The plain interpreter on PATH is enough here (nothing but the standard library).
    g = await startGuest({ cwd: dir, python: 'python3' });
  });
  afterEach(async () => {
    await g?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports new and changed files (not unchanged ones), with their data, before the "complete" frame', async () => {
    const r = await g.run(
      [
        'open("out.csv", "w").write("a,b\\n1,2\\n")',
        'open("changed.txt", "a").write("new\\n")',
        'import os',
        'os.makedirs("charts/2024", exist_ok=True)',
        'open("charts/2024/q1.txt", "w").write("q1")',
      ].join('\n'),
    );
    // The top folder first, then by name.
    assert.deepEqual(r.files, [
      { t: 'file', run: 1, path: 'changed.txt', size: 8, data: b64('old\nnew\n') },
      { t: 'file', run: 1, path: 'out.csv', size: 8, data: b64('a,b\n1,2\n') },
      { t: 'file', run: 1, path: 'charts/2024/q1.txt', size: 2, data: b64('q1') },
    ]);
    assert.equal(r.frames.at(-1)!.t, 'complete');
    assert.equal(r.complete.files, 3);
    // The next run of the session lists only what it changed.
    const next = await g.run('open("out.csv", "a").write("3,4\\n")');
    assert.deepEqual(
      next.files.map((f) => [f.path, f.size]),
      [['out.csv', 12]],
    );
    assert.equal((await g.run('x = 1')).complete.files, 0);
  });

  it('never follows a link out of the folder, skips a FIFO without blocking, leaves hidden files and names that are not UTF-8 alone', async () => {
    const outside = mkdtempSync(path.join(tmpdir(), 'codeact-outside-'));
    try {
      writeFileSync(path.join(outside, 'secret.txt'), 'secret');
      const r = await g.run(
        [
          'import os',
          `os.symlink(${JSON.stringify(path.join(outside, 'secret.txt'))}, "link.txt")`,
          `os.symlink(${JSON.stringify(outside)}, "linked_dir")`,
          'os.mkfifo("pipe")',
          'open(".hidden", "w").write("h")',
          'os.makedirs("__pycache__"); open("__pycache__/m.pyc", "w").write("c")',
          'open(b"not utf-8 \\xff.txt", "w").write("?")',
          'open("real.txt", "w").write("ok")',
        ].join('\n'),
      );
      assert.equal(r.complete.ok, true, JSON.stringify(r.complete.error));
      assert.deepEqual(
        r.files.map((f) => f.path),
        ['real.txt'],
      );
      assert.ok(!JSON.stringify(r.files).includes(b64('secret')));
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('does not follow a folder swapped for a link after the listing (each step is opened without following links)', async () => {
    const outside = mkdtempSync(path.join(tmpdir(), 'codeact-outside-'));
    try {
      writeFileSync(path.join(outside, 'f.txt'), 'secret');
      mkdirSync(path.join(dir, 'sub'));
      // The folder listed as sub/ becomes a link out of the folder before the file is read.
      const r = await g.run(
        [
          'import os',
          'open("sub/f.txt", "w").write("mine")',
          'os.rename("sub", "sub_old")',
          `os.symlink(${JSON.stringify(outside)}, "sub")`,
          'import codeact_files',
          'print(codeact_files.read_file(os.getcwd(), "sub/f.txt", 100))',
        ].join('\n'),
      );
      assert.equal(plain(r.stdout), 'None\n');
      assert.deepEqual(
        r.files.map((f) => f.path),
        ['sub_old/f.txt'],
      );
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('bounds what is copied out: size per file, total per execution, count (with a note)', async () => {
    const r = await g.run(['open("big.bin", "wb").write(b"0" * 3000)', 'for i in range(6):', '    open(f"f{i}.txt", "wb").write(b"x" * 400)'].join('\n'), {
      files: { max_bytes: 1000, max_total: 1000, max_count: 6 },
    });
    const total = 'not copied out: the files of this execution passed 1,000 bytes in all';
    assert.deepEqual(
      r.files.map((f) => [f.path, f.size, f.data === null ? null : Buffer.from(f.data, 'base64').length, f.note ?? '']),
      [
        ['big.bin', 3000, null, 'too large to copy out: 2.9 KB; the limit is 1,000 bytes'],
        ['f0.txt', 400, 400, ''],
        ['f1.txt', 400, 400, ''],
        ['f2.txt', 400, null, total],
        ['f3.txt', 400, null, total],
        ['f4.txt', 400, null, total],
      ],
    );
    assert.equal(r.complete.files, 6);
    assert.equal(plain(r.stderr), '[codeact: 1 more changed file was not listed; the cap is 6 per execution]\n');
  });

  it('looks 4 folders deep', async () => {
    const r = await g.run('import os\nos.makedirs("a/b/c/d")\nopen("a/b/c/ok.txt", "w").write("depth 4")\nopen("a/b/c/d/deep.txt", "w").write("depth 5")');
    assert.deepEqual(
      r.files.map((f) => f.path),
      ['a/b/c/ok.txt'],
    );
  });

  it('visits at most 2,000 entries, silently', async () => {
    const r = await g.run('import os\nos.makedirs("many")\nfor i in range(2500):\n    open(f"many/{i:05}.txt", "w").write("x")', {
      files: { max_count: 5000 },
    });
    assert.ok(r.files.length > 0 && r.files.length < 2000, `${r.files.length} files`);
    assert.equal(plain(r.stderr), '');
  });
});
