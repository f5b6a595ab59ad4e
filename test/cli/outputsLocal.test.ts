/**
 * `--outputs DIR` end to end on the real local guest (Debian's python3 with matplotlib and pandas): a plot
 * shown with plt.show(), a DataFrame as the last expression and the files the code wrote, through `codeact
 * run` and through `codeact chat` with a scripted model on a loopback wire server. The terminal shows them
 * in order with the text ("[image 556×413, PNG]", the table's summary, "[file out.csv, 28 bytes]") and says
 * where each was saved; --json prints the display events and the file outputs as they are.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, CodeInterpreterCallItem, FileOutput } from '../../src/common/events';
import { runCli } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import { turn } from '../support/wire/turn';

const PYTHON = '/usr/bin/python3';
const probe = spawnSync(PYTHON, ['-c', 'import matplotlib, pandas'], { encoding: 'utf8' });
if (probe.status !== 0)
  console.log(`  matplotlib/pandas not found for ${PYTHON} (apt-get install python3-matplotlib python3-pandas): skipping the local --outputs tests`);

const CODE = `import matplotlib.pyplot as plt
import pandas as pd
print("before")
plt.plot([1, 3, 2])
plt.title("revenue")
plt.show()
print("after")
df = pd.DataFrame({"month": ["Jan", "Feb"], "revenue": [10, 12]})
df.to_csv("out.csv", index=False)
import os
os.makedirs("sub", exist_ok=True)
with open("sub/notes.txt", "w") as f:
    f.write("peak in Feb")
df
`;
const CSV = 'month,revenue\nJan,10\nFeb,12\n';

/** Width and height from a PNG's header. */
const pngSize = (b: Buffer) => [b.readUInt32BE(16), b.readUInt32BE(20)];

(probe.status === 0 ? describe : describe.skip)('codeact --outputs on the local guest', function () {
  this.timeout(180_000);
  let out: string;
  beforeEach(() => (out = path.join(mkdtempSync(path.join(tmpdir(), 'codeact-out-l-')), 'out')));
  afterEach(() => rmSync(path.dirname(out), { recursive: true, force: true }));

  it('codeact run saves the plot and the files, and the terminal shows them in order with the text', async () => {
    const r = await runCli(['run', '-', '--python', PYTHON, '--outputs', out], {}, CODE);
    assert.equal(r.code, 0, r.stderr);
    const size = /^before\n\[image (\d+)×(\d+), PNG\]\nafter\n/.exec(r.stdout);
    assert.ok(size, `text, plot, text in order:\n${r.stdout}`);
    assert.match(
      r.stdout,
      /after\n[^[]*2 rows × 2 columns[\s\S]*\| Feb \| 12 \|[\s\S]*\[file out\.csv, 28 bytes\]\n\[file sub\/notes\.txt, 11 bytes\]\n⇒ null\n/,
      'the table by its summary, then the files',
    );
    assert.ok(r.stdout.endsWith(`saved 1 image and 2 files to ${out}: exec-1-image-1.png, exec-1-out.csv, exec-1-sub_notes.txt\n`), r.stdout);
    assert.doesNotMatch(r.stdout, /iVBOR|<table|<div/, 'no base64, no HTML on a terminal');
    assert.deepEqual(readdirSync(out).sort(), ['exec-1-image-1.png', 'exec-1-out.csv', 'exec-1-sub_notes.txt']);
    const png = readFileSync(path.join(out, 'exec-1-image-1.png'));
    assert.deepEqual(pngSize(png), [Number(size[1]), Number(size[2])], 'the size the terminal said');
    assert.equal(readFileSync(path.join(out, 'exec-1-out.csv'), 'utf8'), CSV);
    assert.equal(readFileSync(path.join(out, 'exec-1-sub_notes.txt'), 'utf8'), 'peak in Feb');
  });

  it('codeact run --json prints the display events and the file outputs as they are', async () => {
    const r = await runCli(['run', '-', '--python', PYTHON, '--json', '--outputs', out], {}, CODE);
    assert.equal(r.code, 0, r.stderr);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as CodeActEvent);
    const live = events
      .filter((e) => e.type === 'codeact.output.delta' || e.type === 'codeact.output.display')
      .map((e) => (e.type === 'codeact.output.delta' ? e.delta.trim() : Object.keys(e.output.data).includes('image/png') ? 'png' : 'table'));
    assert.deepEqual(live, ['before', 'png', 'after', 'table']);
    const item = (events.at(-1) as { item: CodeInterpreterCallItem }).item;
    const files = item.outputs.filter((o): o is FileOutput => o.type === 'file');
    assert.deepEqual(
      files.map((f) => [f.filename, f.bytes, f.mime_type]),
      [
        ['out.csv', 28, 'text/csv'],
        ['sub/notes.txt', 11, 'text/plain'],
      ],
    );
    // `path` was a host copy for as long as the command ran; --outputs keeps them.
    assert.ok(files.every((f) => path.isAbsolute(f.path!)));
    assert.ok(r.stderr.includes(`saved 1 image and 2 files to ${out}`), r.stderr);
    assert.equal(readFileSync(path.join(out, 'exec-1-out.csv'), 'utf8'), CSV);
  });

  it('codeact chat with a scripted model: the plot of each execution is saved under its number', async () => {
    const wire = await startServerFor('openai-compatible', 'ollama');
    const storage = mkdtempSync(path.join(tmpdir(), 'codeact-chat-l-'));
    try {
      wire.push(turn().call('execute_tool_code', { code: CODE }));
      wire.push(turn().call('execute_tool_code', { code: 'plt.figure()\nplt.bar(df["month"], df["revenue"])\nplt.show()\nreturn int(df["revenue"].sum())' }));
      wire.push(turn().text('Revenue was 22 in all; see the charts.'));
      const r = await runCli([
        'chat',
        'Plot revenue by month',
        '--provider',
        'openai-compatible',
        '--model',
        'qwen2.5-coder:7b',
        '--base-url',
        wire.url,
        '--python',
        PYTHON,
        '--storage',
        storage,
        '--outputs',
        out,
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.stdout.includes(`saved 1 image and 2 files to ${out}: exec-1-image-1.png, exec-1-out.csv, exec-1-sub_notes.txt`), r.stdout);
      assert.ok(r.stdout.includes(`saved 1 image to ${out}: exec-2-image-1.png`), r.stdout);
      assert.match(r.stdout, /Revenue was 22 in all/);
      assert.deepEqual(readdirSync(out).sort(), ['exec-1-image-1.png', 'exec-1-out.csv', 'exec-1-sub_notes.txt', 'exec-2-image-1.png']);
      assert.equal(readFileSync(path.join(out, 'exec-2-image-1.png')).subarray(1, 4).toString(), 'PNG');
    } finally {
      await wire.close();
      rmSync(storage, { recursive: true, force: true });
    }
  });
});
