/**
 * Page object of the active text editor: its visible lines and the after-line decorations extensions
 * put there. VS Code renders `after.contentText` either as injected text in the line or as a `::after`
 * pseudo-element whose CSS `content` holds the text; `decorations()` reads both.
 */
import type { Locator } from 'playwright-core';
import type { Workbench } from './workbench';

export interface LineDecoration {
  /** 1-based line number, from the line's position among the rendered lines (by top offset). */
  line: number;
  text: string;
}

export class Editor {
  constructor(readonly wb: Workbench) {}

  get root(): Locator {
    return this.wb.page.locator('.editor-group-container.active .monaco-editor').first();
  }

  /** Clicks into the text so the editor has focus (keyboard shortcuts then go to it). */
  async focus(): Promise<void> {
    // Click inside the editor's own box (its line layer may be scrolled partly out of view).
    await this.root.click({ position: { x: 300, y: 30 } });
  }

  /** Moves the cursor to `line` with Ctrl+G. */
  async goToLine(line: number): Promise<void> {
    await this.focus();
    await this.wb.page.keyboard.press('Control+G');
    const input = this.wb.page.locator('.quick-input-widget input.input');
    await input.waitFor({ state: 'visible', timeout: this.wb.wait(5000) });
    await input.fill(`:${line}`);
    await this.wb.page.keyboard.press('Enter');
  }

  /** The text of the rendered lines, top to bottom. */
  async lines(): Promise<string[]> {
    return this.root.evaluate((ed) => {
      const rows = Array.from(ed.querySelectorAll<HTMLElement>('.view-lines .view-line'));
      rows.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
      return rows.map((r) => r.innerText.replace(/\u00a0/g, ' '));
    });
  }

  /** After-line decoration texts (injected text and `::after`/`::before` contents), with their line numbers. */
  async decorations(): Promise<LineDecoration[]> {
    return this.root.evaluate((ed) => {
      const lineNumbers = Array.from(ed.querySelectorAll<HTMLElement>('.margin-view-overlays .line-numbers'));
      const byTop = new Map<number, number>();
      for (const ln of lineNumbers) {
        const top = Math.round((ln.closest('[style*="top"]') as HTMLElement | null)?.getBoundingClientRect().top ?? ln.getBoundingClientRect().top);
        const n = parseInt(ln.textContent ?? '', 10);
        if (!Number.isNaN(n)) byTop.set(top, n);
      }
      const lineOf = (el: Element): number => {
        const top = Math.round(el.closest('.view-line')?.getBoundingClientRect().top ?? el.getBoundingClientRect().top);
        let best = 0;
        let bestDist = Infinity;
        for (const [t, n] of byTop) {
          const d = Math.abs(t - top);
          if (d < bestDist) {
            bestDist = d;
            best = n;
          }
        }
        return best;
      };
      const out: { line: number; text: string }[] = [];
      const unquote = (c: string) => {
        if (!c || c === 'none' || c === 'normal') return '';
        try {
          return JSON.parse(c) as string;
        } catch {
          return c.replace(/^"|"$/g, '');
        }
      };
      for (const span of Array.from(ed.querySelectorAll<HTMLElement>('.view-lines .view-line span span'))) {
        for (const pseudo of ['::after', '::before']) {
          const text = unquote(getComputedStyle(span, pseudo).content);
          if (text) out.push({ line: lineOf(span), text });
        }
        // Injected text renders as its own span with a class naming the decoration.
        if (/\bced-/.test(span.className) && span.textContent) out.push({ line: lineOf(span), text: span.textContent });
      }
      return out;
    });
  }

