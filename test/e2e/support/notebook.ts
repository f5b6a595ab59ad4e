/**
 * Page object of VS Code's notebook editor (1.100 and 1.139) in code-server (the tests say what a user does, this file
 * knows the DOM): open a workspace .ipynb, pick its kernel, run cells, read their states and outputs,
 * interrupt, undo, save, close and reopen.
 *
 * What the DOM looks like (checked on code-server 4.100.3 and 4.139.1 in headless Chromium):
 * - The active notebook is the one `.notebookOverlay.notebook-editor:visible` (1.139 has other `.notebook-editor`s; notebook widgets live in an overlay, NOT inside
 *   `.editor-group-container`; editors of background tabs stay in the DOM, hidden).
 * - Cells are rows of a virtualized monaco list (`.cell-list-container .monaco-list-row[data-index=i]`, each
 *   with `aria-setsize` = the cell count): only the rows on screen exist, so reading cell i scrolls to it first
 *   (with the mouse wheel: moving the keyboard focus would change the selected cell, where an agent inserts).
 * - A cell's execution order is `.execution-count-label` ("[3]", "[ ]"); its state is the first codicon of
 *   `.cell-status-left`: `notebook-state-pending` (queued), `notebook-state-executing` (running),
 *   `notebook-state-success`, `notebook-state-error`; none before a run and after a reopen.
 * - While any cell runs the toolbar's "Run All" becomes "Interrupt" (aria-label "Interrupt").
 * - Outputs are drawn in a webview (`iframe.webview` → frame `active-frame`, the visible notebook's iframe is
 *   at x >= 0, background ones at x = -50000), laid out as `#container > .cell_container#<cellHandle> >
 *   .output_container > .output#<outputId>`, absolutely positioned over the row they belong to (the iframe is
 *   shifted 5000 px up). Neither id is visible in the workbench DOM, so an output belongs to the cell whose
 *   row it overlaps on the page. Classes: `.output-stream` (stdout and stderr; consecutive stream outputs of a
 *   cell are drawn into ONE element), `.traceback.error` (the error renderer), an `<img>` (image/png), a
 *   `<table>` (text/html of a DataFrame), and the markdown renderer draws into the `.output`'s shadow root.
 */
import type { Frame, Locator } from 'playwright-core';
import { waitUntil } from './procs';
import type { Workbench } from './workbench';

export type CellState = 'idle' | 'pending' | 'running' | 'success' | 'error';

export interface CellInfo {
  index: number;
  kind: 'code' | 'markup';
  /** The rendered source lines (a long cell shows only its visible lines). */
  source: string;
  /** The number in "[n]"; undefined for "[ ]" (never run, or queued) and markdown cells. */
  executionOrder?: number;
  state: CellState;
}

export type OutputKind = 'stream' | 'error' | 'image' | 'table' | 'markdown' | 'html';

export interface CellOutput {
  kind: OutputKind;
  /** innerText of the output (for markdown, of its shadow root). */
  text: string;
  /** The webview's ids: `.output`'s id (the output) and `.cell_container`'s id (the cell's view handle). */
  outputId: string;
  cellHandle: string;
  /** For an image: its decoded size (0 while it is not decoded). */
  image?: { naturalWidth: number; naturalHeight: number };
}

const STATE_ICONS: [string, CellState][] = [
  ['codicon-notebook-state-pending', 'pending'],
  ['codicon-notebook-state-executing', 'running'],
  ['codicon-notebook-state-success', 'success'],
  ['codicon-notebook-state-error', 'error'],
];

export class NotebookDriver {
  constructor(readonly wb: Workbench) {}

  private get page() {
    return this.wb.page;
  }

  /** The active notebook editor. */
  get editor(): Locator {
    return this.page.locator('.notebookOverlay.notebook-editor:visible').first();
  }

  private get list(): Locator {
    return this.editor.locator('.cell-list-container > .monaco-list');
  }

  private row(index: number): Locator {
    return this.editor.locator(`.cell-list-container .monaco-list-row[data-index="${index}"]`);
  }

  private get toolbar(): Locator {
    return this.editor.locator('.notebook-toolbar-container');
  }

  // ---- open, save, close ----------------------------------------------------------------------------

