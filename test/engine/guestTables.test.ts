/**
 * DataFrames, Series and PIL images as displays of the real local guest (Debian's pandas and Pillow):
 * html and plain text as Jupyter shows them but capped, the model's compact summary, a 10-million-row
 * frame, image modes converted to PNG.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { imageSize } from '../../src/common/displays';
import { DEBIAN_PYTHON, plain, startGuest, type GuestFrame, type GuestHarness } from '../support/guestHarness';

(existsSync(DEBIAN_PYTHON) ? describe : describe.skip)('guest displays: tables and images', function () {
  this.timeout(120_000);
  let g: GuestHarness;
  before(async () => {
    g = await startGuest();
    await g.run('import numpy as np, pandas as pd');
  });
  after(async () => g?.close());

  it('shows a DataFrame with html and plain text exactly as Jupyter does (max 60 rows, 20 columns), and a summary', async () => {
    const r = await g.run(
      [
        'df = pd.DataFrame({"n": range(200), "sq": [i * i for i in range(200)], "name|x": [f"row {i}" for i in range(200)]})',
        'with pd.option_context("display.max_columns", 20):', // Jupyter's default (0 here, outside a notebook)
        '    jupyter = {"text/html": df._repr_html_(), "text/plain": repr(df)}',
        'df',
      ].join('\n'),
    );
    assert.equal(r.complete.ok, true, JSON.stringify(r.complete.error));
    assert.equal(r.displays.length, 1);
    const d = r.displays[0];
    assert.equal(d.result, true);
    const expected = await g.run('jupyter');
    assert.deepEqual(d.data, expected.complete.value);
    assert.match(d.data['text/html'], /<p>200 rows × 3 columns<\/p>/);
    assert.equal((d.data['text/html'].match(/<tr>/g) ?? []).length, 10 + 1); // pandas shows min_rows (10) of a long frame, and "..."
    assert.equal(
      d.summary,
      [
        'DataFrame: 200 rows × 3 columns',
        'Columns: n (int64), sq (int64), name\\|x (object)',
        'First 5 rows:',
        '|  | n | sq | name\\|x |',
        '|---|---|---|---|',
        '| 0 | 0 | 0 | row 0 |',
        '| 1 | 1 | 1 | row 1 |',
        '| 2 | 2 | 4 | row 2 |',
        '| 3 | 3 | 9 | row 3 |',
        '| 4 | 4 | 16 | row 4 |',
      ].join('\n'),
    );
  });

  it('caps what the user asked pandas to show in full, and the width of the summary', async () => {
    const r = await g.run(
      [
        'pd.set_option("display.max_rows", None)',
        'pd.set_option("display.max_columns", None)',
        'wide = pd.DataFrame(np.arange(100 * 40).reshape(100, 40), columns=[f"c{i}" for i in range(40)])',
        'wide["long"] = "y" * 300',
        'display(wide)',
        'pd.reset_option("display.max_rows"); pd.reset_option("display.max_columns")',
      ].join('\n'),
    );
    const d = r.displays[0];
    const html: string = d.data['text/html'];
    const headerCells = (html.split('</thead>')[0].match(/<th>/g) ?? []).length;
    assert.ok(headerCells <= 21 + 1, `${headerCells} header cells`);
    assert.ok((html.match(/<tr>/g) ?? []).length <= 61, 'at most 60 rows and the header');
    assert.match(html, /<p>100 rows × 41 columns<\/p>/);
    const lines = (d.summary as string).split('\n');
    assert.match(lines[1], /^Columns: c0 \(int64\), c1 \(int64\), .*, c39 \(int64\), long \(object\)$/);
    assert.equal(lines[3].split(' | ').length, 1 + 12 + 1, 'the index, 12 columns and "…"');
    assert.ok(
      lines.every((l) => l.length <= 1200),
      'bounded lines',
    );
    assert.match(lines[5], /^\| 0 \| 0 \| 1 \| 2 \|/);
  });

  it('shows a Series with html (as a one-column table), plain text and a summary', async () => {
    const r = await g.run('s = pd.Series([0.5, 1.25, None] * 40, name="price")\ns');
    const d = r.displays[0];
    assert.match(d.data['text/plain'], /Name: price, Length: 120, dtype: float64$/);
    assert.match(d.data['text/html'], /<th>price<\/th>/);
    assert.match(d.data['text/html'], /<p>120 rows × 1 columns<\/p>/);
    assert.equal(
      d.summary,
      [
        'Series price: 120 rows, dtype float64',
        'First 5 rows:',
        '|  | price |',
        '|---|---|',
        '| 0 | 0.5 |',
        '| 1 | 1.25 |',
        '| 2 | nan |',
        '| 3 | 0.5 |',
        '| 4 | 1.25 |',
      ].join('\n'),
    );
  });

  it('displays a 10-million-row frame without formatting the whole of it', async () => {
    const r = await g.run(
      [
        'big = pd.DataFrame({"a": np.arange(10_000_000), "b": np.zeros(10_000_000)})',
        'import time',
        't = time.perf_counter()',
        'display(big)',
        'print(f"{time.perf_counter() - t:.3f}")',
      ].join('\n'),
    );
    const d = r.displays[0];
    assert.match(d.data['text/html'], /<p>10000000 rows × 2 columns<\/p>/);
    assert.match(d.data['text/plain'], /\[10000000 rows x 2 columns\]$/);
    assert.ok(JSON.stringify(d.data).length < 20_000);
    assert.match(d.summary, /^DataFrame: 10,000,000 rows × 2 columns\n/);
    console.log(`      (display of a 10M-row frame in the guest: ${plain(r.stdout).trim()} s)`);
  });

  it('shows PIL images as PNG, converting modes other than RGB and RGBA', async () => {
    const r = await g.run(
      [
        'from PIL import Image',
        'for mode in ("RGB", "RGBA", "L", "P", "F", "I;16", "CMYK", "LA", "1"):',
        '    display(Image.new(mode, (64, 32)))',
        'p = Image.new("P", (8, 8)); p.info["transparency"] = 0',
        'display(p)',
      ].join('\n'),
    );
    assert.equal(r.complete.ok, true, JSON.stringify(r.complete.error));
    assert.equal(plain(r.stderr), '');
    assert.equal(r.displays.length, 10);
    for (const d of r.displays) {
      assert.ok(d.data['image/png'], JSON.stringify(d.data).slice(0, 200));
      assert.match(d.data['text/plain'], /^<PIL\.Image\.Image image mode=\S+ size=\d+x\d+ at 0x[0-9A-F]+>$/);
    }
    assert.deepEqual(imageSize('image/png', r.displays[0].data['image/png']), { width: 64, height: 32 });
    // PNG colour type (byte 25 of the file): 2 = RGB, 6 = RGBA.
    const colour = (d: GuestFrame) => Buffer.from(d.data['image/png'], 'base64')[25];
    assert.deepEqual(r.displays.map(colour), [2, 6, 2, 2, 2, 2, 2, 6, 2, 6]);
  });
});
