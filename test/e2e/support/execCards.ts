/**
 * What the execution cards of the chat view show, read from the webview's DOM: status, code, tool rows
 * (real calls and the quieter tool-discovery lookups, told apart by the row's class), output and the
 * tools section's label. Selectors follow src/webview/execCard.ts.
 */
import type { ChatPanel } from './chatPanel';

export interface ToolRow {
  /** The call's name (`data-name`): a managed tool, or a reserved `codeact.*` discovery call. */
  name: string;
  kind: 'tool' | 'discovery';
  /** `running`, `ok`, `error`, `stopped`. */
  status: string;
  /** The row as a user reads it ("searched tools: …", "search_catalog (query=…)"). */
  text: string;
}

export interface ExecCardView {
  status: string;
  code: string;
  toolsLabel: string;
  tools: ToolRow[];
  /** The text of the output pane (without its label). */
  output: string;
}

/** The execution cards of turn `index` (-1: the last), in order. */
export async function execCards(panel: ChatPanel, index = -1): Promise<ExecCardView[]> {
  const f = await panel.frame();
  return f.evaluate((i) => {
    const turns = Array.from(document.querySelectorAll('article.turn'));
    const turn = i < 0 ? turns[turns.length + i] : turns[i];
    if (!turn) return [];
    return Array.from(turn.querySelectorAll<HTMLElement>('section.card.exec')).map((card) => ({
      status: card.dataset.status ?? '',
      code: (card.querySelector('pre.code') as HTMLElement | null)?.innerText ?? '',
      toolsLabel: (card.querySelector('.tools-section .section-label')?.textContent ?? '').trim(),
      tools: Array.from(card.querySelectorAll<HTMLElement>('li.tool-call')).map((li) => ({
        name: li.dataset.name ?? '',
        kind: li.classList.contains('discovery') ? ('discovery' as const) : ('tool' as const),
        status: li.dataset.status ?? '',
        text: ((li.querySelector(':scope > details > summary') as HTMLElement | null)?.innerText ?? '').replace(/\s+/g, ' ').trim(),
      })),
      output: (card.querySelector('.output-section .output-pane') as HTMLElement | null)?.innerText ?? '',
    }));
  }, index);
}

/** The warning and info lines (`.notice-line`) of turn `index` (-1: the last). */
export async function noticeLines(panel: ChatPanel, index = -1): Promise<string[]> {
  const f = await panel.frame();
  return f.evaluate((i) => {
    const turns = Array.from(document.querySelectorAll('article.turn'));
    const turn = i < 0 ? turns[turns.length + i] : turns[i];
    return Array.from(turn?.querySelectorAll<HTMLElement>('.notice-line') ?? []).map((n) => n.innerText.trim());
  }, index);
}

/**
 * Scrolls the chat view with the mouse wheel, as a user does, until element `nth` (-1: the last) matching
 * `selector` in turn `turn` (-1: the last) sits near the top of the view. (A programmatic scroll would be undone: the transcript
 * sticks to its bottom until the user scrolls.)
 */
export async function wheelTo(panel: ChatPanel, selector: string, nth = 0, turn = -1): Promise<void> {
  const box = await panel.sidebar.boundingBox();
  if (!box) throw new Error('the sidebar is not visible');
  await panel.wb.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  for (let i = 0; i < 60; i++) {
    const f = await panel.frame();
    const top = await f.evaluate(
      ([sel, n, t]) => {
        const turns = document.querySelectorAll('article.turn');
        const all = Array.from(turns[t < 0 ? turns.length + t : t]?.querySelectorAll(sel) ?? []);
        return (n < 0 ? all[all.length + n] : all[n])?.getBoundingClientRect().top ?? null;
      },
      [selector, nth, turn] as const,
    );
    if (top === null) throw new Error(`no ${selector} (${nth}) in turn ${turn}`);
    const delta = top - 48;
    if (Math.abs(delta) < 24) return;
    await panel.wb.page.mouse.wheel(0, Math.max(-600, Math.min(600, delta)));
    await panel.wb.page.waitForTimeout(120);
  }
}