  /** Opens a workspace notebook with Quick Open and waits until its cells are drawn (at least one row). */
  async open(relativePath: string): Promise<void> {
    await this.wb.dismissQuickInput();
    const name = relativePath.split('/').pop()!;
    const quick = this.page.locator('.quick-input-widget');
    await this.page.keyboard.press('F1');
    await quick.waitFor({ state: 'visible', timeout: this.wb.wait(10_000) });
    await quick.locator('input.input').fill(relativePath);
    await quick
      .locator('.monaco-list-row')
      .filter({ hasText: name })
      .first()
      .click({ timeout: this.wb.wait(20_000) });
    await this.activeTab(name).waitFor({ timeout: this.wb.wait(20_000) });
    await this.editor
      .locator('.cell-list-container .monaco-list-row')
      .first()
      .waitFor({ state: 'visible', timeout: this.wb.wait(30_000) });
  }

  private activeTab(name?: string): Locator {
    const tab = this.page.locator('.part.editor .tabs-container .tab.active');
    return (name ? tab.filter({ hasText: name }) : tab).first();
  }

  /** Whether the active tab shows unsaved changes. */
  async isDirty(): Promise<boolean> {
    return /\bdirty\b/.test((await this.activeTab().getAttribute('class')) ?? '');
  }

  /** Ctrl+S on the notebook, then waits until the tab is no longer dirty. */
  async save(): Promise<void> {
    await this.focusNotebook();
    await this.page.keyboard.press('Control+S');
    await waitUntil(
      async () => !(await this.isDirty()),
      this.wb.wait(30_000),
      () => 'the notebook stayed dirty after Ctrl+S',
      200,
    );
  }

  /** Closes the notebook's tab; with unsaved changes, answers VS Code's "save?" dialog with Don't Save when `discard`. */
  async close(opts: { discard?: boolean } = {}): Promise<void> {
    if ((await this.isDirty()) && !opts.discard) throw new Error('the notebook has unsaved changes: save() first, or close({ discard: true })');
    const label = (await this.activeTab().getAttribute('aria-label')) ?? '';
    const tab = this.activeTab();
    await tab.hover();
    await tab
      .locator('.tab-actions .action-label')
      .first()
      .click({ timeout: this.wb.wait(10_000) });
    if (opts.discard) {
      const dialog = this.page.locator('.monaco-dialog-box');
      if (
        await dialog.waitFor({ state: 'visible', timeout: 3000 }).then(
          () => true,
          () => false,
        )
      )
        await dialog.getByRole('button', { name: "Don't Save" }).click();
    }
    const same = this.page
      .locator('.part.editor .tabs-container .tab')
      .filter({ has: this.page.locator(`xpath=self::*[@aria-label=${JSON.stringify(label)}]`) });
    await waitUntil(
      async () => (await same.count()) === 0,
      this.wb.wait(10_000),
      () => `the notebook "${label}" did not close`,
      200,
    );
  }

  // ---- kernel ---------------------------------------------------------------------------------------

  /**
   * The kernel name on the toolbar's right. NOTE: VS Code shows the only (or the one suggested) kernel's label
   * there before any is selected, so this is not proof of a selection; `selectKernel` makes one.
   */
  async kernelLabel(): Promise<string> {
    return (
      (await this.toolbar
        .locator('.kernel-action-view-item .kernel-label')
        .innerText()
        .catch(() => '')) ?? ''
    ).trim();
  }

