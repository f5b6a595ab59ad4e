/**
 * "Run with Tools" on `# %%` cells that plot, in a real VS Code (code-server = VS Code 1.139) driven in
 * headless Chromium, on the Jupyter runtime (a real jupyter-server) and on the local guest (bubblewrap,
 * Debian's python3 with matplotlib and pandas): the inline result says "1 image" / "2 images" / "1 image,
 * 2 files", and its hover draws the plot first (a data-URL image of VS Code's hover markdown, sized down to
 * fit 320×200 px, with supportHtml off and no command but the panel's) and lists the files.
 *
 * Screenshots go to test-artifacts/e2e/ (50-, 51-, 53-…). Skips with one line when code-server, Chromium or
 * jupyter-server is missing.
 */
import assert from 'node:assert/strict';
import { findJupyterServer, SKIP_MESSAGE, startJupyterServer, type JupyterServer } from '../support/jupyterServer';
import { useCodeServer } from './support/suite';
import { makeWorkspaceWith } from './support/workspace';

const UI = 60_000;
const RUN = 180_000;
const FILE = 'plots.py';
const CELLS = `# %% One plot
import matplotlib.pyplot as plt
plt.figure(figsize=(6.4, 4.8))
plt.plot([1, 3, 2])
plt.title("revenue")
plt.show()

# %% Two plots
for k in (1, 2):
    plt.figure()
    plt.plot([k, 0, k])
    plt.show()
print("drawn")
`;
const CELL1_MARKER = 1;
const CELL1_LAST = 6;
const CELL2_MARKER = 8;
const CELL2_LAST = 13;

describe('e2e: Run with Tools shows the plots of # %% cells inline and in the hover', function () {
  this.timeout(900_000);
  let jupyter: JupyterServer | undefined;
  before(async function () {
    if (!findJupyterServer()) {
      console.log(`      ${SKIP_MESSAGE}`);
      this.skip();
    }
    this.timeout(120_000);
    jupyter = await startJupyterServer();
  });
  after(async () => jupyter?.stop());

  // The server starts first (the hook above), so its URL and token are known when code-server starts.
  const e2e = useCodeServer({
    name: 'run-with-tools-images',
    workspace: () => makeWorkspaceWith({ [FILE]: CELLS }),
    get settings() {
      return { 'codeact.runtime': 'jupyter', 'codeact.jupyter.serverURL': jupyter!.url, 'codeact.timeoutSeconds': 120 };
    },
    get env() {
      return { CODEACT_JUPYTER_TOKEN: jupyter!.token };
    },
    minWaitMs: UI,
  });

  it('a cell that plots once says "1 image", and its hover draws the plot in view, sized down', async () => {
    await e2e.wb.openFile(FILE);
    await e2e.editor.focus();
    await e2e.editor.clickCodeLens(CELL1_MARKER, '▶ Run with Tools', UI);
    const mark = await e2e.editor.waitForDecoration(/^[✓✗]/, RUN);
    assert.match(mark.text, /^✓ 1 image · /, `the mark counts the plot: ${mark.text}`);
    assert.equal(mark.line, CELL1_LAST);

    const text = await e2e.editor.hoverLine(CELL1_LAST);
    assert.match(text, /completed · jupyter .*1 image/);
    const img = e2e.wb.page.locator('.monaco-hover:not(.hidden) .monaco-hover-content img').first();
    await img.waitFor({ state: 'visible', timeout: e2e.wb.wait(10_000) });
    const drawn = await img.evaluate((el: HTMLImageElement) => ({
      src: el.src.slice(0, 22),
      width: el.getAttribute('width'),
      natural: el.naturalWidth,
      shown: el.getBoundingClientRect().width,
      tall: el.getBoundingClientRect().height,
      alt: el.alt,
    }));
    assert.equal(drawn.src, 'data:image/png;base64,', 'the hover keeps the data URL (VS Code allows data: images)');
    // The plot (about 540×410 px from the kernel's inline backend) is sized down to fit 320×200.
    assert.ok(drawn.natural > 320, `the image decoded (${drawn.natural} px wide)`);
    assert.ok(
      Math.abs(drawn.shown - Number(drawn.width)) < 2 && drawn.shown <= 320,
      `drawn at its width attribute (${drawn.shown} px, width="${drawn.width}")`,
    );
    assert.ok(drawn.tall > 150 && drawn.tall <= 201, `no taller than 200 px (${drawn.tall})`);
    const box = await e2e.wb.page
      .locator('.monaco-hover:not(.hidden) .monaco-hover-content')
      .first()
      .evaluate((el) => ({ scroll: el.scrollHeight, client: el.clientHeight }));
    const top = await img.evaluate(
      (el) => el.getBoundingClientRect().bottom - (el.closest('.monaco-hover-content') as HTMLElement).getBoundingClientRect().top,
    );
    assert.ok(top <= box.client + 1, `the plot is in view when the hover opens (bottom ${top} of ${box.client} px)`);
    assert.match(drawn.alt, /^image 1, \d+×\d+$/);
    await e2e.wb.screenshot('50-run-with-tools-plot-hover');
    await e2e.wb.page.keyboard.press('Escape');
  });

  it('a cell that plots twice says "2 images" and draws both', async () => {
    await e2e.editor.clickCodeLens(CELL2_MARKER, '▶ Run with Tools', UI);
    const mark = await e2e.editor.waitForDecoration(/^✓ 2 images/, RUN);
    assert.equal(mark.line, CELL2_LAST);
    await e2e.editor.hoverLine(CELL2_LAST);
    const imgs = e2e.wb.page.locator('.monaco-hover:not(.hidden) .monaco-hover-content img');
    await imgs.nth(1).waitFor({ state: 'visible', timeout: e2e.wb.wait(10_000) });
    assert.equal(await imgs.count(), 2);
    await e2e.wb.screenshot('51-run-with-tools-two-plots-hover');
    await e2e.wb.page.keyboard.press('Escape');
  });
});

