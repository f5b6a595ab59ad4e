/**
 * The panel renders rich outputs and file chips, in a real
 * VS Code (code-server 4.139 = VS Code 1.139, the current release) driven in headless Chromium, on the real local guest (Debian's
 * /usr/bin/python3 with matplotlib and pandas, bubblewrap when present). A scripted model (a loopback
 * OpenAI-compatible server) asks to run code that prints, shows a bar chart with plt.show(), a DataFrame, an
 * SVG, and writes a CSV; the card shows them in that order, in the four themes (every text at WCAG AA) and at
 * 240 px; the image opens full size in an editor tab and is saved; the CSV chip opens, saves to the workspace
 * and copies its path.
 *
 * Screenshots: test-artifacts/e2e/90-…. Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { turn } from '../support/wire/turn';
import { textContrast } from './support/contrast';
import { artifactPath } from './support/env';
import { narrowLayoutProblems } from './support/layout';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { THEMES, applyTheme } from './support/themes';

/** UI conditions get a minute: the machine is small and shared. */
const UI = 60_000;
const MODEL = 'qwen2.5-coder:7b';

const SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="240" height="120"><rect x="10" y="10" width="60" height="100" fill="#2ca02c"/><rect x="90" y="40" width="60" height="70" fill="#d62728"/><rect x="170" y="70" width="60" height="40" fill="#9467bd"/></svg>';

const RICH_CODE = `import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import SVG

print("revenue by month")
df = pd.DataFrame({
    "month": ["Jan", "Feb", "Mar", "Apr", "May", "Jun"],
    "revenue": [12000.0, 13834.5, 15669.0, 17503.5, 19338.0, 21172.5],
    "orders": [120, 127, 134, 141, 148, 155],
    "region": ["EMEA-North"] * 6,
})
df.plot(x="month", y="revenue", kind="bar", title="Revenue by month", legend=False)
plt.show()
display(df)
display(SVG('${SVG}'))
df.to_csv("revenue.csv", index=False)
print("saved revenue.csv")
`;

