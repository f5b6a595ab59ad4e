/**
 * The kernel side of the guest library in a REAL ipykernel (test/support/kernelHarness.ts): display()
 * in the namespace is ours and gives the local guest's bundles, published as display_data in order
 * with the streams (summary and the execute_result flag in metadata.codeact); our matplotlib backend,
 * figures left open shown inside run() before the result; the files the run wrote, listed.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { imageSize } from '../../src/common/displays';
import { DEBIAN_PYTHON } from '../support/guestHarness';
import { KernelHarness, type KernelMessage } from '../support/kernelHarness';

let available = existsSync(DEBIAN_PYTHON);
if (available) {
  try {
    execFileSync(DEBIAN_PYTHON, ['-c', 'import ipykernel, jupyter_client'], { stdio: 'ignore' });
  } catch {
    available = false;
    console.log('  python3-ipykernel is not installed: skipping the kernel display tests');
  }
}

const shape = (m: KernelMessage) =>
  m.type === 'stream'
    ? `${m.content.name}:${m.content.text}`
    : `${m.type}:${Object.keys(m.content.data ?? {})
        .sort()
        .join(',')}`;

/**
 * The messages' shapes, adjacent stream messages of one stream merged: ipykernel flushes a stream when it likes
 * (print's "end" and its newline may come as two messages on a busy machine); the order is what counts.
 */
function shapes(messages: KernelMessage[]): string[] {
  const merged: KernelMessage[] = [];
  for (const m of messages) {
    const last = merged.at(-1);
    if (m.type === 'stream' && last?.type === 'stream' && last.content.name === m.content.name)
      merged[merged.length - 1] = { ...last, content: { ...last.content, text: last.content.text + m.content.text } };
    else merged.push(m);
  }
  return merged.map(shape);
}

(available ? describe : describe.skip)('guest library in a real ipykernel', function () {
  this.timeout(120_000);
  let k: KernelHarness;
  before(async () => {
    k = new KernelHarness();
    await k.start();
  });
  after(async () => k?.close());

  it('publishes display() with the same bundles as the local guest, in order with the streams', async () => {
    const r = await k.run(
      [
        'class A:',
        '    def _repr_html_(self): return "<b>A</b>"',
        '    def __repr__(self): return "A()"',
        'print("before")',
        'display(A())',
        'print("after")',
        'h = display("x", display_id="d1")',
        'h.update("y")',
      ].join('\n'),
    );
    assert.equal(r.result.ok, true, JSON.stringify(r.result.error));
    assert.deepEqual(shapes(r.messages), [
      'stdout:before\n',
      'display_data:text/html,text/plain',
      'stdout:after\n',
      'display_data:text/plain',
      'update_display_data:text/plain',
    ]);
    assert.deepEqual(r.messages[1].content.data, { 'text/html': '<b>A</b>', 'text/plain': 'A()' });
    assert.deepEqual(r.messages[3].content.transient, { display_id: 'd1' });
    assert.deepEqual(r.messages[4].content.transient, { display_id: 'd1' });
  });

  it('shows a non-JSON last expression as a display flagged metadata.codeact.result, a DataFrame with its summary', async () => {
    const r = await k.run('import pandas as pd\npd.DataFrame({"a": [1, 2]})');
    assert.equal(r.result.value, 'null');
    assert.equal(r.messages.length, 1);
    const m = r.messages[0];
    assert.equal(m.type, 'display_data');
    assert.deepEqual(Object.keys(m.content.data).sort(), ['text/html', 'text/plain']);
    assert.equal(m.content.metadata.codeact.result, true);
    assert.match(m.content.metadata.codeact.summary, /^DataFrame: 2 rows × 1 columns\nColumns: a \(int64\)\n/);
  });

  it('uses our backend: plt.show() and the figures left open are shown inside run(), before the result', async () => {
    const r = await k.run(
      [
        'import matplotlib.pyplot as plt',
        'print(plt.get_backend())',
        'plt.plot([1, 2]); plt.show()',
        'fig, ax = plt.subplots(); ax.plot([2, 1])',
        'print("end")',
      ].join('\n'),
      { display: { hidpi: true } },
    );
    assert.equal(r.result.ok, true, JSON.stringify(r.result.error));
    assert.deepEqual(shapes(r.messages), [
      'stdout:module://codeact_mpl\n',
      'display_data:image/png,text/plain',
      'stdout:end\n',
      'display_data:image/png,text/plain',
    ]);
    const d = r.messages[1].content;
    const s = imageSize('image/png', d.data['image/png'])!;
    assert.deepEqual(d.metadata['image/png'], { width: Math.floor(s.width / 2), height: Math.floor(s.height / 2) });
    // Nothing is left for ipykernel's inline backend to show after the cell.
    const after = await k.run('print(plt.get_fignums())');
    assert.deepEqual(shapes(after.messages), ['stdout:[]\n']);
  });

  it('switches a kernel whose pyplot already runs the inline backend to ours at install time', async () => {
    const used = new KernelHarness();
    try {
      await used.start('import matplotlib.pyplot as plt\nplt.figure()\nprint(plt.get_backend())');
      const r = await used.run('print(plt.get_backend())\nplt.plot([1])');
      assert.deepEqual(shapes(r.messages).slice(0, 1), ['stdout:module://codeact_mpl\n']);
      assert.deepEqual(
        r.messages.filter((m) => m.type === 'display_data').map((m) => Object.keys(m.content.data).sort().join(',')),
        ['text/plain', 'image/png,text/plain'],
      );
    } finally {
      await used.close();
    }
  });

  it('applies the caps of the run options: one note for the displays past the count', async () => {
    const r = await k.run('for i in range(5):\n    display(i)', { display: { max_count: 2 } });
    assert.deepEqual(shapes(r.messages), [
      'display_data:text/plain',
      'display_data:text/plain',
      'stderr:[codeact: 3 more displays were not shown; the cap is 2 per execution]\n',
    ]);
  });

  it('lists the files the run made or changed (path, size) and the folder they are in', async () => {
    writeFileSync(path.join(k.cwd, 'old.txt'), 'old');
    await k.run('x = 1');
    const r = await k.run('open("new.csv", "w").write("a,b\\n")\nopen("old.txt", "a").write("er")');
    assert.deepEqual(r.result.files, [
      { path: 'new.csv', size: 4 },
      { path: 'old.txt', size: 5 },
    ]);
    assert.equal(r.result.cwd, k.cwd);
    const none = await k.run('y = 2');
    assert.deepEqual(none.result.files, []);
  });
});
