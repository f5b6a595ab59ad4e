/**
 * Page object of the VS Code workbench served by code-server (GitLens style: the tests say what a
 * user does, this file knows the DOM): the command palette, Quick Open, notifications, the Workspace
 * Trust dialog, and screenshots.
 */
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { CHROMIUM, artifactPath } from './env';
import { waitUntil } from './procs';

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
}

export interface Notification {
  message: string;
  buttons: string[];
}

export class Workbench {
  /**
   * The shortest wait for a UI condition, in ms: the helpers here and in Editor and ChatPanel wait at least
   * this long. CI machines are small and shared (a busy one once took 15 s to show the command palette),
   * so a condition gets a minute before it counts as failed; waits that expect nothing pass their own time.
   */
  minWaitMs = 60_000;

  private constructor(readonly page: Page) {}

  /** `ms`, raised to `minWaitMs`. */
  wait(ms: number): number {
    return Math.max(ms, this.minWaitMs);
  }

  /** Opens `url` in a fresh browser context and waits for the workbench and its extension host. */
  static async open(browser: Browser, url: string): Promise<Workbench> {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
    // The web workbench reads and writes the clipboard; let it.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(url).origin });
    // tsx compiles this suite with esbuild's keepNames, so functions passed to `evaluate` may call a
    // `__name` helper; give every frame (the webviews' too) a no-op one.
    await context.addInitScript({ content: 'globalThis.__name = globalThis.__name || ((f) => f);' });
    const page = await context.newPage();
    const wb = new Workbench(page);
    await page.goto(url);
    await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    await page.waitForSelector('.part.statusbar', { timeout: 60_000 });
    return wb;
  }

  async close(): Promise<void> {
    await this.page.context().close();
  }

  // ---- Workspace Trust ------------------------------------------------------------------------

  /** The "Do you trust the authors…" dialog, if it shows within `timeoutMs`. */
  async trustDialog(timeoutMs = 15_000): Promise<Locator | undefined> {
    const dialog = this.page.locator('.monaco-dialog-box').filter({ hasText: 'trust the authors' });
    try {
      await dialog.waitFor({ state: 'visible', timeout: timeoutMs });
      return dialog;
    } catch {
      return undefined;
    }
  }

  /** Answers the trust dialog with "Yes, I trust the authors" (a user who trusts this folder). */
  async trustFolder(): Promise<void> {
    const dialog = await this.trustDialog(this.wait(15_000));
    if (!dialog) throw new Error('the Workspace Trust dialog did not show');
    await dialog.getByRole('button', { name: 'Yes, I trust the authors' }).click();
    await dialog.waitFor({ state: 'hidden', timeout: this.wait(10_000) });
  }

  /** Whether the status bar shows "Restricted Mode". */
  async inRestrictedMode(): Promise<boolean> {
    return (await this.page.locator('.part.statusbar').innerText()).includes('Restricted Mode');
  }

  // ---- commands -------------------------------------------------------------------------------

  get quickInput(): Locator {
    return this.page.locator('.quick-input-widget');
  }