describe('e2e: Run with Tools on the local guest (the default runtime) shows its plot and its files', function () {
  this.timeout(900_000);
  const LOCAL = `# %% Plot and save
import matplotlib.pyplot as plt
import pandas as pd
df = pd.DataFrame({"month": ["Jan", "Feb", "Mar"], "revenue": [10, 12, 9]})
df.plot(x="month", y="revenue")
plt.show()
df.to_csv("revenue.csv", index=False)
df.to_json("revenue.json")
`;
  const e2e = useCodeServer({
    name: 'run-with-tools-local-images',
    workspace: () => makeWorkspaceWith({ 'local_plot.py': LOCAL }),
    // Debian's python3 has matplotlib and pandas (the one on PATH may not).
    settings: { 'codeact.python.path': '/usr/bin/python3', 'codeact.timeoutSeconds': 120 },
    minWaitMs: UI,
  });

  it('says "1 image, 2 files", and the hover draws the plot and lists the files', async () => {
    await e2e.wb.openFile('local_plot.py');
    await e2e.editor.focus();
    await e2e.editor.clickCodeLens(1, '▶ Run with Tools', UI);
    const mark = await e2e.editor.waitForDecoration(/^[✓✗]/, RUN);
    assert.match(mark.text, /^✓ 1 image, 2 files · /, mark.text);
    const text = await e2e.editor.hoverLine(mark.line);
    assert.match(text, /completed · local/);
    assert.match(text, /revenue\.csv, \d+ bytes\s+revenue\.json, \d+ bytes/);
    const img = e2e.wb.page.locator('.monaco-hover:not(.hidden) .monaco-hover-content img').first();
    await img.waitFor({ state: 'visible', timeout: e2e.wb.wait(10_000) });
    assert.ok((await img.evaluate((el: HTMLImageElement) => el.naturalWidth)) > 320, 'the plot decoded');
    await e2e.wb.screenshot('53-run-with-tools-local-plot-files-hover');
    await e2e.wb.page.keyboard.press('Escape');
  });
});