  /** Waits for an after-line decoration whose text matches `re`. */
  async waitForDecoration(re: RegExp, timeoutMs = 60_000): Promise<LineDecoration> {
    timeoutMs = this.wb.wait(timeoutMs);
    const deadline = Date.now() + timeoutMs;
    let seen: LineDecoration[] = [];
    for (;;) {
      seen = await this.decorations().catch(() => seen);
      const hit = seen.find((d) => re.test(d.text));
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`no editor decoration matched ${re} within ${timeoutMs} ms; decorations: ${JSON.stringify(seen)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * The CodeLens links on screen, top to bottom: their title and the 1-based line they sit above (the
   * first rendered line below the lens).
   */
  async codeLenses(): Promise<{ title: string; line: number }[]> {
    return this.root.evaluate((ed) => {
      const numbers = Array.from(ed.querySelectorAll<HTMLElement>('.margin-view-overlays .line-numbers'))
        .map((ln) => ({ top: ln.getBoundingClientRect().top, n: parseInt(ln.textContent ?? '', 10) }))
        .filter((x) => !Number.isNaN(x.n))
        .sort((a, b) => a.top - b.top);
      return Array.from(ed.querySelectorAll<HTMLElement>('.codelens-decoration a'))
        .map((a) => {
          const r = a.getBoundingClientRect();
          const below = numbers.find((x) => x.top >= r.bottom - 2);
          return { title: (a.textContent ?? '').trim(), line: below?.n ?? 0, top: r.top };
        })
        .sort((a, b) => a.top - b.top)
        .map(({ title, line }) => ({ title, line }));
    });
  }

  /** Waits for the CodeLens `title` above `line` (1-based) and clicks it. */
  async clickCodeLens(line: number, title: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let seen: { title: string; line: number }[] = [];
    for (;;) {
      seen = await this.codeLenses().catch(() => seen);
      const index = seen.findIndex((l) => l.line === line && l.title === title);
      if (index >= 0) {
        // The links in DOM order may differ from their order on screen: find this one by its box.
        const links = this.root.locator('.codelens-decoration a', { hasText: title });
        const boxes = await links.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top));
        const sameTitle = seen.filter((l) => l.title === title);
        const rank = sameTitle.findIndex((l) => l.line === line);
        const order = boxes.map((top, i) => ({ top, i })).sort((a, b) => a.top - b.top);
        await links.nth(order[rank].i).click();
        return;
      }
      if (Date.now() > deadline) throw new Error(`no CodeLens "${title}" above line ${line} within ${timeoutMs} ms; lenses: ${JSON.stringify(seen)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Lines (1-based) that carry an error squiggle (a diagnostic of severity Error). */
  async errorSquiggleLines(): Promise<number[]> {
    return this.root.evaluate((ed) => {
      const numbers = Array.from(ed.querySelectorAll<HTMLElement>('.margin-view-overlays .line-numbers'))
        .map((ln) => ({ top: ln.getBoundingClientRect().top, n: parseInt(ln.textContent ?? '', 10) }))
        .filter((x) => !Number.isNaN(x.n));
      const lines = new Set<number>();
      for (const sq of Array.from(ed.querySelectorAll<HTMLElement>('.view-overlays .squiggly-error'))) {
        const top = sq.getBoundingClientRect().top;
        let best = { d: Infinity, n: 0 };
        for (const x of numbers) if (Math.abs(x.top - top) < best.d) best = { d: Math.abs(x.top - top), n: x.n };
        if (best.n) lines.add(best.n);
      }
      return Array.from(lines).sort((a, b) => a - b);
    });
  }

  /** Scrolls so that `line` is visible (Ctrl+G moves the cursor there). */
  async reveal(line: number): Promise<void> {
    await this.goToLine(line);
  }

  /** Hovers the end of a rendered line and returns the hover widget's text. */
  async hoverLine(line: number): Promise<string> {
    const row = this.root.locator('.view-lines .view-line').filter({ has: this.wb.page.locator('span') });
    const lineEls = await row.all();
    const tops = await Promise.all(lineEls.map((l) => l.evaluate((e) => parseFloat((e as HTMLElement).style.top))));
    const firstVisible = await this.root.evaluate((ed) => {
      const nums = Array.from(ed.querySelectorAll<HTMLElement>('.margin-view-overlays .line-numbers'))
        .map((n) => parseInt(n.textContent ?? '', 10))
        .filter((n) => !Number.isNaN(n));
      return Math.min(...nums);
    });
    const order = tops.map((t, i) => ({ t, i })).sort((a, b) => a.t - b.t);
    const target = order[line - firstVisible];
    if (!target) throw new Error(`line ${line} is not rendered`);
    const el = lineEls[target.i];
    const spans = el.locator('span span');
    await spans.last().hover();
    const hover = this.wb.page.locator('.monaco-hover:not(.hidden) .monaco-hover-content').first();
    await hover.waitFor({ state: 'visible', timeout: this.wb.wait(10_000) });
    return hover.innerText();
  }
}