  /** Runs a command from the palette like a user: F1, type the title, pick the row, Enter. */
  async runCommand(title: string): Promise<void> {
    await this.dismissQuickInput();
    await this.page
      .locator('.monaco-workbench')
      .focus()
      .catch(() => undefined);
    await this.page.keyboard.press('F1');
    await this.quickInput.waitFor({ state: 'visible', timeout: this.wait(10_000) });
    const rows = this.quickInput.locator('.monaco-list-row').filter({ hasText: title });
    if (!(await this.filterPalette(title, this.wait(15_000)))) throw new Error(`the command palette never listed "${title}"`);
    // Pick the row whose label is exactly the title ("View: Close Editor", not "… Editor Group"). The list
    // may still be filtering as the rows are read (a row found then is gone or hidden a moment later): read
    // them again until the click lands.
    await waitUntil(
      async () => {
        // Something took the focus and closed the palette (a notification, a dialog, a busy window): open it again.
        if (!(await this.quickInput.isVisible().catch(() => false))) {
          await this.page.keyboard.press('F1');
          await this.filterPalette(title, this.wait(5_000));
        }
        const labels = await rows.evaluateAll((els) => els.map((e) => (e.querySelector('.label-name') as HTMLElement | null)?.innerText.trim() ?? ''));
        // The palette is open but no longer lists it (its text was replaced, or it reopened in another mode): type it again.
        const typed = await this.quickInput
          .locator('input.input')
          .inputValue({ timeout: 1_000 })
          .catch(() => '');
        if (!labels.length || typed !== `>${title}`) {
          await this.filterPalette(title, this.wait(5_000));
          return false;
        }
        const exact = labels.indexOf(title);
        return rows
          .nth(exact >= 0 ? exact : 0)
          .click({ timeout: 2_000 })
          .then(() => true)
          .catch(() => false);
      },
      this.wait(30_000),
      () => `could not pick "${title}" in the command palette`,
      250,
    );
    // The palette closes, or the command opens a quick pick of its own in the same widget (its input no
    // longer holds ">title").
    await this.page
      .waitForFunction(
        (typed) => {
          const widget = document.querySelector<HTMLElement>('.quick-input-widget');
          const input = widget?.querySelector<HTMLInputElement>('input.input');
          if (!widget) return true;
          const r = widget.getBoundingClientRect();
          const hidden = r.width === 0 || r.height === 0 || getComputedStyle(widget).visibility === 'hidden';
          return hidden || input?.value !== typed;
        },
        `>${title}`,
        { timeout: this.wait(10_000), polling: 100 },
      )
      .catch(() => undefined);
  }

  /** Whether the palette lists a command with this title (e.g. to see an extension's commands arrive). */
  async hasCommand(title: string, timeoutMs = 15_000): Promise<boolean> {
    await this.dismissQuickInput();
    await this.page.keyboard.press('F1');
    await this.quickInput.waitFor({ state: 'visible', timeout: this.wait(10_000) });
    const found = await this.filterPalette(title, timeoutMs);
    await this.dismissQuickInput();
    return found;
  }

  /**
   * Types `>title` in the open command palette until a row with `title` shows; false after `timeoutMs`.
   * The palette lists the commands registered when its filter changes, and the first time it opens it
   * waits only 800 ms for the extensions to be registered (VS Code's commandsQuickAccess.ts,
   * `extensionRegistrationRace`): opened before that, it never lists an extension's commands for this
   * text, however long one waits. So the filter is typed again (">" first: the same text is no change)
   * until the row shows, waiting twice as long each time (a busy machine may be slow to list them).
   */
  private async filterPalette(title: string, timeoutMs: number): Promise<boolean> {
    const input = this.quickInput.locator('input.input');
    const row = this.quickInput.locator('.monaco-list-row').filter({ hasText: title }).first();
    const deadline = Date.now() + timeoutMs;
    for (let each = 2_000; ; each *= 2) {
      if (each > 2_000) await input.fill('>');
      await input.fill(`>${title}`);
      const shown = await row.waitFor({ state: 'visible', timeout: Math.max(1, Math.min(each, deadline - Date.now())) }).then(
        () => true,
        () => false,
      );
      if (shown) return true;
      if (Date.now() >= deadline) return false;
    }
  }

  /**
   * When a quick pick titled `title` is open (a command asking which item), picks the row that contains
   * `row` and returns true; returns false at once when none is open.
   */
  async answerQuickPick(title: string | RegExp, row: string): Promise<boolean> {
    const titleEl = this.quickInput.locator('.quick-input-title', { hasText: title });
    if (!(await titleEl.isVisible().catch(() => false))) return false;
    const rows = this.quickInput.locator('.monaco-list-row:visible', { hasText: row });
    await rows.first().click();
    // The pick is answered when its rows go: the widget hides, or the command's next step (an input box)
    // reuses it at once, too quickly to be seen hidden.
    await waitUntil(
      async () => !(await this.quickInput.isVisible().catch(() => false)) || (await rows.count()) === 0,
      60_000,
      () => `the quick pick "${String(title)}" stayed open after picking ${row}`,
      100,
    );
    return true;
  }

