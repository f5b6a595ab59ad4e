import * as assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { writeFileAtomic, writeFileAtomicSync } from '../../src/core/util/atomicFile';

describe('atomic file writes', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'codeact-atomic-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('replaces a file whole and keeps its mode (0600 stays 0600)', () => {
    const file = path.join(dir, 'tokens.json');
    writeFileSync(file, 'old');
    chmodSync(file, 0o600);
    writeFileAtomicSync(file, 'new contents');
    assert.equal(readFileSync(file, 'utf8'), 'new contents');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir), ['tokens.json'], 'no temporary file left');
  });

  it('a writer that fails midway leaves the old file as it was and no temporary file', () => {
    const file = path.join(dir, 'out.bin');
    writeFileSync(file, 'complete');
    assert.throws(
      () =>
        writeFileAtomicSync(file, (fd) => {
          writeFileSync(fd, 'half');
          throw new Error('interrupted');
        }),
      /interrupted/,
    );
    assert.equal(readFileSync(file, 'utf8'), 'complete');
    assert.deepEqual(readdirSync(dir), ['out.bin']);
  });

  it('exclusive: an existing name is EEXIST and is not touched', () => {
    const file = path.join(dir, 'exec-1-out.csv');
    writeFileSync(file, 'theirs');
    assert.throws(
      () => writeFileAtomicSync(file, 'ours', { exclusive: true }),
      (e: NodeJS.ErrnoException) => e.code === 'EEXIST',
    );
    assert.equal(readFileSync(file, 'utf8'), 'theirs');
    assert.deepEqual(readdirSync(dir), ['exec-1-out.csv']);
  });

  it('the async form copies a file whole, and a missing source leaves nothing', async () => {
    const src = path.join(dir, 'src.bin');
    writeFileSync(src, Buffer.alloc(3 << 20, 7));
    const target = path.join(dir, 'copy.bin');
    await writeFileAtomic(target, { copyOf: src });
    assert.deepEqual(readFileSync(target), readFileSync(src));
    await assert.rejects(writeFileAtomic(path.join(dir, 'none.bin'), { copyOf: path.join(dir, 'missing') }), /ENOENT/);
    assert.deepEqual(readdirSync(dir).sort(), ['copy.bin', 'src.bin']);
  });
});
