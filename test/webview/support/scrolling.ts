/** Scrolling a long transcript in the panel's tests: a conversation to scroll, and what the view shows. */
import assert from 'node:assert/strict';
import type { TranscriptEvent } from '../../../src/common/transcript';
import type { PanelPage } from './browser';
import { ev } from './fixtures';

/** A conversation of `n` turns, each a prompt and a markdown answer streamed in a few pieces. */
export function conversation(n: number, from = 0): TranscriptEvent[] {
  const events: TranscriptEvent[] = [];
  for (let i = from; i < from + n; i++) {
    const text =
      `Order **A-${i}** is \`shipped\`.\n\nIt holds ${i % 7} items for a total of $${(i * 3.7).toFixed(2)}; ` +
      `the carrier expects it in ${i % 4} days.\n\n| field | value |\n|---|---:|\n| refunds | ${i % 3} |\n`;
    events.push(ev.turn(`t${i}`, `What is the status of order A-${i}?`));
    for (let k = 0; k < text.length; k += 40) events.push(ev.text(`m${i}`, text.slice(k, k + 40)));
    events.push(ev.textDone(`m${i}`, text), ev.done(`r${i}`, 900 + i, 120), ev.turnEnd(`t${i}`));
  }
  return events;
}

/** Wheel scrolling is animated: waits until the scroller has not moved for 300 ms. */
export async function settled(p: PanelPage, selector: string): Promise<void> {
  await p.page.evaluate(`new Promise((resolve) => {
    const s = document.querySelector(${JSON.stringify(selector)});
    let last = -1, since = performance.now();
    const check = () => {
      if (s.scrollTop !== last) { last = s.scrollTop; since = performance.now(); }
      if (performance.now() - since > 300) resolve(); else requestAnimationFrame(check);
    };
    check();
  })`);
}

/** The turn at the top of the transcript's view, and where its top is relative to the view's (run in the page). */
export const TOP_TURN = `(() => { const s = document.querySelector('.scroller'); const r = s.getBoundingClientRect();
  const t = document.elementFromPoint(r.left + 40, r.top + 2)?.closest('.turn');
  return [t ? t.dataset.turnId : '', t ? Math.round(t.getBoundingClientRect().top - r.top) : 0]; })()`;

/** The user reads further up a long transcript (wheel scrolling until it stops): the turn at the top. */
export async function readFurtherUp(p: PanelPage): Promise<[string, number]> {
  await p.page.mouse.move(260, 300);
  for (let i = 0; i < 6; i++) await p.page.mouse.wheel(0, -1000);
  await p.page.locator('.jump-latest').waitFor({ state: 'visible' });
  await settled(p, '.scroller');
  return (await p.page.evaluate(TOP_TURN)) as [string, number];
}

/** After a reload: the same turn at the top of the view, at the same offset; "Latest" offered; every turn in. */
export async function assertReadingAgain(p: PanelPage, before: [string, number], turns: number): Promise<void> {
  const after = (await p.page.evaluate(TOP_TURN)) as [string, number];
  assert.equal(after[0], before[0]);
  assert.ok(Math.abs(after[1] - before[1]) <= 2, `offset ${before[1]} -> ${after[1]}`);
  assert.ok(await p.page.locator('.jump-latest').isVisible(), '"Latest" is offered');
  assert.equal(await p.page.locator('.turn').count(), turns);
  assert.deepEqual(p.errors, []);
}

/** How far the transcript's view is from its bottom, in px (run in the page). */
export const GAP = `const s = document.querySelector('.scroller'); return Math.round(s.scrollHeight - s.scrollTop - s.clientHeight);`;