  /**
   * Applies a colour theme through "Preferences: Color Theme" like a user, and waits until the workbench
   * shows it (`vs` light, `vs-dark` dark, `hc-black`/`hc-light` high contrast, on .monaco-workbench).
   */
  async setColorTheme(label: string, kind: 'vs' | 'vs-dark' | 'hc-black' | 'hc-light', timeoutMs = 60_000): Promise<void> {
    await this.runCommand('Preferences: Color Theme');
    await this.quickInput.waitFor({ state: 'visible', timeout: timeoutMs });
    const input = this.quickInput.locator('input.input');
    await input.fill(label);
    const rows = this.quickInput.locator('.monaco-list-row').filter({ hasText: label });
    await rows.first().waitFor({ state: 'visible', timeout: timeoutMs });
    const labels = await rows.evaluateAll((els) => els.map((e) => (e.querySelector('.label-name') as HTMLElement | null)?.innerText.trim() ?? ''));
    const exact = labels.indexOf(label);
    await rows.nth(exact >= 0 ? exact : 0).click();
    await this.quickInput.waitFor({ state: 'hidden', timeout: timeoutMs }).catch(() => undefined);
    await this.page.locator(`.monaco-workbench.${kind}`).first().waitFor({ timeout: timeoutMs });
  }

  // ---- layout ---------------------------------------------------------------------------------

  /** The primary sidebar's width in CSS pixels. */
  async sidebarWidth(): Promise<number> {
    return this.page.locator('.part.sidebar').evaluate((el) => Math.round(el.getBoundingClientRect().width));
  }

  /**
   * Drags the sash on the sidebar's right edge like a user, until the sidebar is `width` px wide (VS Code
   * keeps it within its own limits, 170 px and up); returns the width it got.
   */
  async setSidebarWidth(width: number): Promise<number> {
    const sidebar = await this.page.locator('.part.sidebar').boundingBox();
    if (!sidebar) throw new Error('the primary sidebar is not visible');
    const edge = sidebar.x + sidebar.width;
    const sash = await this.page.locator('.monaco-sash.vertical').evaluateAll((els, x) => {
      for (const el of els) {
        const r = el.getBoundingClientRect();
        if (r.width > 0 && r.height > 200 && Math.abs(r.left + r.width / 2 - x) <= 4) return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
      }
      return undefined;
    }, edge);
    if (!sash) throw new Error(`no vertical sash at the sidebar's right edge (x = ${edge})`);
    const mouse = this.page.mouse;
    await mouse.move(sash.x, sash.y);
    await mouse.down();
    await mouse.move((sash.x + sidebar.x + width) / 2, sash.y, { steps: 5 });
    await mouse.move(sidebar.x + width, sash.y, { steps: 5 });
    await mouse.up();
    return this.sidebarWidth();
  }

  async dismissQuickInput(): Promise<void> {
    if (await this.quickInput.isVisible().catch(() => false)) {
      await this.page.keyboard.press('Escape');
      await this.quickInput.waitFor({ state: 'hidden', timeout: this.wait(5000) }).catch(() => undefined);
    }
  }

  /** Opens a workspace file with Quick Open (Ctrl+P), and waits for its editor tab. */
  async openFile(relativePath: string): Promise<void> {
    await this.dismissQuickInput();
    const name = relativePath.split('/').pop()!;
    await this.page.keyboard.press('F1');
    await this.quickInput.waitFor({ state: 'visible', timeout: this.wait(10_000) });
    await this.quickInput.locator('input.input').fill(relativePath);
    const row = this.quickInput.locator('.monaco-list-row').filter({ hasText: name }).first();
    await row.waitFor({ state: 'visible', timeout: this.wait(20_000) });
    await row.click();
    await this.page
      .locator(`.tabs-container .tab[aria-label^="${name}"], .tabs-container .tab:has-text("${name}")`)
      .first()
      .waitFor({ timeout: this.wait(15_000) });
    await this.page
      .locator('.editor-group-container.active .monaco-editor .view-lines')
      .first()
      .waitFor({ timeout: this.wait(15_000) });
  }

  // ---- notifications ----------------------------------------------------------------------------

