/**
 * An exported conversation opens in VS Code's own notebook editor (code-server = VS Code 1.139, its built-in
 * ipynb support and renderers, in headless Chromium) with its plot, its table and its text as they were:
 * the cells keep the whole display bundle (display_data / execute_result with image/png and text/html).
 *
 * Screenshots go to test-artifacts/e2e/ (52-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { FrameLocator } from 'playwright-core';
import { conversationToNotebook } from '../../src/common/notebook';
import type { TranscriptEvent } from '../../src/common/transcript';
import { pngBase64 } from '../support/png';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { makeWorkspaceWith } from './support/workspace';

const UI = 60_000;

/** A real matplotlib plot (Debian's python3-matplotlib), or a plain image where it is missing. */
function plotPng(): { b64: string; width: number; height: number } {
  const py =
    'import base64, io, matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.figure(figsize=(4, 2.5), dpi=80)\nplt.plot([10, 12, 9])\nplt.title("revenue")\nb = io.BytesIO()\nplt.savefig(b, format="png")\nprint(base64.b64encode(b.getvalue()).decode())';
  const r = spawnSync('/usr/bin/python3', ['-c', py], { encoding: 'utf8', timeout: 60_000 });
  const b64 = r.status === 0 ? r.stdout.trim() : pngBase64(320, 200, 0xc0);
  const bytes = Buffer.from(b64, 'base64');
  return { b64, width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}
const PLOT = plotPng();

const events: TranscriptEvent[] = [
  { type: 'codeact.turn.started', turn_id: 't1', prompt: 'Plot revenue by month', source: 'chat' },
  {
    type: 'response.output_item.done',
    item: {
      type: 'code_interpreter_call',
      id: 'exec_1',
      status: 'completed',
      runtime: 'local',
      value: null,
      code: 'import matplotlib.pyplot as plt\nprint("plotting")\nplt.plot([10, 12, 9])\nplt.show()',
      outputs: [
        { type: 'logs', logs: 'plotting\n' },
        { type: 'display', data: { 'image/png': PLOT.b64, 'text/plain': '<Figure size 320x200 with 1 Axes>' }, metadata: { codeact: { private: 1 } } },
      ],
    },
  },
  {
    type: 'response.output_item.done',
    item: {
      type: 'code_interpreter_call',
      id: 'exec_2',
      status: 'completed',
      runtime: 'local',
      value: null,
      code: 'df',
      outputs: [
        {
          type: 'display',
          data: {
            'text/html': '<table class="dataframe"><tr><th>month</th><th>revenue</th></tr><tr><td>Jan</td><td>10</td></tr></table>',
            'text/plain': '  month  revenue\n0   Jan       10',
          },
          result: true,
        },
      ],
    },
  },
  { type: 'response.output_text.done', item_id: 'm1', text: 'Revenue peaked in February.' },
];

describe('e2e: an exported notebook opens in VS Code with its plots and tables', function () {
  this.timeout(600_000);
  const e2e = useCodeServer({
    name: 'notebook-open',
    workspace: () => makeWorkspaceWith({ 'revenue.ipynb': JSON.stringify(conversationToNotebook(events, { title: 'Revenue' }), null, 1) }),
    settings: {},
    minWaitMs: UI,
  });

  /** The frame of the notebook's outputs (VS Code draws them in a webview). */
  async function outputsFrame(): Promise<FrameLocator> {
    const page = e2e.wb.page;
    let frame: FrameLocator | undefined;
    await waitUntil(
      async () => {
        for (const outer of await page.locator('iframe.webview').all()) {
          const inner = page.frameLocator(`iframe.webview[name="${await outer.getAttribute('name')}"]`).frameLocator('#active-frame');
          if (
            (await inner
              .locator('img, table')
              .count()
              .catch(() => 0)) > 0
          ) {
            frame = inner;
            return true;
          }
        }
        return false;
      },
      UI,
      () => 'the notebook outputs never rendered',
      500,
    );
    return frame!;
  }

  it('shows the plot as an image, the DataFrame as a table, and the stream text', async () => {
    // Quick Open (the notebook editor has no text editor of its own for openFile to wait for).
    const page = e2e.wb.page;
    await page.keyboard.press('F1');
    const quick = page.locator('.quick-input-widget');
    await quick.locator('input.input').fill('revenue.ipynb');
    await quick
      .locator('.monaco-list-row')
      .filter({ hasText: 'revenue.ipynb' })
      .first()
      .click({ timeout: e2e.wb.wait(20_000) });
    await page
      .locator('.notebookOverlay.notebook-editor:visible')
      .first()
      .waitFor({ state: 'visible', timeout: e2e.wb.wait(UI) });
    const frame = await outputsFrame();
    const img = frame.locator('img').first();
    await img.waitFor({ state: 'visible', timeout: e2e.wb.wait(UI) });
    // VS Code's image renderer draws the bundle's image/png from a blob of its bytes.
    const drawn = await img.evaluate((el: HTMLImageElement) => ({ width: el.naturalWidth, height: el.naturalHeight }));
    assert.deepEqual(drawn, { width: PLOT.width, height: PLOT.height }, 'the recorded plot, decoded');
    const table = frame.locator('table').first();
    await table.waitFor({ state: 'visible', timeout: e2e.wb.wait(UI) });
    assert.match(await table.innerText(), /month\s+revenue\s+Jan\s+10/);
    assert.match(await frame.locator('body').innerText(), /plotting/);
    await e2e.wb.screenshot('52-exported-notebook-in-vscode');
  });
});
