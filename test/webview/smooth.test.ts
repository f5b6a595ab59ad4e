/**
 * The panel stays smooth with long outputs and long conversations, in a real browser: a virtualised output
 * pane, following the bottom without reading layout per frame (and holding still when the user scrolled
 * up), latest-first reopening, the scroll position across reloads, and markdown sanitised once per block.
 * These tests assert behaviour, never timings (speed is the benchmark's job: `npm run bench -- --only webview`).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { ResetMessage, WebviewToHost } from '../../src/common/protocol';
import type { TranscriptEvent } from '../../src/common/transcript';
import { PanelPage } from './support/browser';
import { demoTurn, ev, hostState } from './support/fixtures';
import { GAP, assertReadingAgain, conversation, readFurtherUp, settled } from './support/scrolling';
import { usePanelBrowser } from './support/panelBrowser';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

describe('a panel that never stutters (headless Chromium)', function () {
  this.timeout(180_000);
  const ui = usePanelBrowser({ light: true, artifacts: ARTIFACTS });

  const open = (viewport?: { width: number; height: number }) => PanelPage.open(ui.browser, ui.dark.url, viewport);
  const last = (posted: WebviewToHost[], type: WebviewToHost['type']) => [...posted].reverse().find((m) => m.type === type);

  it('keeps 100k lines of output in a few DOM nodes; every held line stays reachable, selectable and copyable', async () => {
    const p = await open({ width: 560, height: 900 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const N = 100_000;
    const events = [ev.turn('t', 'print a lot'), ev.codeStart('c', 'local'), ev.codeDone('c', 'for i in range(100_000): log(i)'), ev.interpreting('c')];
    for (let i = 0; i < N; i++) {
      const line = i % 10 === 0 ? `\x1b[32m[${i}]\x1b[0m processed order A-${i}\n` : `[${i}] processed order A-${i}\n`;
      events.push(ev.out('c', line, i % 50 === 49 ? 'stderr' : 'stdout'));
    }
    events.push(ev.completed('c'), ev.turnEnd('t'));
    await p.deliverPerFrame(p.batches(events, 1000));
    await p.settle();

    const pane = p.page.locator('pre.output');
    const dom = () => pane.evaluate((pre) => ({ elements: pre.getElementsByTagName('*').length, text: pre.textContent ?? '' }));
    const atEnd = await dom();
    assert.ok(atEnd.elements < 100, `the pane holds ${atEnd.elements} elements for 100k lines`);
    assert.match(atEnd.text, /\[99999\] processed order A-99999\n$/, 'the last line is on screen');
    assert.equal(await p.page.locator('.output-pane').getAttribute('data-total-lines'), String(N));
    assert.ok(await pane.evaluate((pre) => pre.scrollHeight - pre.scrollTop - pre.clientHeight <= 1), 'the pane shows its last line');

    // Everything the pane holds, as text: "Copy output".
    const card = p.page.locator('.card.exec');
    await card.getByRole('button', { name: 'Copy output' }).click();
    const all = (last(await p.posted(), 'copy') as { text: string }).text;
    const lines = all.split('\n');
    assert.equal(lines.pop(), '');
    assert.ok(lines.length >= 2000 - 32 && lines.length <= 2000 + 32, `${lines.length} lines held (the model keeps 2,000; the pane drops whole blocks of 32)`);
    assert.equal(lines[lines.length - 1], '[99999] processed order A-99999');
    assert.ok(!all.includes('\x1b'), 'copied as plain text, without escape sequences');
    const first = lines[0];
    assert.match(first, /^\[9\d{4}\] processed order A-9\d{4}$/);

    // The top of what the pane holds is one key away, and the DOM stays small on the way.
    await pane.focus();
    await p.page.keyboard.press('Home');
    await p.page.waitForFunction((text) => document.querySelector('pre.output')!.textContent!.includes(text), `${first}\n`);
    assert.ok((await dom()).elements < 100);
    assert.ok(await p.page.locator('.jump-latest').isHidden(), 'scrolling inside the pane leaves the transcript alone');

    // Select all inside the pane, then copy: the text of every held line, shown or not.
    await p.page.keyboard.press('Control+a');
    const selection = await p.page.evaluate(() => {
      const sel = document.getSelection()!;
      return { inPane: document.querySelector('pre.output')!.contains(sel.anchorNode), text: sel.toString().length };
    });
    assert.ok(selection.inPane, 'Ctrl+A selects the pane, not the page');
    const copied = await p.page.evaluate(() => {
      const data = new DataTransfer();
      document.querySelector('pre.output')!.dispatchEvent(new ClipboardEvent('copy', { clipboardData: data, bubbles: true, cancelable: true }));
      return data.getData('text/plain');
    });
    assert.equal(copied, all);
    assert.ok(selection.text < all.length, 'the DOM selection itself covers only what is rendered');

    // A mouse selection inside the pane copies exactly what it covers.
    const partial = await p.page.evaluate(() => {
      const pre = document.querySelector('pre.output')!;
      const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
      const texts: Text[] = [];
      for (let n = walker.nextNode(); n; n = walker.nextNode()) texts.push(n as Text);
      const a = texts[0];
      const b = texts[Math.min(texts.length - 1, 3)];
      const range = document.createRange();
      range.setStart(a, 1);
      range.setEnd(b, Math.min(5, b.data.length));
      document.getSelection()!.removeAllRanges();
      document.getSelection()!.addRange(range);
      const data = new DataTransfer();
      pre.dispatchEvent(new ClipboardEvent('copy', { clipboardData: data, bubbles: true, cancelable: true }));
      return { copied: data.getData('text/plain'), selected: range.toString() };
    });
    assert.equal(partial.copied, partial.selected);

    const banner = p.page.locator('.output-banner');
    assert.match(await banner.innerText(), /98,\d{3} earlier lines not shown/);
    await banner.getByRole('button', { name: 'Open full output' }).click();
    assert.deepEqual(last(await p.posted(), 'openFullOutput'), { type: 'openFullOutput', itemId: 'c' });
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('an output pane follows its last line while output streams, and holds still once the user scrolls it up', async () => {
    const p = await open({ width: 560, height: 900 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([ev.turn('t', 'count'), ev.codeStart('c', 'local'), ev.codeDone('c', 'count()'), ev.interpreting('c')]);
    const chunk = (from: number, n: number) => Array.from({ length: n }, (_, k) => ev.out('c', `line ${from + k}\n`));
    const paneGap = `const pre = document.querySelector('pre.output'); return Math.round(pre.scrollHeight - pre.scrollTop - pre.clientHeight);`;
    const gaps = await p.deliverPerFrame<number>(p.batches(chunk(0, 600), 20), paneGap);
    assert.deepEqual(
      gaps.filter((g) => g > 1),
      [],
      'every frame ends with the last line in view',
    );

    const pane = p.page.locator('pre.output');
    const box = (await pane.boundingBox())!;
    await p.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await p.page.mouse.wheel(0, -200);
    await p.page.waitForFunction(() => {
      const pre = document.querySelector('pre.output')!;
      return pre.scrollHeight - pre.scrollTop - pre.clientHeight > 100;
    });
    await settled(p, 'pre.output');
    const scrollTop = `return Math.round(document.querySelector('pre.output').scrollTop);`;
    const before = (await p.page.evaluate(`(() => { ${scrollTop} })()`)) as number;
    const shown = await pane.evaluate((pre) => pre.textContent!.match(/line \d+/)![0]);
    const after = await p.deliverPerFrame<number>(p.batches(chunk(600, 300), 20), scrollTop);
    assert.deepEqual(
      after.filter((t) => Math.abs(t - before) > 1),
      [],
      `the pane stays at ${before} px`,
    );
    assert.ok(await pane.evaluate((pre, line) => pre.textContent!.includes(`${line}\n`), shown), `${shown} is still on screen`);

    // Back at the bottom (End in the focused pane), it follows again.
    await pane.focus();
    await p.page.keyboard.press('End');
    await p.page.waitForFunction(() => {
      const pre = document.querySelector('pre.output')!;
      return pre.scrollHeight - pre.scrollTop - pre.clientHeight <= 1;
    });
    const again = await p.deliverPerFrame<number>(p.batches(chunk(900, 200), 20), paneGap);
    assert.deepEqual(
      again.filter((g) => g > 1),
      [],
    );
    assert.ok(await pane.evaluate((pre) => pre.textContent!.endsWith('line 1099\n')));
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('draws a flood of output every other frame; a single print, and the end of the run, in the very next frame', async () => {
    const p = await open({ width: 560, height: 900 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([ev.turn('t', 'count'), ev.codeStart('c', 'local'), ev.codeDone('c', 'count()'), ev.interpreting('c'), ev.out('c', 'start\n')]);
    const chunk = (from: number, n: number) => Array.from({ length: n }, (_, k) => ev.out('c', `line ${from + k}\n`));
    const flood = p.batches(chunk(0, 600), 20);
    const single = p.batches([ev.out('c', 'one more line\n')], 1);
    // The end of the run: output drawn by one frame, then the last lines and the completion for the next one.
    const end = [...p.batches(chunk(600, 20), 100), ...p.batches([...chunk(620, 20), ev.completed('c')], 100)];
    // In the page: which animation frames changed the pane's text (document.timeline.currentTime is the frame's
    // time in its callbacks and the microtasks after them), and, for one message, whether the first frame
    // after it was handled shows it.
    const r = await p.page.evaluate(
      `(async ([flood, single, end]) => {
        const pre = document.querySelector('pre.output');
        const frames = [];
        const drawn = new Set();
        let on = true;
        const tick = () => { frames.push(document.timeline.currentTime); if (on) requestAnimationFrame(tick); };
        requestAnimationFrame(tick);
        const mo = new MutationObserver(() => drawn.add(document.timeline.currentTime));
        mo.observe(pre, { childList: true, subtree: true, characterData: true });
        const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
        const handled = (m) => new Promise((r) => {
          const f = (e) => { if (e.data && e.data.seq === m.seq) { window.removeEventListener('message', f); r(); } };
          window.addEventListener('message', f);
          window.postMessage(m, '*');
        });
        /** Posts one message and says what the first frame after it shows (the panel's frame runs first). */
        const nextFrameShows = async (m, text) => { await handled(m); await frame(); return pre.textContent.includes(text); };
        for (const m of flood) { await frame(); window.postMessage(m, '*'); }
        for (let i = 0; i < 6; i++) await frame();
        const floodFrames = frames.slice();
        const singleShown = await nextFrameShows(single[0], 'one more line');
        for (let i = 0; i < 3; i++) await frame();
        const beforeEndShown = await nextFrameShows(end[0], 'line 619');
        const lastShown = await nextFrameShows(end[1], 'line 639');
        on = false;
        mo.disconnect();
        const status = document.querySelector('.card.exec').dataset.status;
        return { frames: floodFrames, drawn: floodFrames.map((t) => drawn.has(t)), singleShown, beforeEndShown, lastShown, status };
      })(${JSON.stringify([flood, single, end])})`,
    );
    const res = r as { frames: number[]; drawn: boolean[]; singleShown: boolean; beforeEndShown: boolean; lastShown: boolean; status: string };
    const draws = res.drawn.filter(Boolean).length;
    const twice = res.drawn.findIndex((d, i) => d && res.drawn[i + 1]);
    assert.equal(flood.length, 30);
    assert.ok(draws >= 8, `the pane moved in ${draws} of ${res.frames.length} frames while 30 batches came, one per frame`);
    assert.equal(twice, -1, `two frames in a row drew the flood (frames ${twice} and ${twice + 1} of ${res.drawn.map(Number).join('')})`);
    assert.ok(res.singleShown, 'a single print after a pause is on screen in the first frame after it arrived');
    assert.equal(end.length, 2);
    assert.ok(res.beforeEndShown, 'output after a pause is on screen in the first frame after it arrived');
    assert.ok(res.lastShown, 'the end of the run is on screen in the first frame after it arrived, though the frame before drew output');
    assert.equal(res.status, 'done');
    assert.match(await p.page.locator('pre.output').innerText(), /line 639\n?$/);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('follows the bottom of the transcript while turns stream in, and stays put while the user reads further up', async () => {
    const p = await open({ width: 520, height: 700 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const gaps = await p.deliverPerFrame<number>(p.batches(conversation(40), 3), GAP);
    assert.deepEqual(
      gaps.filter((g) => g > 1),
      [],
      'every frame ends at the bottom',
    );
    assert.ok(await p.page.locator('.jump-latest').isHidden());
    // Delivered back to back, one batch per frame (new turns arrive while the last frame's scroll is pending).
    await p.deliverPerFrame(p.batches(conversation(60, 100), 3));
    assert.ok(((await p.page.evaluate(`(() => { ${GAP} })()`)) as number) <= 1, 'still at the bottom');
    assert.ok(await p.page.locator('.jump-latest').isHidden());

    // The user scrolls up with the wheel: new turns no longer move the view.
    await p.page.mouse.move(260, 300);
    await p.page.mouse.wheel(0, -900);
    await p.page.locator('.jump-latest').waitFor({ state: 'visible' });
    await settled(p, '.scroller');
    const where = `const s = document.querySelector('.scroller'); const r = s.getBoundingClientRect();
      const t = document.elementFromPoint(r.left + 40, r.top + 30)?.closest('.turn');
      return [Math.round(s.scrollTop), t ? t.dataset.turnId : '', t ? Math.round(t.getBoundingClientRect().top) : 0];`;
    const before = (await p.page.evaluate(`(() => { ${where} })()`)) as [number, string, number];
    assert.ok(before[1], 'a turn is under the top of the view');
    const after = await p.deliverPerFrame<[number, string, number]>(p.batches(conversation(10, 40), 3), where);
    for (const a of after) assert.deepEqual(a, before, 'the view did not move while turns were added below');
    assert.ok(await p.page.locator('.jump-latest').isVisible(), '"Latest" is offered');

    // "Latest" goes back to the bottom, and the view follows it again.
    await p.page.getByRole('button', { name: 'Jump to the latest message' }).click();
    const again = await p.deliverPerFrame<number>(p.batches(conversation(5, 50), 3), GAP);
    assert.deepEqual(
      again.filter((g) => g > 1),
      [],
    );
    assert.ok(await p.page.locator('.jump-latest').isHidden());
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('reopens a 500-turn conversation latest first, then fills in the older turns in idle time', async () => {
    const p = await open({ width: 520, height: 800 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const events = conversation(500);
    const reset: ResetMessage = { type: 'reset', conversationId: 'conv-9', title: 'A long one', seq: 1, events };
    // Handle the message the way a `message` event would, and look at the DOM before anything else runs.
    const first = (await p.page.evaluate((msg) => {
      (window as unknown as { codeact: { app: { onMessage(m: unknown): void } } }).codeact.app.onMessage(msg);
      return Array.from(document.querySelectorAll<HTMLElement>('.turn')).map((t) => t.dataset.turnId);
    }, reset)) as string[];
    assert.ok(first.length >= 1 && first.length < 500, `${first.length} turns rendered at once`);
    assert.equal(first[first.length - 1], 't499', 'the latest turn comes first');
    assert.deepEqual(
      first,
      first.map((_, i) => `t${500 - first.length + i}`),
      'the newest turns, in order',
    );

    await p.whenIdle();
    const ids = await p.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.turn')).map((t) => t.dataset.turnId));
    assert.deepEqual(
      ids,
      Array.from({ length: 500 }, (_, i) => `t${i}`),
    );
    assert.equal(await p.page.locator('.msg.assistant').count(), 500);
    assert.ok(((await p.page.evaluate(`(() => { ${GAP} })()`)) as number) <= 1, 'still at the bottom after the older turns went in above');
    assert.match((await p.page.locator('.turn').first().textContent()) ?? '', /order A-0\b/);
    assert.equal(await p.page.locator('.conv-title').innerText(), 'A long one');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('comes back to the same place after a reload: the bottom, or the turn the user was reading', async () => {
    const p = await open({ width: 520, height: 700 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(conversation(60), 1000);
    await p.whenIdle();
    assert.ok(((await p.page.evaluate(`(() => { ${GAP} })()`)) as number) <= 1);

    await p.page.reload();
    await p.page.waitForSelector('.turn');
    await p.whenIdle();
    assert.ok(((await p.page.evaluate(`(() => { ${GAP} })()`)) as number) <= 1, 'at the bottom again');
    assert.ok(await p.page.locator('.jump-latest').isHidden());

    // Read further up, then reload: the same turn is at the top, at the same offset.
    const before = await readFurtherUp(p);
    assert.ok(before[0] && before[0] !== 't59', `reading ${before[0]}`);
    await p.page.reload();
    await p.page.waitForSelector('.turn');
    await p.whenIdle();
    await assertReadingAgain(p, before, 60);
    await p.page.close();
  });

  it('holds the turn the user was reading through a slow reload, though the first frame has too few turns to scroll to it', async () => {
    const p = await open({ width: 520, height: 700 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(conversation(60), 1000);
    await p.whenIdle();
    const before = await readFurtherUp(p);
    assert.ok(before[0] && before[0] !== 't59', `reading ${before[0]}`);
    // Saved once scrolling settles: waits for it rather than for a time.
    await p.page.waitForFunction((id) => JSON.parse(sessionStorage.getItem('__state') ?? '{}').scroll?.turnId === id, before[0]);

    // A slow machine (4× CPU throttling), and a barrier: the page's idle callbacks, where the other turns go
    // in, wait until the frame that restores the position and the observers after it have run.
    const cdp = await p.page.context().newCDPSession(p.page);
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
    await p.page.addInitScript(`(() => {
      const ric = window.requestIdleCallback.bind(window), held = [];
      let hold = true;
      window.requestIdleCallback = (cb, opts) => { if (hold) { held.push([cb, opts]); return 0; } return ric(cb, opts); };
      window.__releaseIdle = () => { hold = false; for (const [cb, opts] of held.splice(0)) ric(cb, opts); };
    })()`);
    await p.page.reload();
    await p.page.waitForSelector('.turn');
    await p.page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(r))))');
    const turnsThen = await p.page.locator('.turn').count();
    const gapThen = (await p.page.evaluate(`(() => { ${GAP} })()`)) as number;
    assert.ok(turnsThen < 60 && gapThen <= 48, `the case under test: ${turnsThen} turns in the first frames, the bottom ${gapThen} px away (in view)`);
    assert.ok(await p.page.locator('.jump-latest').isVisible(), 'the bottom in view is not followed while the position is restored');

    await p.page.evaluate('window.__releaseIdle()');
    await p.whenIdle();
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
    await assertReadingAgain(p, before, 60);
    await p.page.close();
  });

  it('looks right in the dark and light themes and at 240 px (screenshots in test-artifacts/)', async () => {
    const long = [
      ev.turn('t2', 'print the log'),
      ev.codeStart('c2', 'local'),
      ev.codeDone('c2', 'for i in range(5000):\n    print(i)\n'),
      ev.interpreting('c2'),
    ];
    for (let i = 0; i < 5000; i++)
      long.push(
        ev.out('c2', i % 7 === 0 ? `\x1b[33mwarn\x1b[0m  step ${i} of 5000: a somewhat long line that wraps on a narrow panel\n` : `ok    step ${i} of 5000\n`),
      );
    const streaming = [
      ev.turn('t3', 'summarise'),
      ev.text('m3', 'Everything **worked**.\n\nThe run printed 5,000 lines; the last one was `step 4999`. The next paragraph is still being wri'),
    ];
    const shots: [string, string, { width: number; height: number }, 'dark' | 'light'][] = [
      ['webview-virtual-dark.png', ui.dark.url, { width: 560, height: 1100 }, 'dark'],
      ['webview-virtual-light.png', ui.light.url, { width: 560, height: 1100 }, 'light'],
      ['webview-narrow-240-dark.png', ui.dark.url, { width: 240, height: 900 }, 'dark'],
      ['webview-narrow-240-light.png', ui.light.url, { width: 240, height: 900 }, 'light'],
    ];
    for (const [file, url, viewport, scheme] of shots) {
      const p = await PanelPage.open(ui.browser, url, viewport, scheme);
      await p.send({ type: 'init', protocol: 1, state: hostState() });
      await p.sendEvents([...demoTurn(), ...long, ev.completed('c2'), ev.turnEnd('t2'), ...streaming], 500);
      await p.whenIdle();
      await p.page.mouse.move(1, 1);
      await p.page.screenshot({ path: join(ARTIFACTS, file) });
      // Nothing sticks out sideways, even at 240 px.
      const overflow = await p.page.evaluate(() =>
        Array.from(document.querySelectorAll('.turn *'))
          .filter((el) => !el.closest('pre, .code-block, table, .md-code, .json-tree'))
          .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
          .map((el) => `${el.tagName}.${el.className}`)
          .slice(0, 5),
      );
      assert.deepEqual(overflow, [], `${file}: elements wider than the panel`);
      assert.equal(await p.page.locator('.msg.assistant.streaming .md-live-text').count(), 1, 'the unfinished paragraph is shown as text');
      assert.deepEqual(p.errors, []);
      assert.deepEqual(await p.cspViolations(), []);
      await p.page.close();
    }
  });
});

describe('markdown sanitising (instrumented build that counts DOMPurify calls)', function () {
  this.timeout(120_000);
  const ui = usePanelBrowser({ bundle: { countSanitize: true } });

  it('sanitises each block of a streamed answer once, not once per frame, and still strips scripts and handlers', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url);
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.whenIdle();
    const blocks = [
      'The first paragraph has **bold** words and `code`, and it goes on for a while so that it streams in many pieces.',
      'The second one links to [the runbook](https://example.com/runbook) and then keeps going for a few more words.',
      '```python\nprint("hello")\ntotal = sum(range(10))\n```',
      'A hostile one: <script>window.__xss = 1</script> then <img src=x onerror="window.__xss = 2"> and <a href="#" onclick="window.__xss = 3">x</a>.',
      '- a list item\n- a [bad link](javascript:window.__xss=4)\n- and a <b onmouseover="window.__xss=5">last</b> item',
    ];
    const text = blocks.join('\n\n') + '\n';
    const events: TranscriptEvent[] = [ev.turn('t', 'write')];
    for (let i = 0; i < text.length; i += 6) events.push(ev.text('m', text.slice(i, i + 6)));
    const batches = p.batches(events, 1);
    assert.ok(batches.length > 5 * blocks.length, `${batches.length} frames of streaming`);
    await p.page.evaluate(() => void ((window as unknown as { __sanitized: number[] }).__sanitized = []));

    const safety = `const md = document.querySelector('.msg.assistant .md');
      if (!md) return { scripts: 0, handlers: 0, jsLinks: 0, images: 0, xss: window.__xss === undefined ? 0 : window.__xss };
      return {
        scripts: md.querySelectorAll('script, iframe, object, embed').length,
        handlers: Array.from(md.querySelectorAll('*')).filter((el) => Array.from(el.attributes).some((a) => /^on/i.test(a.name))).length,
        jsLinks: Array.from(md.querySelectorAll('[href], [src]')).filter((el) => /^\\s*javascript:/i.test(el.getAttribute('href') || el.getAttribute('src') || '')).length,
        images: md.querySelectorAll('img').length,
        xss: window.__xss === undefined ? 0 : window.__xss,
      };`;
    const clean = { scripts: 0, handlers: 0, jsLinks: 0, images: 0, xss: 0 };
    const during = await p.deliverPerFrame<typeof clean>(batches, safety);
    for (const d of during) assert.deepEqual(d, clean, 'nothing unsafe while streaming');
    const whileStreaming = (await p.page.evaluate('window.__sanitized.length')) as number;
    assert.ok(whileStreaming >= 2, `complete blocks are rendered as markdown while the answer streams (${whileStreaming})`);
    assert.ok(whileStreaming <= blocks.length, `${whileStreaming} sanitiser calls in ${batches.length} frames: one per finished block at most`);
    assert.ok((await p.page.locator('.msg.assistant .md-frozen strong').count()) >= 1, 'finished blocks are rendered markdown');

    await p.sendEvents([ev.textDone('m', text), ev.turnEnd('t')]);
    const total = (await p.page.evaluate('window.__sanitized.length')) as number;
    assert.ok(total <= blocks.length + 1, `${total} sanitiser calls for ${blocks.length} blocks`);
    assert.deepEqual(await p.page.evaluate(`(() => { ${safety} })()`), clean, 'nothing unsafe once finished');
    const answer = p.page.locator('.msg.assistant');
    assert.match(await answer.innerText(), /<script>window\.__xss = 1<\/script>/, 'raw HTML is shown as text');
    assert.equal(await answer.locator('a[href="https://example.com/runbook"]').count(), 1);
    assert.ok((await answer.locator('.md-code .hljs-built_in, .md-code .hljs-string').count()) >= 1, 'the code block is highlighted');
    assert.equal(await answer.locator('.md-live-text').count(), 0);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });
});