  private get toasts(): Locator {
    return this.page.locator('.notifications-toasts .notification-toast');
  }

  /** The notification toasts on screen: message and button labels. */
  async notifications(): Promise<Notification[]> {
    const out: Notification[] = [];
    for (const t of await this.toasts.all()) {
      const message = (
        await t
          .locator('.notification-list-item-message')
          .innerText()
          .catch(() => '')
      ).trim();
      const buttons = (await t.locator('.notification-list-item-buttons-container .monaco-button').allInnerTexts()).map((s) => s.trim()).filter(Boolean);
      out.push({ message, buttons });
    }
    return out;
  }

  /** Waits for a toast whose message matches `re`; returns its locator. */
  async waitForNotification(re: RegExp, timeoutMs = 20_000): Promise<Locator> {
    const toast = this.toasts.filter({ has: this.page.locator('.notification-list-item-message', { hasText: re }) }).first();
    await toast.waitFor({ state: 'visible', timeout: this.wait(timeoutMs) });
    // Let the fade-in finish so screenshots show it fully.
    await this.page
      .locator(
        '.notifications-toasts .notification-toast-container.notification-fade-in-done, .notifications-toasts .notification-toast.notification-fade-in-done',
      )
      .first()
      .waitFor({ timeout: 2000 })
      .catch(() => undefined);
    await this.page.waitForTimeout(300);
    return toast;
  }

  async clearNotifications(): Promise<void> {
    for (const t of await this.toasts.all()) {
      await t.hover().catch(() => undefined);
      await t
        .locator('.codicon-notifications-clear, .codicon-close')
        .first()
        .click({ timeout: 2000 })
        .catch(() => undefined);
    }
  }

  // ---- output panel -------------------------------------------------------------------------------

  /** The text shown in the editor's visible lines (for output channels, in the panel). */
  async panelText(): Promise<string> {
    return (await this.page.locator('.part.panel').innerText()).replace(/\u00a0/g, ' ');
  }

  /**
   * Closes the active editor tab as a user does, with its close button (Ctrl+W goes to the browser); through
   * the palette when the tab shows none.
   */
  async closeActiveEditor(): Promise<void> {
    await this.dismissQuickInput();
    const tab = this.page.locator('.part.editor .tabs-container .tab.active').first();
    const close = tab.locator('.tab-actions .action-label').first();
    if ((await tab.count()) && (await close.count())) {
      const label = (await tab.getAttribute('aria-label')) ?? '';
      await tab.hover().catch(() => undefined);
      await close.click({ timeout: this.wait(10_000) });
      const same = this.page
        .locator('.part.editor .tabs-container .tab')
        .filter({ has: this.page.locator(`xpath=self::*[@aria-label=${JSON.stringify(label)}]`) });
      await waitUntil(
        async () => (await same.count()) === 0,
        this.wait(10_000),
        () => `the editor "${label}" did not close`,
        200,
      );
      return;
    }
    await this.runCommand('View: Close Editor');
  }

  /**
   * VS Code's own activation time of an extension, from "Developer: Show Running Extensions"
   * (loading the bundle plus `activate`), in ms; undefined when the editor does not list it.
   */
  async activationTime(displayName: string, timeoutMs = 15_000): Promise<number | undefined> {
    await this.runCommand('Developer: Show Running Extensions');
    const editor = this.page.locator('.runtime-extensions-editor').first();
    const re = new RegExp(`(?:^|\\n)${displayName}\\n[^\\n]*\\n[^\\n]*\\n(?:Startup )?Activation: (\\d+)ms`);
    const deadline = Date.now() + timeoutMs;
    let ms: number | undefined;
    while (Date.now() < deadline && ms === undefined) {
      const m = re.exec(await editor.innerText().catch(() => ''));
      if (m) ms = Number(m[1]);
      else await this.page.waitForTimeout(250);
    }
    await this.screenshot('01c-running-extensions').catch(() => undefined);
    await this.closeActiveEditor();
    return ms;
  }

  async screenshot(name: string): Promise<string> {
    const path = artifactPath(name);
    await this.page.screenshot({ path });
    return path;
  }
}
