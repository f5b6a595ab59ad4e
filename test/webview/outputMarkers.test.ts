/**
 * The code's own stdout and stderr in the panel's output pane, in headless Chromium with the real panel
 * bundle: invisible and bidirectional characters are drawn as the panel's marker boxes (src/webview/reveal,
 * on src/common/invisibleChars) and never reach the page, so a RIGHT-TO-LEFT OVERRIDE cannot reorder the
 * line; a selection copies the output as the code wrote it; text streamed in chunks cut inside a surrogate
 * pair or in a run of markers shows as if it came whole; and a megabyte-long line full of markers costs
 * the page its length, not its length times its chunks (counted: characters put into the DOM).
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { WebviewToHost } from '../../src/common/protocol';
import type { TranscriptEvent } from '../../src/common/transcript';
import { revealInvisible } from '../../src/common/invisibleChars';
import { PanelPage } from './support/browser';
import { ev, hostState } from './support/fixtures';
import { usePanelBrowser } from './support/panelBrowser';

const SHOTS = '/tmp/h-streams-shots';
const RAW = /[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u{e0000}-\u{e007f}]/u;

function run(id: string, ...out: TranscriptEvent[]): TranscriptEvent[] {
  return [ev.turn(`t-${id}`, 'print'), ev.codeStart(id, 'local'), ev.codeDone(id, 'print(secret)\n'), ev.interpreting(id), ...out];
}

/** Copies a DOM selection made by `select` (a function body returning a Range) from the pane. */
async function copySelection(p: PanelPage, select: string): Promise<{ copied: string; selected: string }> {
  return p.page.evaluate(`(() => {
    const pre = document.querySelector('pre.output');
    const range = (() => { ${select} })();
    document.getSelection().removeAllRanges();
    document.getSelection().addRange(range);
    const data = new DataTransfer();
    pre.dispatchEvent(new ClipboardEvent('copy', { clipboardData: data, bubbles: true, cancelable: true }));
    return { copied: data.getData('text/plain'), selected: range.toString() };
  })()`);
}