  /**
   * Selects the kernel labelled `label` with "Notebook: Select Notebook Kernel" like a user: picks its row, or
   * goes through "Select Another Kernel..." (and a kernel-source level below it) when the first level lacks
   * it. The picker marks the suggested kernel "Currently Selected" even when none is selected; picking it
   * selects it. Waits until the picker closes and the toolbar names the kernel.
   */
  async selectKernel(label: string): Promise<void> {
    const quick = this.page.locator('.quick-input-widget');
    await this.focusNotebook();
    await this.wb.runCommand('Notebook: Select Notebook Kernel');
    for (let level = 0; level < 3; level++) {
      const rows = quick.locator('.monaco-list-row');
      await rows.first().waitFor({ state: 'visible', timeout: this.wb.wait(20_000) });
      const labels = await rows.evaluateAll((els) =>
        els.map((e) => (e.querySelector('.label-name') as HTMLElement | null)?.innerText.trim() ?? (e as HTMLElement).innerText.trim()),
      );
      const exact = labels.indexOf(label);
      if (exact >= 0) {
        // A hover left open over the picker (a row's long description, the toolbar's tooltip) takes the click:
        // the mouse goes away first and the hover is let close.
        await this.page.mouse.move(0, 0);
        await this.page
          .locator('.context-view .hover-contents')
          .first()
          .waitFor({ state: 'hidden', timeout: this.wb.wait(5_000) })
          .catch(() => undefined);
        // At the row's top left corner: a description's hover opens below the label, never over it.
        await rows.nth(exact).click({ position: { x: 4, y: 4 } });
        await quick.waitFor({ state: 'hidden', timeout: this.wb.wait(10_000) }).catch(() => undefined);
        let shown = '';
        await waitUntil(
          async () => (shown = await this.kernelLabel()) === label,
          this.wb.wait(20_000),
          () => `the toolbar never named the kernel "${label}" (it shows "${shown}")`,
          200,
        );
        return;
      }
      const another = labels.findIndex((l) => /^Select Another Kernel/.test(l));
      if (another < 0 || level === 2) {
        await this.wb.dismissQuickInput();
        throw new Error(`the kernel picker has no kernel "${label}"; it lists: ${JSON.stringify(labels)}`);
      }
      const title = await quick.locator('input.input').getAttribute('placeholder');
      await rows.nth(another).click();
      // The next level reuses the widget: wait until its rows changed.
      await waitUntil(
        async () =>
          (await quick
            .locator('input.input')
            .getAttribute('placeholder')
            .catch(() => title)) !== title,
        this.wb.wait(10_000),
        () => 'the kernel picker did not open "Select Another Kernel..."',
        100,
      );
    }
  }

  // ---- toolbar --------------------------------------------------------------------------------------

  /**
   * Clicks the notebook toolbar's action whose title (aria-label, which may end in a keybinding like
   * "(Ctrl+Enter)") starts with `title`; through "More Actions..." when the toolbar moved it there.
   */
  async clickToolbar(title: string): Promise<void> {
    const action = this.toolbar
      .locator('.action-item .action-label')
      .filter({ has: this.page.locator(`xpath=self::*[starts-with(@aria-label, ${JSON.stringify(title)})]`) });
    if (
      await action
        .first()
        .isVisible()
        .catch(() => false)
    ) {
      await action.first().click();
      return;
    }
    const more = this.toolbar.locator('.action-label[aria-label="More Actions..."]').first();
    if (await more.isVisible().catch(() => false)) {
      await more.click();
      const item = this.page.locator('.monaco-menu .action-item .action-label', { hasText: title }).first();
      if (
        await item.waitFor({ state: 'visible', timeout: 5000 }).then(
          () => true,
          () => false,
        )
      ) {
        await item.click();
        return;
      }
      await this.page.keyboard.press('Escape');
    }
    throw new Error(`the notebook toolbar has no action "${title}"; it shows: ${JSON.stringify(await this.toolbarTitles())}`);
  }

