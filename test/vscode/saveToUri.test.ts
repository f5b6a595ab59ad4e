/**
 * "Save to Workspace…" of a hosted file and the notebook export write through saveToUri (src/vscode/saveToUri):
 * whole or not at all. A remote URI goes through VS Code's file system seam, here one over real files in
 * a temporary folder whose writes can break off half way (a connection lost mid-save): the target keeps
 * what it held, and no temporary is left. A local file goes through core/util/atomicFile, not the seam.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { saveToUri, type SaveFileSystem, type SaveUri } from '../../src/vscode/saveToUri';

/** A URI of a remote workspace, its files kept under `root` on this machine. */
class RemoteUri implements SaveUri {
  constructor(
    readonly root: string,
    readonly path: string,
    readonly scheme = 'vscode-remote',
  ) {}
  get fsPath(): string {
    return path.join(this.root, this.path);
  }
  with(change: { path: string }): RemoteUri {
    return new RemoteUri(this.root, change.path, this.scheme);
  }
}

/** The remote's file system: real files; `cutAfter` bytes into a write, the connection is lost (what was sent stays). */
function remoteFs(o: { cutAfter?: number } = {}): SaveFileSystem<RemoteUri> & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async writeFile(uri, content) {
      calls.push(`write ${path.basename(uri.path)}`);
      if (o.cutAfter !== undefined && o.cutAfter < content.length) {
        writeFileSync(uri.fsPath, content.subarray(0, o.cutAfter));
        throw new Error('The connection to the remote host was lost.');
      }
      writeFileSync(uri.fsPath, content);
    },
    async rename(source, target, options) {
      calls.push(`rename ${path.basename(source.path)} -> ${path.basename(target.path)} overwrite=${options.overwrite}`);
      renameSync(source.fsPath, target.fsPath);
    },
    async delete(uri) {
      calls.push(`delete ${path.basename(uri.path)}`);
      rmSync(uri.fsPath);
    },
  };
}

describe('saveToUri: a saved file is whole or not there', () => {
  let root: string;
  beforeEach(() => (root = mkdtempSync(path.join(tmpdir(), 'codeact-save-'))));
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const big = Buffer.alloc(9 * 1024 * 1024, 'a');

  it('a remote save broken off half way leaves the earlier file as it was, and no temporary', async () => {
    writeFileSync(path.join(root, 'report.csv'), 'the earlier version\n');
    const fs = remoteFs({ cutAfter: 1024 * 1024 });
    await assert.rejects(saveToUri(fs, new RemoteUri(root, '/report.csv'), big), /connection to the remote host was lost/);
    assert.equal(readFileSync(path.join(root, 'report.csv'), 'utf8'), 'the earlier version\n');
    assert.deepEqual(readdirSync(root), ['report.csv']);
    assert.match(fs.calls[0], /^write \.report\.csv\.\d+\.[A-Za-z0-9_-]+\.tmp$/, 'written under a hidden temporary name first');
    assert.match(fs.calls[1], /^delete \.report\.csv\./, 'the temporary is deleted');
  });

  it('a new remote file broken off half way is not there at all', async () => {
    await assert.rejects(saveToUri(remoteFs({ cutAfter: 1024 * 1024 }), new RemoteUri(root, '/out.ipynb'), big), /connection/);
    assert.deepEqual(readdirSync(root), []);
  });

  it('a remote save that completes: the temporary is renamed over the target', async () => {
    writeFileSync(path.join(root, 'report.csv'), 'old');
    const fs = remoteFs();
    await saveToUri(fs, new RemoteUri(root, '/report.csv'), big);
    assert.ok(readFileSync(path.join(root, 'report.csv')).equals(big));
    assert.deepEqual(readdirSync(root), ['report.csv']);
    assert.match(fs.calls[1], /^rename \.report\.csv\..*\.tmp -> report\.csv overwrite=true$/);
  });

  it('a local file is written by core/util/atomicFile, not through the seam', async () => {
    const fs = remoteFs();
    await saveToUri(fs, new RemoteUri(root, '/local.bin', 'file'), big);
    assert.ok(readFileSync(path.join(root, 'local.bin')).equals(big));
    assert.deepEqual(fs.calls, []);
    assert.deepEqual(readdirSync(root), ['local.bin']);
  });
});
