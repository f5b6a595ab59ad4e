/**
 * What can be done with rich outputs in the panel (headless Chromium, the built bundle): an image opens full
 * size, is saved and is copied (the real clipboard of the page, read back); a file chip opens, saves and
 * copies the path of its file; a hosted sandbox's file downloads; a file that could not be copied out, or
 * whose session ended, says so. And how they look in the dark and light themes and at 240 px (screenshots
 * in test-artifacts/), with nothing wider than the panel.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { WebviewToHost } from '../../src/common/protocol';
import type { TranscriptEvent } from '../../src/common/transcript';
import { narrowLayoutProblems } from '../e2e/support/layout';
import { PanelPage } from './support/browser';
import { ev, hostState } from './support/fixtures';
import { pngBase64, pngBytes } from './support/png';
import { usePanelBrowser } from './support/panelBrowser';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

const PLOT = pngBase64(640, 480);
const SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="240" height="120" viewBox="0 0 240 120"><rect x="10" y="10" width="60" height="100" fill="#2ca02c"/><rect x="90" y="40" width="60" height="70" fill="#d62728"/><rect x="170" y="70" width="60" height="40" fill="#9467bd"/></svg>';
const TABLE = `<div><table border="1" class="dataframe"><thead><tr style="text-align: right;"><th></th><th>month</th><th>revenue</th><th>orders</th><th>region</th></tr></thead><tbody>${[
  'Jan',
  'Feb',
  'Mar',
  'Apr',
  'May',
  'Jun',
]
  .map((m, i) => `<tr><th>${i}</th><td>${m}</td><td>${(12000 + i * 1834.5).toFixed(2)}</td><td>${120 + i * 7}</td><td>EMEA-North</td></tr>`)
  .join('')}</tbody></table><p>6 rows × 4 columns</p></div>`;

/** A turn that plots, shows a table and an SVG, and writes files. */
function richTurn(id = 'x1'): TranscriptEvent[] {
  return [
    ev.turn(`t-${id}`, 'Plot revenue by month, show the table, save it as CSV'),
    ev.codeStart(id, 'local'),
    ev.codeDone(id, 'df = load()\nprint("loaded", len(df))\ndf.plot(); plt.show()\ndisplay(df)\ndisplay(SVG(chart))\ndf.to_csv("revenue.csv")\n'),
    ev.interpreting(id),
    ev.out(id, 'loaded 6 rows\n'),
    ev.display(id, { data: { 'image/png': PLOT, 'text/plain': '<Figure size 640x480 with 1 Axes>' } }),
    ev.out(id, 'plotted\n'),
    ev.display(id, { data: { 'text/html': TABLE, 'text/plain': 'df' }, result: false }),
    ev.display(id, { data: { 'image/svg+xml': SVG, 'text/plain': '<SVG>' } }),
    ev.completed(id),
    ev.itemDone({
      id,
      outputs: [
        { type: 'logs', logs: 'loaded 6 rows\n' },
        { type: 'display', data: { 'image/png': PLOT } },
        { type: 'logs', logs: 'plotted\n' },
        { type: 'file', filename: 'revenue.csv', path: '/tmp/codeact-session-1/revenue.csv', mime_type: 'text/csv', bytes: 1234 },
        {
          type: 'file',
          filename: 'a-rather-long-file-name-for-the-quarterly-report.xlsx',
          path: '/tmp/codeact-session-1/a-rather-long-file-name-for-the-quarterly-report.xlsx',
          bytes: 2_500_000,
        },
        {
          type: 'file',
          filename: 'huge.bin',
          bytes: 900_000_000,
          note: 'Not copied out: 858 MB is over the 64 MB cap for files. It stays in the session folder.',
        },
        { type: 'file', filename: 'report.pdf', file_id: 'cfile_1', container_id: 'cntr_1', mime_type: 'application/pdf', bytes: 20480 },
      ],
    }),
    ev.turnEnd(`t-${id}`),
  ];
}

