/**
 * Rich outputs on the Jupyter runtime, against a real jupyter-server: a figure that IPython's own inline
 * backend shows after the cell's code (a post-execute hook, after our result) is never lost, because the run
 * ends at the kernel's "idle" and not at its reply; files the code writes come back through the contents API.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { CodeInterpreterCallItem, DisplayOutput, FileOutput } from '../../src/common/events';
import { rasterImage } from '../../src/common/displays';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { findJupyterServer, startJupyterServer, SKIP_MESSAGE, type JupyterServer } from '../support/jupyterServer';

const available = !!findJupyterServer();
if (!available) console.log(`      ${SKIP_MESSAGE}`);

const displays = (item: CodeInterpreterCallItem) => item.outputs.filter((o): o is DisplayOutput => o.type === 'display');
const files = (item: CodeInterpreterCallItem) => item.outputs.filter((o): o is FileOutput => o.type === 'file');

(available ? describe : describe.skip)('Jupyter runtime: rich outputs (real jupyter-server)', function () {
  this.timeout(180_000);
  let server: JupyterServer;
  let rt: JupyterRuntime;

  before(async function () {
    this.timeout(60_000);
    server = await startJupyterServer();
    rt = new JupyterRuntime({ url: server.url, token: server.token, limits: { maxFileBytes: 1024 } });
  });

  after(async () => {
    await rt?.dispose();
    await server?.stop();
  });

  it("keeps the figure that IPython's inline backend shows after the cell, in 24 runs at once over 4 kernels", async () => {
    // `%matplotlib inline` puts IPython's post-execute hook back: it shows the figure after our result is
    // published, so only waiting for the kernel's idle status sees it (it was lost in 3 of 24 runs).
    const code = (i: number) => `%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([0, ${i}])\nprint("run ${i}")`;
    const runs: Promise<CodeInterpreterCallItem>[] = [];
    for (let i = 0; i < 24; i++) runs.push(rt.execute({ code: code(i), sessionId: `late-${i % 4}`, timeoutMs: 120_000 }));
    const items = await Promise.all(runs);
    const missing = items.map((item, i) => (displays(item).some((d) => rasterImage(d)) ? -1 : i)).filter((i) => i >= 0);
    for (const item of items) assert.equal(item.status, 'completed', JSON.stringify(item.error));
    assert.deepEqual(missing, [], `runs without their figure: ${missing.join(', ')}`);
  });

  it('copies the files the code wrote through the contents API, and names what it could not copy', async () => {
    const code = [
      'import os',
      'os.makedirs("rich_out/sub", exist_ok=True)',
      'open("rich_out/sub/small.csv", "w").write("a,b\\n1,2\\n")',
      'open("rich_out/big.bin", "wb").write(b"x" * 5000)',
    ].join('\n');
    const item = await rt.execute({ code, sessionId: 'files' });
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    const got = files(item);
    const small = got.find((f) => f.filename === 'rich_out/sub/small.csv');
    const big = got.find((f) => f.filename === 'rich_out/big.bin');
    assert.ok(small?.path, JSON.stringify(got));
    assert.equal(readFileSync(small.path, 'utf8'), 'a,b\n1,2\n');
    assert.equal(small.mime_type, 'text/csv');
    assert.ok(big && !big.path && /too large to copy out \(5000 bytes; the limit is 1 KiB a file/.test(big.note ?? ''), JSON.stringify(big));
    // Unchanged files are not listed again; a changed one is.
    const again = await rt.execute({ code: 'open("rich_out/sub/small.csv", "a").write("3,4\\n")', sessionId: 'files' });
    assert.deepEqual(
      files(again).map((f) => [f.filename, f.bytes]),
      [['rich_out/sub/small.csv', 12]],
    );
  });
});