  /** The titles (aria-labels) of the toolbar's actions, left to right (the kernel item last, as its tooltip). */
  async toolbarTitles(): Promise<string[]> {
    return (await this.toolbar.locator('.action-item .action-label').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''))).filter(Boolean);
  }

  /** Whether the toolbar shows "Interrupt" (some cell of this notebook is queued or running). */
  async isRunning(): Promise<boolean> {
    return this.toolbar
      .locator('.action-label[aria-label="Interrupt"]')
      .isVisible()
      .catch(() => false);
  }

  /** Clicks the toolbar's Interrupt (waits for it to show: a cell must be running). */
  async interrupt(): Promise<void> {
    const button = this.toolbar.locator('.action-label[aria-label="Interrupt"]');
    await button.waitFor({ state: 'visible', timeout: this.wb.wait(20_000) });
    await button.click();
  }

  // ---- cells ----------------------------------------------------------------------------------------

  /** The number of cells (every row carries aria-setsize; 0 when the notebook has none). */
  async cellCount(): Promise<number> {
    const first = this.editor.locator('.cell-list-container .monaco-list-row').first();
    if (!(await first.count())) return 0;
    return Number((await first.getAttribute('aria-setsize')) ?? '0');
  }

  /** Waits until the notebook has `n` cells. */
  async waitForCellCount(n: number, timeoutMs = 30_000): Promise<void> {
    let last = -1;
    await waitUntil(
      async () => (last = await this.cellCount().catch(() => last)) === n,
      this.wb.wait(timeoutMs),
      () => `the notebook has ${last} cells, not ${n}`,
      200,
    );
  }

  /** Scrolls the list (mouse wheel, so the selection stays) until cell `index`'s row is drawn and on screen. */
  async revealCell(index: number): Promise<Locator> {
    const row = this.row(index);
    const count = await this.cellCount();
    if (index < 0 || index >= count) throw new Error(`no cell ${index}: the notebook has ${count} cells`);
    const box = await this.list.boundingBox();
    if (!box) throw new Error('the notebook cell list is not visible');
    await waitUntil(
      async () => {
        // Read without waiting: a row the virtualized list has not drawn is absent, and a locator's boundingBox()
        // would wait Playwright's default 30 s for it before giving null.
        const r = await row
          .evaluateAll((els) => {
            const b = els[0]?.getBoundingClientRect();
            return b ? { y: b.y, height: b.height } : null;
          })
          .catch(() => null);
        if (r && r.y < box.y + box.height - 40 && r.y + r.height > box.y + 10) return true;
        // Which way: the drawn rows' indexes say whether the cell is above or below them.
        const drawn = await this.editor
          .locator('.cell-list-container .monaco-list-row')
          .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-index'))));
        const down = r ? r.y > box.y : drawn.every((i) => i < index);
        // The wheel over the list's very left edge (its focus indicator): the outputs' webview and their toolbars
        // (a little to the right) take the wheel as their own. VS Code scrolls the list ~50 px a wheel event.
        await this.page.mouse.move(box.x + 3, box.y + box.height / 2);
        for (let i = 0; i < 3; i++) await this.page.mouse.wheel(0, down ? 120 : -120);
        return false;
      },
      this.wb.wait(20_000),
      () => `could not scroll cell ${index} into view`,
      150,
    );
    return row;
  }

  /** What cell `index` shows: kind, source, execution order, state. */
  async cell(index: number): Promise<CellInfo> {
    const row = await this.revealCell(index);
    const raw = await row.evaluate((e) => ({
      markup: e.classList.contains('markdown-cell-row'),
      source: Array.from(e.querySelectorAll<HTMLElement>('.view-lines .view-line'))
        .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
        .map((l) => l.innerText.replace(/\u00a0/g, ' '))
        .join('\n'),
      rendered: (e.querySelector('.markdown') as HTMLElement | null)?.innerText ?? '',
      order: (e.querySelector('.execution-count-label') as HTMLElement | null)?.innerText ?? '',
      icon: e.querySelector('.cell-status-left .codicon')?.className ?? '',
    }));
    const order = /\[(\d+)\]/.exec(raw.order);
    const state = STATE_ICONS.find(([cls]) => raw.icon.includes(cls))?.[1] ?? 'idle';
    return {
      index,
      kind: raw.markup ? 'markup' : 'code',
      source: raw.markup && !raw.source ? raw.rendered : raw.source,
      executionOrder: order ? Number(order[1]) : undefined,
      state,
    };
  }

  /** Every cell, top to bottom (scrolls through the notebook). */
  async cells(): Promise<CellInfo[]> {
    const out: CellInfo[] = [];
    const n = await this.cellCount();
    for (let i = 0; i < n; i++) out.push(await this.cell(i));
    return out;
  }

  /**
   * Clicks cell `index`'s left margin (its execution-order label): the cell becomes the selected one and the
   * keyboard focus is the notebook list (command mode), where Ctrl+Z is the notebook's undo.
   */
  async focusCell(index: number): Promise<void> {
    const row = await this.revealCell(index);
    // The execution-order label (a click on the margin's focus indicator collapses the cell's input instead).
    const label = row.locator('.execution-count-label').first();
    if (await label.isVisible().catch(() => false)) await label.click({ position: { x: 2, y: 2 } });
    else
      await row
        .locator('.cell-focus-indicator-left')
        .first()
        .click({ position: { x: 4, y: 8 } });
    await this.waitForListFocus();
  }

  /**
   * Puts the keyboard focus on the notebook list without changing the selected cell: clicks the selected (or
   * first) cell's margin. A cell editor with the focus would take Ctrl+Z as its own text undo.
   */
  async focusNotebook(): Promise<void> {
    if (await this.hasListFocus()) return;
    const focused = this.editor.locator('.cell-list-container .monaco-list-row.focused').first();
    const index = (await focused.count()) ? Number(await focused.getAttribute('data-index')) : 0;
    if ((await this.cellCount()) === 0) {
      await this.list.focus();
      return;
    }
    await this.focusCell(index);
  }

  private async hasListFocus(): Promise<boolean> {
    return this.list.evaluate((l) => document.activeElement === l).catch(() => false);
  }

  private async waitForListFocus(): Promise<void> {
    await waitUntil(
      () => this.hasListFocus(),
      this.wb.wait(10_000),
      () => 'the notebook list did not take the keyboard focus',
      100,
    );
  }

  /** Ctrl+Z on the notebook list (one notebook-level undo: an inserted cell goes, with its outputs). */
  async undo(): Promise<void> {
    await this.focusNotebook();
    await this.page.keyboard.press('Control+Z');
  }

  // ---- running --------------------------------------------------------------------------------------

  /** Clicks Run All on the toolbar. Use `waitForRun` after it. */
  async runAll(): Promise<void> {
    await this.clickToolbar('Run All');
  }

  /** Hovers cell `index` and clicks its run button ("Execute Cell"). Use `waitForRun` after it. */
  async runCell(index: number): Promise<void> {
    const row = await this.revealCell(index);
    const button = row.locator('.run-button-container .action-label[aria-label^="Execute Cell"]').first();
    await waitUntil(
      async () => {
        await row.hover().catch(() => undefined);
        return button.click({ timeout: 2000 }).then(
          () => true,
          () => false,
        );
      },
      this.wb.wait(20_000),
      () => `could not click cell ${index}'s run button`,
      200,
    );
  }

  /**
   * Waits until the cells in `cells` (all code cells by default) have run to the end, and nothing runs any
   * more: each shows success or error with an execution order other than the one in `before` (the `cells()`
   * read before the run; without it any finished state counts), and the toolbar shows no Interrupt. Returns
   * the cells as they are then. Pass only the cells the run reaches (a kernel may skip those after an error).
   */
  /** With `cells`, only those are read, and the array returned holds only them. */
  async waitForRun(opts: { cells?: number[]; before?: CellInfo[]; timeoutMs?: number } = {}): Promise<CellInfo[]> {
    let seen: CellInfo[] = [];
    await waitUntil(
      async () => {
        if (await this.isRunning()) return false;
        // Only the cells asked about are read (each read may scroll the list): the others are left as holes.
        if (opts.cells) {
          seen = [];
          for (const i of opts.cells) seen[i] = await this.cell(i);
        } else seen = await this.cells();
        const wanted = opts.cells ?? seen.filter((c) => c.kind === 'code').map((c) => c.index);
        const done = wanted.every((i) => {
          const c = seen[i];
          if (!c || (c.state !== 'success' && c.state !== 'error')) return false;
          const prev = opts.before?.[i];
          return !prev || prev.state === 'idle' || prev.executionOrder !== c.executionOrder;
        });
        return done && !(await this.isRunning());
      },
      this.wb.wait(opts.timeoutMs ?? 120_000),
      () => `the run did not finish; the cells show ${JSON.stringify(seen)}`,
      500,
    );
    return seen;
  }

  /** Waits until cell `index` shows `state` ('running' to know an execution started, say). */
  async waitForCellState(index: number, state: CellState, timeoutMs = 60_000): Promise<CellInfo> {
    let seen: CellInfo | undefined;
    await waitUntil(
      async () => (seen = await this.cell(index).catch(() => seen))?.state === state,
      this.wb.wait(timeoutMs),
      () => `cell ${index} never showed ${state}; it shows ${JSON.stringify(seen)}`,
      250,
    );
    return seen!;
  }

  // ---- outputs --------------------------------------------------------------------------------------

  /** The output webview's frame of the active notebook (the iframe.webview on screen). */
  async outputFrame(timeoutMs = 30_000): Promise<Frame> {
    let found: Frame | undefined;
    await waitUntil(
      async () => {
        for (const el of await this.page.locator('iframe.webview').all()) {
          const box = await el.boundingBox().catch(() => null);
          if (!box || box.x < 0 || box.width === 0) continue;
          // By element, not frame name: the inner frame is created as "pending-frame" and renamed by its id
          // attribute when ready, which Playwright's cached frame name does not follow.
          const outer = await (await el.elementHandle())?.contentFrame();
          const inner = await (await outer?.$('iframe#active-frame'))?.contentFrame();
          if (inner && (await inner.evaluate(() => !!document.querySelector('#container')).catch(() => false))) {
            found = inner;
            return true;
          }
        }
        return false;
      },
      this.wb.wait(timeoutMs),
      () => 'the notebook has no output webview on screen (no cell has outputs yet?)',
      250,
    );
    return found!;
  }

  /**
   * The outputs drawn for cell `index`, top to bottom. Waits (up to `timeoutMs`) until the webview has drawn
   * as many as the cell's row has output slots, and, with `until`, until `until(outputs)` holds (an image
   * decoded, a text arrived). A cell without outputs gives [] at once.
   */
  async outputs(index: number, opts: { until?: (outs: CellOutput[]) => boolean; timeoutMs?: number } = {}): Promise<CellOutput[]> {
    let seen: CellOutput[] = [];
    let slots = 0;
    let failure = '';
    await waitUntil(
      async () => {
        const row = await this.revealCell(index);
        slots = await row.locator('.output .output-inner-container').count();
        if (slots === 0) {
          seen = [];
          return !opts.until || opts.until(seen);
        }
        seen = await this.readOutputs(row).then(
          (outs) => ((failure = ''), outs),
          (e: unknown) => ((failure = `; last read failed: ${String(e)}`), seen),
        );
        // Consecutive stream outputs share one element, so there may be fewer elements than slots.
        return seen.length > 0 && seen.length <= slots && (!opts.until || opts.until(seen));
      },
      this.wb.wait(opts.timeoutMs ?? 60_000),
      () => `cell ${index}'s outputs did not render (${slots} output slots; drawn: ${JSON.stringify(seen)})${failure}`,
      250,
    );
    return seen;
  }

  /** The text of all of cell `index`'s stream outputs (stdout and stderr, as drawn), joined. */
  async streamText(index: number, until?: RegExp): Promise<string> {
    const text = (outs: CellOutput[]) =>
      outs
        .filter((o) => o.kind === 'stream')
        .map((o) => o.text)
        .join('');
    return text(await this.outputs(index, { until: until ? (o) => until.test(text(o)) : undefined }));
  }

  private async readOutputs(row: Locator): Promise<CellOutput[]> {
    const frame = await this.outputFrame();
    // The row's output slots (zero-height boxes in the workbench) sit exactly where the webview draws them.
    const slots = await row.locator('.output .output-inner-container').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top));
    const frameBox = await (await frame.frameElement()).boundingBox();
    if (!slots.length || !frameBox) return [];
    const all = await frame.evaluate(() =>
      Array.from(document.querySelectorAll<HTMLElement>('#container .cell_container .output')).map((o) => {
        const r = o.getBoundingClientRect();
        const img = o.querySelector('img');
        const shadowText = o.shadowRoot
          ? Array.from(o.shadowRoot.children)
              .filter((c) => !['STYLE', 'LINK', 'SCRIPT'].includes(c.tagName))
              .map((c) => (c as HTMLElement).innerText ?? c.textContent ?? '')
              .join('')
          : '';
        const kind =
          o.classList.contains('error') && !o.classList.contains('output-stream')
            ? 'error'
            : o.classList.contains('output-stream')
              ? 'stream'
              : img
                ? 'image'
                : o.querySelector('table')
                  ? 'table'
                  : o.shadowRoot
                    ? 'markdown'
                    : 'html';
        return {
          kind,
          text: o.shadowRoot ? shadowText.trim() : o.innerText,
          outputId: o.id,
          cellHandle: o.closest('.cell_container')?.id ?? '',
          image: img ? { naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight } : undefined,
          top: r.top,
          height: r.height,
          hidden: r.height === 0 || getComputedStyle(o).visibility === 'hidden',
        };
      }),
    );
    // An output belongs to the cell whose output slot it is drawn at (page coordinates: the frame's box plus
    // the output's; the row's own box covers only its input part).
    return all
      .map((o) => ({ ...o, pageTop: frameBox.y + o.top }))
      .filter((o) => !(o.hidden && !o.text.trim()) && slots.some((top) => Math.abs(top - o.pageTop) <= 2))
      .sort((a, b) => a.pageTop - b.pageTop)
      .map(({ kind, text, outputId, cellHandle, image }) => ({ kind: kind as OutputKind, text, outputId, cellHandle, ...(image ? { image } : {}) }));
  }
}