describe("the code's own output in the panel: invisible and bidi characters as markers (headless Chromium)", function () {
  this.timeout(180_000);
  const ui = usePanelBrowser({ light: true });
  const last = (posted: WebviewToHost[], type: WebviewToHost['type']) => [...posted].reverse().find((m) => m.type === type);

  it('draws U+202E, U+200B and U+2067 as marker boxes, keeps the line in order, and copies the output as the code wrote it', async () => {
    mkdirSync(SHOTS, { recursive: true });
    const stdout = 'total: abc\u202edef ok\nuser\u200bname and \u2067isolated\u2069 end\n';
    const stderr = '\x1b[31mWarning\x1b[0m: \u202eevil\u200b\n';
    for (const [scheme, url] of [
      ['dark', ui.dark.url],
      ['light', ui.light.url],
    ] as const) {
      const p = await PanelPage.open(ui.browser, url, { width: 560, height: 700 }, scheme);
      await p.send({ type: 'init', protocol: 1, state: hostState() });
      await p.sendEvents([...run('c', ev.out('c', stdout), ev.out('c', stderr, 'stderr')), ev.completed('c'), ev.turnEnd('t-c')]);
      await p.settle();
      const pane = p.page.locator('pre.output');
      await pane.locator('.uc-mark').first().waitFor();
      await p.page.locator('.card.exec').screenshot({ path: join(SHOTS, `output-markers-${scheme}.png`) });
      if (scheme === 'light') {
        await p.page.close();
        continue;
      }

      const text = (await pane.textContent()) ?? '';
      assert.ok(!RAW.test(text), `no invisible character reaches the page: ${JSON.stringify(text)}`);
      assert.equal(await pane.innerText(), 'total: abc<U+202E>def ok\nuser<U+200B>name and <U+2067>isolated<U+2069> end\nWarning: <U+202E>evil<U+200B>\n');
      assert.equal(await pane.locator('.uc-mark').count(), 6, 'each character is a box of its own');
      assert.equal(await pane.locator('.uc-mark.uc-bidi').count(), 4, 'the bidi controls in the error colour');
      assert.equal(await pane.locator('.ansi-red-fg').innerText(), 'Warning', 'the colours still pass');
      assert.equal(
        await pane.locator('.uc-mark').first().getAttribute('title'),
        'RIGHT-TO-LEFT OVERRIDE: a bidirectional control, it reorders how the text around it is shown',
      );

      // The override reorders nothing: "def" after it reads left to right.
      const order: number[] = await p.page.evaluate(`(() => {
        const walker = document.createTreeWalker(document.querySelector('pre.output'), NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const i = n.data.indexOf('def ok');
          if (i < 0) continue;
          return [i, i + 1, i + 2].map((at) => {
            const r = document.createRange();
            r.setStart(n, at);
            r.setEnd(n, at + 1);
            return r.getBoundingClientRect().left;
          });
        }
        return [];
      })()`);
      assert.equal(order.length, 3, 'the text after the marker is found');
      assert.ok(order[0] < order[1] && order[1] < order[2], `d, e, f from left to right: ${order.join(', ')}`);

      // A selection across a marker copies the character it stands for, not the marker's text.
      const across = await copySelection(
        p,
        `const mark = pre.querySelector('.uc-mark');
         const r = document.createRange();
         r.setStart(mark.previousSibling, 'total: a'.length);
         r.setEnd(mark.nextSibling, 2);
         return r;`,
      );
      assert.equal(across.selected, 'bc<U+202E>de');
      assert.equal(across.copied, 'bc\u202ede');
      // Ends inside markers: a selection that takes any part of a marker takes its character.
      const inside = await copySelection(
        p,
        `const marks = pre.querySelectorAll('.uc-mark');
         const r = document.createRange();
         r.setStart(marks[1].firstChild, 3);
         r.setEnd(marks[2].firstChild, 2);
         return r;`,
      );
      assert.equal(inside.copied, '\u200bname and \u2067');
      // A selection that ends just before a marker leaves it out.
      const before = await copySelection(
        p,
        `const marks = pre.querySelectorAll('.uc-mark');
         const r = document.createRange();
         r.setStart(marks[1].nextSibling, 0);
         r.setEnd(marks[2].firstChild, 0);
         return r;`,
      );
      assert.equal(before.copied, 'name and ');

      await p.page.locator('.card.exec').getByRole('button', { name: 'Copy output' }).click();
      assert.equal((last(await p.posted(), 'copy') as { text: string }).text, `${stdout}Warning: \u202eevil\u200b\n`);
      assert.deepEqual(p.errors, []);
      await p.page.close();
    }
  });

  it('shows text streamed in chunks cut inside a surrogate pair, before a marker and inside a run as if it came whole', async () => {
    const chunks = [
      'tag \udb40', // U+E0041 (TAG LATIN CAPITAL LETTER A), cut between its two halves
      '\udc41 end\nsmile \ud83d',
      '\ude00 ok x',
      '\u200b', // a run of U+200B cut in three, the open line painted in between
      '\u200b',
      '\u200by',
      '\n10% \u202e',
      '\r20% \u2066', // a carriage return overwrites the open line and its marker
      '\u2069 done\n',
    ];
    const whole = chunks.join('');
    const shown = 'tag <U+E0041> end\nsmile \u{1f600} ok x<U+200B×3>y\n20% <U+2066><U+2069> done\n';
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 560, height: 700 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(run('s'));
    // One chunk a message, the page painting in between: what the pane shows after each.
    const frames = await p.deliverPerFrame<string>(
      p.batches(
        chunks.map((c) => ev.out('s', c)),
        1,
      ),
      `return document.querySelector('pre.output')?.innerText ?? '';`,
    );
    assert.equal(frames[1], 'tag <U+E0041> end\nsmile ', 'a pair completed is one character (its lone half is not drawn)');
    assert.equal(frames[3], 'tag <U+E0041> end\nsmile \u{1f600} ok x<U+200B>');
    assert.equal(frames[4], 'tag <U+E0041> end\nsmile \u{1f600} ok x<U+200B×2>', 'a run grows in place');
    assert.equal(frames[6], 'tag <U+E0041> end\nsmile \u{1f600} ok x<U+200B×3>y\n10% <U+202E>');
    const pane = p.page.locator('pre.output');
    assert.equal(await pane.innerText(), shown);
    assert.ok(!RAW.test((await pane.textContent()) ?? ''));
    assert.equal(await pane.locator('.uc-mark').count(), 4);
    const all = await copySelection(p, `const r = document.createRange(); r.selectNodeContents(pre); return r;`);
    assert.equal(all.copied, whole.replace('10% \u202e\r', ''));

    // The same output in one piece draws the same.
    await p.sendEvents([ev.completed('s'), ...run('w', ev.out('w', whole))]);
    await p.settle();
    assert.equal(await p.page.locator('pre.output').nth(1).innerText(), shown);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('draws a megabyte-long line full of markers in linear work and a bounded DOM', async () => {
    const CHUNK = 1024;
    const CHUNKS = 1024;
    // Every chunk: 64 pieces of 15 letters and a marker (a bidi control every fourth).
    const chunk = (i: number) => {
      let s = '';
      for (let k = 0; k < CHUNK / 16; k++) s += `${String(i).padStart(5, '0')}abcdefghij${k % 4 === 0 ? '\u202e' : '\u200b'}`;
      return s;
    };
    const chunks = Array.from({ length: CHUNKS }, (_, i) => chunk(i));
    const whole = chunks.join('');
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 560, height: 700 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(run('f'));
    await p.page.evaluate(() => {
      const w = window as unknown as { added: number };
      w.added = 0;
      new MutationObserver((records) => {
        for (const r of records) for (const n of Array.from(r.addedNodes)) w.added += n.textContent?.length ?? 0;
      }).observe(document.body, { childList: true, subtree: true });
    });
    await p.deliverPerFrame(
      p.batches(
        chunks.map((c) => ev.out('f', c)),
        8,
      ),
    );
    await p.settle();
    const pane = p.page.locator('pre.output');
    const shown = await pane.evaluate((pre) => pre.textContent ?? '');
    const added = await p.page.evaluate(() => (window as unknown as { added: number }).added);
    // Each character is put into the page about once (plus the short unsettled end of each paint), not once per chunk.
    assert.ok(added <= shown.length * 1.5, `${added} characters put into the page for ${shown.length} shown`);
    const expected = revealInvisible(whole);
    assert.ok(shown === expected, `the whole line, every character shown as its marker (${shown.length} shown, ${expected.length} expected)`);
    assert.ok(!RAW.test(shown));
    assert.equal(await pane.locator('.uc-mark').count(), 1000, 'a thousand boxes, then markers as plain text');
    const all = await copySelection(p, `const r = document.createRange(); r.selectNodeContents(pre); return r;`);
    assert.equal(all.copied.length, whole.length);
    assert.ok(all.copied === whole, 'copied as the code wrote it');
    // A selection that starts and ends inside the plain-text markers.
    const part = await copySelection(
      p,
      `const t = Array.from(pre.querySelectorAll('span, .out-blk')).flatMap((e) => Array.from(e.childNodes)).filter((n) => n.nodeType === 3).sort((a, b) => b.data.length - a.data.length)[0];
       const at = t.data.indexOf('<U+202E>', 1000);
       const r = document.createRange();
       r.setStart(t, at + 2);
       r.setEnd(t, at + 8 + 15 + 3);
       return r;`,
    );
    assert.match(part.copied, /^\u202e\d{5}abcdefghij\u200b$/u);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });
});