describe('e2e: rich outputs in the panel', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'rich-outputs',
    wire: ['openai-compatible', 'openai'],
    settings: (url) => ({
      'codeact.provider': 'openai-compatible',
      'codeact.baseURL': url,
      'codeact.model': MODEL,
      'codeact.timeoutSeconds': 120,
      'codeact.python.path': '/usr/bin/python3',
    }),
    minWaitMs: UI,
  });

  const card = async () => (await e2e.panel.frame()).locator('section.card.exec').last();

  /** The output flow of the last card: `pane:<text>` and `display:<mime>`, in order. */
  async function flow(): Promise<string[]> {
    return (await card()).evaluate((el) =>
      Array.from(el.querySelector('.output-flow')?.children ?? [])
        .filter((c) => !(c as HTMLElement).hidden)
        .map((c) => (c.classList.contains('output-pane') ? `pane:${(c.textContent ?? '').trim()}` : `display:${c.getAttribute('data-mime')}`)),
    );
  }

  it('shows print, plot, table, SVG, print in order, with the CSV as a file chip', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    e2e.wire.push(
      turn().call('execute_tool_code', { code: RICH_CODE }),
      turn().text('The chart, the table and the SVG are above; the data is in **revenue.csv**.'),
    );
    await e2e.panel.send('Plot revenue by month, show the table and a small SVG, and save the data as revenue.csv');
    assert.equal(await e2e.panel.waitForTurn(-1, ['completed'], 180_000), 'completed', await e2e.panel.text());
    assert.deepEqual(await flow(), ['pane:revenue by month', 'display:image/png', 'display:text/html', 'display:image/svg+xml', 'pane:saved revenue.csv']);
    const c = await card();
    // A table is drawn when it comes near the view.
    await e2e.panel.scrollTo('section.card.exec .display[data-mime="text/html"]');
    await c.locator('.html-output:not(.html-pending) table').waitFor({ timeout: UI });
    const shown = await c.evaluate(async (el) => {
      const imgs = Array.from(el.querySelectorAll<HTMLImageElement>('.display-image img'));
      await Promise.all(imgs.map((i) => i.decode().catch(() => undefined)));
      return {
        images: imgs.map((i) => [i.src.slice(0, 22), i.naturalWidth > 0]),
        rows: el.querySelectorAll('.html-output tbody tr').length,
        header: Array.from(el.querySelectorAll('.html-output thead th')).map((t) => t.textContent),
        inlineSvg: el.querySelectorAll('.display svg:not(.icon)').length,
        styles: el.querySelectorAll('.html-output style, .html-output [style]').length,
      };
    });
    assert.deepEqual(shown.images, [
      ['data:image/png;base64,', true],
      ['data:image/svg+xml;cha', true],
    ]);
    assert.equal(shown.rows, 6);
    assert.deepEqual(shown.header, ['', 'month', 'revenue', 'orders', 'region']);
    assert.equal(shown.inlineSvg, 0, 'SVG is an <img>, never inline SVG');
    assert.equal(shown.styles, 0, "the DataFrame's <style> and style attributes are gone");
    const chip = c.locator('.file-chip');
    assert.equal(await chip.count(), 1);
    assert.equal(await chip.locator('.file-name').innerText(), 'revenue.csv');
    assert.match(await chip.locator('.file-detail').innerText(), /^\d+ B · CSV$/);
    await e2e.panel.scrollTo('section.card.exec .output-flow');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('90-rich-outputs-dark') });
    await e2e.panel.scrollTo('section.card.exec .files-section');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('90b-rich-outputs-dark-files') });
  });

  it('in Dark Modern, Light Modern and both High Contrast themes every text of the outputs meets WCAG AA', async () => {
    const failures: string[] = [];
    for (const theme of THEMES) {
      await applyTheme(e2e.panel, theme);
      const f = await e2e.panel.frame();
      const bad = (await f.evaluate(textContrast)).filter((s) => s.ratio < s.needed);
      if (bad.length) failures.push(`${theme.label}:\n${bad.map((s) => `${s.what}: ${s.ratio}:1 (${s.fg} on ${s.bg}, needs ${s.needed}:1)`).join('\n')}`);
      await e2e.panel.scrollTo('section.card.exec .output-flow');
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`91-rich-outputs-${theme.slug}`) });
      await e2e.panel.scrollTo('section.card.exec .display[data-mime="text/html"]');
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`91b-rich-outputs-${theme.slug}-table`) });
    }
    await applyTheme(e2e.panel, THEMES[0]);
    assert.deepEqual(failures, [], `texts below WCAG AA contrast:\n${failures.join('\n\n')}`);
  });

  it('at 240 px: the plot shrinks to the card, the table scrolls in its box, the chip wraps; nothing sticks out', async () => {
    const before = await e2e.wb.sidebarWidth();
    const got = await e2e.wb.setSidebarWidth(240);
    assert.ok(Math.abs(got - 240) <= 12, `the sidebar is about 240 px wide (${got})`);
    const f = await e2e.panel.frame();
    await waitUntil(
      async () => (await f.evaluate(() => document.documentElement.clientWidth)) <= 240,
      UI,
      () => 'the webview never got 240 px wide',
      200,
    );
    await e2e.panel.scrollTo('section.card.exec .output-flow');
    const fit = await (
      await card()
    ).evaluate((el) => {
      const box = el.getBoundingClientRect();
      const img = el.querySelector('.display-image img')!.getBoundingClientRect();
      const table = el.querySelector<HTMLElement>('.html-output')!;
      return { img: img.right <= box.right + 0.5, scrolls: table.scrollWidth > table.clientWidth };
    });
    assert.deepEqual(fit, { img: true, scrolls: true });
    const problems = await f.evaluate(narrowLayoutProblems);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('92-rich-outputs-240px') });
    await e2e.panel.scrollTo('section.card.exec .files-section');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('92b-rich-outputs-240px-files') });
    await e2e.wb.setSidebarWidth(before);
    assert.deepEqual(problems, [], 'layout problems of the narrow panel');
  });

  it("the plot and the SVG open full size in an editor tab (VS Code's image preview); the plot copies as PNG and saves to the workspace as plot-1.png", async () => {
    const f = await e2e.panel.frame();
    await e2e.panel.scrollTo('section.card.exec .output-flow');
    await f.locator('.display[data-mime="image/png"] button.image-open').click();
    const tab = e2e.wb.page.locator('.tabs-container .tab', { hasText: 'plot-1.png' });
    await tab.first().waitFor({ timeout: UI });
    // The image preview says the picture's size in the status bar once it has decoded it.
    let status = '';
    await waitUntil(
      async () => /\b\d{3}x\d{3}\b/.test((status = await e2e.wb.page.locator('.part.statusbar').innerText())) && status.includes('Whole Image'),
      UI,
      () => `the image preview never showed its size: ${status}`,
      250,
    );
    await e2e.wb.screenshot('93-plot-opened');
    await e2e.wb.closeActiveEditor();

    // SVG too, in the image preview (VS Code would open an .svg as its XML text).
    await (await e2e.panel.frame()).locator('.display[data-mime="image/svg+xml"] button.image-open').click();
    await e2e.wb.page.locator('.tabs-container .tab', { hasText: 'plot-2.svg' }).first().waitFor({ timeout: UI });
    await waitUntil(
      async () => /\b240x120\b/.test((status = await e2e.wb.page.locator('.part.statusbar').innerText())),
      UI,
      () => `the SVG did not open in the image preview: ${status}`,
      250,
    );
    await e2e.wb.closeActiveEditor();

    // Copy Image: the webview's own clipboard, as PNG, readable by the workbench.
    const png = (await e2e.panel.frame()).locator('.display[data-mime="image/png"] figure');
    await png.hover();
    await png.getByRole('button', { name: 'Copy image' }).click();
    await waitUntil(
      async () =>
        (await png
          .locator('[data-flash]')
          .getAttribute('data-flash')
          .catch(() => null)) !== null,
      UI,
      () => 'Copy image said nothing',
      100,
    );
    assert.equal(await png.locator('[data-flash]').getAttribute('data-flash'), 'ok', 'the image was copied');
    const types = await e2e.wb.page.evaluate(async () => (await navigator.clipboard.read()).flatMap((i) => i.types));
    assert.ok(types.includes('image/png'), `the clipboard holds a PNG (${types.join(', ')})`);

    await png.hover();
    await png.getByRole('button', { name: 'Save image…' }).click();
    await acceptSaveDialog(/plot-1\.png$/);
    const saved = join(e2e.ws.folder, 'plot-1.png');
    await waitUntil(
      async () => existsSync(saved),
      UI,
      () => `${saved} was not written`,
      200,
    );
    assert.equal(readFileSync(saved).subarray(1, 4).toString('latin1'), 'PNG');
  });

  it('the CSV chip: Open shows the file, Save to Workspace… copies it there, Copy Path puts its path on the clipboard', async () => {
    const f = await e2e.panel.frame();
    await e2e.panel.scrollTo('section.card.exec .files-section');
    const chip = f.locator('.file-chip').last();
    await chip.getByRole('button', { name: 'Open', exact: true }).click();
    await e2e.wb.page.locator('.tabs-container .tab', { hasText: 'revenue.csv' }).first().waitFor({ timeout: UI });
    await waitUntil(
      async () =>
        /month,revenue,orders,region/.test(
          await e2e.wb.page
            .locator('.part.editor .view-lines')
            .first()
            .innerText()
            .catch(() => ''),
        ),
      UI,
      () => 'the CSV did not open',
      250,
    );
    await e2e.wb.screenshot('94-csv-opened');
    await e2e.wb.closeActiveEditor();

    await chip.getByRole('button', { name: 'Save to Workspace…' }).click();
    await acceptSaveDialog(/revenue\.csv$/);
    const saved = join(e2e.ws.folder, 'revenue.csv');
    await waitUntil(
      async () => existsSync(saved),
      UI,
      () => `${saved} was not written`,
      200,
    );
    assert.match(readFileSync(saved, 'utf8'), /^month,revenue,orders,region\nJan,12000.0,120,EMEA-North\n/);

    await chip.getByRole('button', { name: 'Copy Path' }).click();
    let clip = '';
    await waitUntil(
      async () => /revenue\.csv$/.test((clip = await e2e.wb.page.evaluate(() => navigator.clipboard.readText()).catch(() => ''))),
      UI,
      () => `the clipboard holds ${JSON.stringify(clip)}`,
      250,
    );
    assert.ok(clip.startsWith('/') && !clip.startsWith(e2e.ws.folder), `the path of the runtime's copy: ${clip}`);
  });

  /** VS Code's save dialog in the browser (the simple file dialog): the suggested path must be `re`; accept it. */
  async function acceptSaveDialog(re: RegExp): Promise<void> {
    const input = e2e.wb.page.locator('.quick-input-widget input.input');
    await input.waitFor({ state: 'visible', timeout: UI });
    let value = '';
    await waitUntil(
      async () => re.test((value = await input.inputValue())),
      UI,
      () => `the save dialog suggests ${value}`,
      200,
    );
    assert.ok(value.startsWith(e2e.ws.folder), `the dialog suggests the workspace folder: ${value}`);
    await e2e.wb.page.keyboard.press('Enter');
  }
});