describe('rich output actions and looks in the panel (headless Chromium)', function () {
  this.timeout(180_000);
  const ui = usePanelBrowser({ light: true, artifacts: ARTIFACTS });

  const ofType = <T extends WebviewToHost['type']>(posted: WebviewToHost[], ...types: T[]) =>
    posted.filter((m): m is Extract<WebviewToHost, { type: T }> => (types as string[]).includes(m.type));

  it('an image opens full size on click and from its toolbar, saves as plot-N, and copies to the clipboard as PNG', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url);
    await p.page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ui.dark.url });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(richTurn());
    await p.whenIdle();
    await p.clearPosted();
    const png = p.page.locator('.display[data-mime="image/png"] figure');
    await png.locator('img').click();
    await png.hover();
    await png.getByRole('button', { name: 'Open full size', exact: true }).click();
    await png.getByRole('button', { name: 'Save image…' }).click();
    const svg = p.page.locator('.display[data-mime="image/svg+xml"] figure');
    await svg.hover();
    await svg.getByRole('button', { name: 'Save image…' }).click();
    const posted = ofType(await p.posted(), 'image.open', 'image.save');
    assert.deepEqual(
      posted.map((m) => [m.type, m.mime, m.name, m.data === PLOT || m.data === SVG]),
      [
        ['image.open', 'image/png', 'plot-1.png', true],
        ['image.open', 'image/png', 'plot-1.png', true],
        ['image.save', 'image/png', 'plot-1.png', true],
        ['image.save', 'image/svg+xml', 'plot-2.svg', true],
      ],
    );

    await png.hover();
    await png.getByRole('button', { name: 'Copy image' }).click();
    await p.page.waitForFunction(() => document.querySelector('.display[data-mime="image/png"] [data-flash]')?.getAttribute('data-flash') === 'ok', null, {
      timeout: 20_000,
    });
    // Chromium decodes and re-encodes what goes on the clipboard: the same picture, not the same bytes.
    const copied = await p.page.evaluate(async () => {
      const items = await navigator.clipboard.read();
      const bmp = await createImageBitmap(await items[0].getType('image/png'));
      const c = new OffscreenCanvas(bmp.width, bmp.height);
      const g = c.getContext('2d')!;
      g.drawImage(bmp, 0, 0);
      return { size: [bmp.width, bmp.height], band: Array.from(g.getImageData(320, 240, 1, 1).data), corner: Array.from(g.getImageData(600, 20, 1, 1).data) };
    });
    assert.deepEqual(copied, { size: [640, 480], band: [31, 119, 180, 255], corner: [255, 255, 255, 255] }, 'the clipboard holds the plot as PNG');

    await svg.hover();
    await svg.getByRole('button', { name: 'Copy image' }).click();
    await p.page.waitForFunction(() => document.querySelector('.display[data-mime="image/svg+xml"] [data-flash]')?.getAttribute('data-flash') === 'ok', null, {
      timeout: 20_000,
    });
    const svgCopy = await p.page.evaluate(async () => {
      const blob = await (await navigator.clipboard.read())[0].getType('image/png');
      const bmp = await createImageBitmap(blob);
      return [bmp.width, bmp.height];
    });
    assert.deepEqual(svgCopy, [480, 240], 'SVG is copied as a PNG drawn at twice its size');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('file chips: Open, Save to Workspace… and Copy Path post the file; a hosted file downloads; notes and gone files say so', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url);
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(richTurn());
    await p.whenIdle();
    await p.clearPosted();
    const chips = p.page.locator('.file-chip');
    assert.equal(await chips.count(), 4);
    assert.equal(await p.page.locator('.files-section .section-label').innerText(), 'FILES (4)');
    const csv = chips.nth(0);
    assert.equal(await csv.locator('.file-name').innerText(), 'revenue.csv');
    assert.equal(await csv.locator('.file-detail').innerText(), '1.2 KiB · CSV');
    assert.equal(await chips.nth(1).locator('.file-detail').innerText(), '2.4 MiB · XLSX');
    await csv.getByRole('button', { name: 'Open', exact: true }).click();
    await csv.getByRole('button', { name: 'Save to Workspace…' }).click();
    await csv.getByRole('button', { name: 'Copy Path' }).click();
    const huge = chips.nth(2);
    assert.equal(await huge.getAttribute('data-kind'), 'unavailable');
    assert.match(await huge.locator('.file-note').innerText(), /over the 64 MB cap/);
    assert.equal(await huge.locator('button').count(), 0, 'a file that was not copied out has no actions');
    const hosted = chips.nth(3);
    assert.equal(await hosted.locator('.file-detail').innerText(), '20.0 KiB · PDF');
    await hosted.getByRole('button', { name: 'Download…' }).click();
    const posted = await p.posted();
    const path = '/tmp/codeact-session-1/revenue.csv';
    assert.deepEqual(ofType(posted, 'file.open', 'file.save', 'file.copyPath'), [
      { type: 'file.open', itemId: 'x1', path },
      { type: 'file.save', itemId: 'x1', path },
      { type: 'file.copyPath', itemId: 'x1', path },
    ]);
    const download = ofType(posted, 'openFile');
    assert.equal(download.length, 1);
    assert.equal(download[0].file.file_id, 'cfile_1');

    // The host found the file gone (its session ended): the chip says so and offers nothing.
    await p.send({
      type: 'file.missing',
      itemId: 'x1',
      path,
      message: 'revenue.csv is no longer available: the session that wrote it has ended, so its folder is gone.',
    });
    assert.equal(await csv.getAttribute('data-kind'), 'unavailable');
    assert.match(await csv.locator('.file-note').innerText(), /session that wrote it has ended/);
    assert.equal(await csv.locator('button').count(), 0);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('looks finished in the dark and light themes and at 240 px: images shrink, tables scroll, chips wrap', async () => {
    const shots: [string, string, { width: number; height: number }][] = [
      ['webview-displays-dark.png', ui.dark.url, { width: 560, height: 1500 }],
      ['webview-displays-light.png', ui.light.url, { width: 560, height: 1500 }],
      ['webview-displays-narrow-240-dark.png', ui.dark.url, { width: 240, height: 1900 }],
      ['webview-displays-narrow-240-light.png', ui.light.url, { width: 240, height: 1900 }],
    ];
    for (const [file, url, viewport] of shots) {
      const p = await PanelPage.open(ui.browser, url, viewport, url === ui.dark.url ? 'dark' : 'light');
      // tsx keeps function names with a `__name` helper the page does not have (narrowLayoutProblems runs there).
      await p.page.evaluate('globalThis.__name = globalThis.__name || ((f) => f)');
      await p.send({ type: 'init', protocol: 1, state: hostState() });
      await p.sendEvents(richTurn());
      await p.whenIdle();
      await p.page.evaluate(() => Promise.all(Array.from(document.querySelectorAll('img')).map((i) => i.decode().catch(() => undefined))));
      await p.page.evaluate(() => document.querySelector('section.card.exec')?.scrollIntoView());
      await p.page.waitForSelector('.html-output:not(.html-pending)');
      await p.page.mouse.move(1, 1);
      await p.page.screenshot({ path: join(ARTIFACTS, file) });
      const layout = await p.page.evaluate(() => {
        const width = document.documentElement.clientWidth;
        const wide = Array.from(document.querySelectorAll('.turn *'))
          .filter((el) => !el.closest('pre, .code-block, .html-output, .md-code, .json-tree'))
          .filter((el) => el.getBoundingClientRect().right > width + 1)
          .map((el) => `${el.tagName}.${el.className}`)
          .slice(0, 5);
        const box = document.querySelector('.html-output')!;
        const img = document.querySelector('.display[data-mime="image/png"] img')!.getBoundingClientRect();
        const card = document.querySelector('section.card.exec')!.getBoundingClientRect();
        return { wide, tableScrolls: box.scrollWidth > box.clientWidth, img: Math.round(img.width), card: Math.round(card.width) };
      });
      assert.deepEqual(layout.wide, [], `${file}: elements wider than the panel`);
      assert.ok(layout.img <= layout.card, `${file}: the plot fits the card (${layout.img} of ${layout.card} px)`);
      if (viewport.width === 240) {
        assert.ok(layout.tableScrolls, `${file}: the table scrolls sideways in its box`);
        assert.deepEqual(await p.page.evaluate(narrowLayoutProblems), [], `${file}: nothing sticks out or is cut off`);
      }
      assert.deepEqual(p.errors, []);
      assert.deepEqual(await p.cspViolations(), []);
      await p.page.close();
    }
    // (The PNG fixture itself is a real image: the browser decoded it at its size.)
    assert.equal(pngBytes(2, 2).subarray(1, 4).toString('latin1'), 'PNG');
  });
});
