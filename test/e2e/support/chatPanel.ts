/**
 * Page object of the CodeAct chat view inside the workbench. The view is a webview: its page lives in
 * nested iframes (`iframe.webview` -> `iframe#active-frame`), re-created when the view is hidden, so
 * every action finds the frame again. Selectors follow the roles and labels of src/webview/*.ts.
 */
import type { Frame, Locator } from 'playwright-core';
import type { Workbench } from './workbench';

/** The extension id the webview's host frame names in its URL. */
const EXTENSION_ID = 'codeact.codeact';

export type TurnStatus = 'running' | 'completed' | 'stopped' | 'failed';

export class ChatPanel {
  constructor(readonly wb: Workbench) {}

  private get page() {
    return this.wb.page;
  }

  /** The frame of the chat page, once its app has rendered (waits up to `timeoutMs`). */
  async frame(timeoutMs = 30_000): Promise<Frame> {
    timeoutMs = this.wb.wait(timeoutMs);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const f of this.page.frames()) {
        const parent = f.parentFrame();
        if (!parent || !parent.url().includes(`extensionId=${EXTENSION_ID}`)) continue;
        const ready = await f.evaluate(() => !!document.querySelector('#app .composer')).catch(() => false);
        if (ready) return f;
      }
      if (Date.now() > deadline)
        throw new Error(`the CodeAct chat webview did not render within ${timeoutMs} ms (no frame under an iframe of ${EXTENSION_ID} with #app .composer)`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async locator(selector: string): Promise<Locator> {
    return (await this.frame()).locator(selector);
  }

  /** The whole visible text of the chat page. */
  async text(): Promise<string> {
    return (await this.frame()).locator('#app').innerText();
  }

  /** Waits until the page's text matches `re`; returns the text. */
  async waitForText(re: RegExp, timeoutMs = 30_000): Promise<string> {
    timeoutMs = this.wb.wait(timeoutMs);
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      last = await this.text().catch(() => last);
      if (re.test(last)) return last;
      if (Date.now() > deadline) throw new Error(`the chat panel never showed ${re} within ${timeoutMs} ms; it shows:\n${last.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  /** The sidebar part holding the view (for screenshots and visibility). */
  get sidebar(): Locator {
    return this.page.locator('.part.sidebar');
  }

  // ---- empty state ----------------------------------------------------------------------------------

  async emptyState(): Promise<Locator> {
    return (await this.frame()).getByRole('region', { name: 'Get started' });
  }

  // ---- composer -----------------------------------------------------------------------------------

  /** Types a prompt into the input box and presses Enter. */
  async send(prompt: string): Promise<void> {
    const f = await this.frame();
    const input = f.locator('textarea.prompt-input');
    await input.click();
    await input.fill(prompt);
    await input.press('Enter');
  }

  async clickStop(): Promise<void> {
    const f = await this.frame();
    await f.getByRole('button', { name: 'Stop the running turn' }).click();
  }

  // ---- transcript ---------------------------------------------------------------------------------

  async turns(): Promise<Locator> {
    return (await this.frame()).locator('article.turn');
  }

  async turnCount(): Promise<number> {
    return (await this.turns()).count();
  }

  /**
   * Waits for turn `index` (0-based; -1 the last) to reach one of `statuses`; returns its status. A turn
   * may pass through another end state on its way (an `error` event marks it failed before
   * `codeact.turn.ended` says stopped), so an unwanted end state is returned only once it has held for 3 s.
   */
  async waitForTurn(index: number, statuses: TurnStatus[], timeoutMs = 60_000): Promise<TurnStatus> {
    const deadline = Date.now() + timeoutMs;
    let seen = '';
    let otherSince = 0;
    for (;;) {
      const f = await this.frame();
      seen = await f
        .evaluate((i) => {
          const turns = Array.from(document.querySelectorAll<HTMLElement>('article.turn'));
          const t = i < 0 ? turns[turns.length + i] : turns[i];
          return t?.dataset.status ?? '';
        }, index)
        .catch(() => seen);
      if ((statuses as string[]).includes(seen)) return seen as TurnStatus;
      if (['completed', 'stopped', 'failed'].includes(seen)) {
        otherSince ||= Date.now();
        if (Date.now() - otherSince > 3000) return seen as TurnStatus;
      } else {
        otherSince = 0;
      }
      if (Date.now() > deadline)
        throw new Error(
          `turn ${index} did not reach ${statuses.join('|')} within ${timeoutMs} ms (status: ${seen || 'no such turn'}); panel:\n${(await this.text().catch(() => '')).slice(-2500)}`,
        );
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  /** The execution cards (`section.card.exec`) of the last turn. */
  async lastTurnExecCards(): Promise<Locator> {
    return (await this.frame()).locator('article.turn').last().locator('section.card.exec');
  }

  /** Status (`writing`, `running`, `waiting`, `done`, `failed`, `stopped`) of the execution cards, in order. */
  async execStatuses(): Promise<string[]> {
    const f = await this.frame();
    return f.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('section.card.exec')).map((e) => e.dataset.status ?? ''));
  }

  /** The code shown in the last execution card. */
  async lastCode(): Promise<string> {
    const f = await this.frame();
    return f.evaluate(() => {
      const cards = document.querySelectorAll('section.card.exec pre.code');
      return (cards[cards.length - 1] as HTMLElement | undefined)?.innerText ?? '';
    });
  }

  /** Tool-call rows of the last execution card: name and status (`running`, `ok`, `error`, `stopped`). */
  async lastToolCalls(): Promise<{ name: string; status: string }[]> {
    const f = await this.frame();
    return f.evaluate(() => {
      const cards = document.querySelectorAll('section.card.exec');
      const card = cards[cards.length - 1];
      if (!card) return [];
      return Array.from(card.querySelectorAll<HTMLElement>('li.tool-call')).map((li) => ({
        name: li.querySelector('.tool-name')?.textContent ?? '',
        status: li.dataset.status ?? '',
      }));
    });
  }

  /** The output pane text of the last execution card. */
  async lastOutput(): Promise<string> {
    const f = await this.frame();
    return f.evaluate(() => {
      const cards = document.querySelectorAll('section.card.exec');
      const card = cards[cards.length - 1];
      return (card?.querySelector('.output-section') as HTMLElement | null)?.innerText ?? '';
    });
  }

  /** The final answers (`section.msg.assistant`) of the last turn. */
  async lastAnswer(): Promise<string> {
    const f = await this.frame();
    return f.evaluate(() => {
      const turns = document.querySelectorAll('article.turn');
      const t = turns[turns.length - 1];
      return Array.from(t?.querySelectorAll<HTMLElement>('section.msg.assistant') ?? [])
        .map((m) => m.innerText)
        .join('\n');
    });
  }

  // ---- approvals ----------------------------------------------------------------------------------

  /** The pending approval card, once it shows. */
  async waitForApproval(timeoutMs = 30_000): Promise<Locator> {
    const f = await this.frame();
    const card = f.locator('section.card.approval[data-status="pending"]').last();
    await card.waitFor({ state: 'visible', timeout: timeoutMs });
    return card;
  }

  /** Clicks a decision button ("Allow once", "Allow for this session", "Always allow", "Deny") on the pending card. */
  async decide(label: 'Allow once' | 'Allow for this session' | 'Always allow' | 'Deny'): Promise<void> {
    const card = await this.waitForApproval();
    await card.getByRole('button', { name: label, exact: true }).click();
  }

  // ---- session variables ---------------------------------------------------------------------------

  /** The header's "Session variables" toggle (braces icon, with a count badge). */
  async variablesToggle(): Promise<Locator> {
    return (await this.frame()).locator('button.variables-toggle');
  }

  /** The count badge on the toggle ('' when it shows none). */
  async variablesBadge(): Promise<string> {
    return ((await (await this.variablesToggle()).locator('.badge-count').textContent()) ?? '').trim();
  }

  /** Opens the variables section with the header toggle (when closed); returns the section. */
  async openVariables(timeoutMs = 60_000): Promise<Locator> {
    const toggle = await this.variablesToggle();
    await toggle.waitFor({ state: 'visible', timeout: timeoutMs });
    if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
    const section = (await this.frame()).locator('section.variables-panel');
    await section.waitFor({ state: 'visible', timeout: timeoutMs });
    return section;
  }

  /** The rows of the variables section: name, type, summary. */
  async variables(): Promise<{ name: string; type: string; summary: string }[]> {
    const f = await this.frame();
    return f.evaluate(() =>
      Array.from(document.querySelectorAll<HTMLElement>('section.variables-panel tr[data-name]')).map((tr) => ({
        name: tr.dataset.name ?? '',
        type: tr.querySelector('.var-type')?.textContent ?? '',
        summary: tr.querySelector('.var-summary')?.textContent ?? '',
      })),
    );
  }

  /** The text of the variables section (its label, the empty note). */
  async variablesText(): Promise<string> {
    return (await this.frame()).locator('section.variables-panel').innerText();
  }

  /** The section's header: its title, the session's name beside it, and its buttons' labels. */
  async variablesHeader(): Promise<{ title: string; source: string; buttons: string[] }> {
    const f = await this.frame();
    return f.evaluate(() => {
      const head = document.querySelector('section.variables-panel .variables-head');
      return {
        title: (head?.querySelector('.variables-title')?.textContent ?? '').trim(),
        source: (head?.querySelector('.variables-source')?.textContent ?? '').trim(),
        buttons: Array.from(head?.querySelectorAll('button') ?? []).map((b) => b.getAttribute('aria-label') ?? b.textContent?.trim() ?? ''),
      };
    });
  }

  /** Waits until the variables rows satisfy `check`; returns them. */
  async waitForVariables(
    check: (rows: { name: string; type: string; summary: string }[]) => boolean,
    what: string,
    timeoutMs = 60_000,
  ): Promise<{ name: string; type: string; summary: string }[]> {
    const deadline = Date.now() + timeoutMs;
    let rows: { name: string; type: string; summary: string }[] = [];
    for (;;) {
      rows = await this.variables().catch(() => rows);
      if (check(rows)) return rows;
      if (Date.now() > deadline)
        throw new Error(
          `the variables view never showed ${what} within ${timeoutMs} ms; rows: ${JSON.stringify(rows)}; text: ${await this.variablesText().catch(() => '?')}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Clicks the section's restart button ("Restart session"). */
  async clickRestartSession(): Promise<void> {
    await (await this.frame()).locator('section.variables-panel').getByRole('button', { name: 'Restart session' }).click();
  }

  // ---- layout -------------------------------------------------------------------------------------

  /**
   * Scrolls the transcript to the first (or last) element matching `selector` as a user does: the wheel
   * first, so the view stops following the bottom instead of going back there.
   */
  async scrollTo(selector: string, which: 'first' | 'last' = 'first'): Promise<void> {
    const f = await this.frame();
    await f.evaluate(
      ([sel, w]) => {
        const all = document.querySelectorAll(sel);
        const el = w === 'last' ? all[all.length - 1] : all[0];
        if (!el) throw new Error(`nothing matches ${sel}`);
        document.querySelector('.scroller')?.dispatchEvent(new WheelEvent('wheel', { deltaY: -120, bubbles: true }));
        el.scrollIntoView({ block: 'start' });
      },
      [selector, which] as const,
    );
    await f.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  }

  /**
   * Controls and cards that do not fit: sticking out of the page's width, or out of the box that holds
   * them (composer, notice, card). Each entry names the element and by how many pixels it overflows.
   */
  async overflowing(): Promise<string[]> {
    const f = await this.frame();
    return f.evaluate(() => {
      const width = document.documentElement.clientWidth;
      const out: string[] = [];
      const describe = (el: Element) => {
        const text = (el.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 40);
        return `${el.tagName.toLowerCase()}.${Array.from(el.classList).join('.')}${text ? ` "${text}"` : ''}`;
      };
      const boxes = '.input-box, .notice, .card, .step, .trust-warning, .empty-state';
      for (const el of Array.from(document.querySelectorAll('button, select, textarea, .notice, .card, .step, .trust-warning'))) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) continue; // hidden
        if (r.right > width + 0.5) out.push(`${describe(el)} sticks out of the page by ${Math.round(r.right - width)} px`);
        const box = el.parentElement?.closest(boxes);
        if (box) {
          const b = box.getBoundingClientRect();
          if (r.right > b.right + 0.5) out.push(`${describe(el)} sticks out of ${describe(box).split(' ')[0]} by ${Math.round(r.right - b.right)} px`);
        }
      }
      return out;
    });
  }

  // ---- history ------------------------------------------------------------------------------------

  /** Opens the history dialog (header button) and returns its entries once listed: title and "1 turn · …" line. */
  async history(timeoutMs = 60_000): Promise<{ title: string; meta: string; current: boolean }[]> {
    const f = await this.frame();
    if (await f.locator('aside.history-panel').isHidden()) await f.getByRole('button', { name: 'Conversation history' }).click();
    await f.locator('aside.history-panel li.history-item').first().waitFor({ state: 'visible', timeout: timeoutMs });
    return f.evaluate(() =>
      Array.from(document.querySelectorAll('aside.history-panel li.history-item')).map((li) => ({
        title: li.querySelector('.history-name')?.textContent ?? '',
        meta: li.querySelector('.history-meta')?.textContent ?? '',
        current: li.classList.contains('current'),
      })),
    );
  }

  async closeHistory(): Promise<void> {
    const f = await this.frame();
    if (await f.locator('aside.history-panel').isVisible()) await f.getByRole('button', { name: 'Close history' }).click();
  }

  // ---- notices ------------------------------------------------------------------------------------

  /** Notices at the top of the panel (`.notices .notice`): text and buttons. */
  async notices(): Promise<{ text: string; buttons: string[] }[]> {
    const f = await this.frame();
    return f.evaluate(() =>
      Array.from(document.querySelectorAll<HTMLElement>('.notices .notice')).map((n) => ({
        text: n.querySelector('.notice-text')?.textContent ?? '',
        buttons: Array.from(n.querySelectorAll<HTMLButtonElement>('button')).map((b) => b.textContent?.trim() || b.getAttribute('aria-label') || ''),
      })),
    );
  }
}
