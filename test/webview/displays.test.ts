/**
 * Rich outputs in the chat panel, in headless Chromium against the built bundle: text, image, text in that
 * order; an update replacing a display where it stands; SVG as an <img>; HiDPI images at their display
 * size; hostile HTML rendered as nothing dangerous, with no request leaving the page; a 10,000-row table
 * capped; 200+ displays capped; markdown through the messages' pipeline; JSON, LaTeX and plain text.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import type { TranscriptEvent } from '../../src/common/transcript';
import { PanelPage, buildBundle, chromiumAvailable, cleanup, launch, startServer, type PanelServer } from './support/browser';
import { ev, hostState } from './support/fixtures';
import { pngBase64 } from './support/png';

const run = (id: string, code: string): TranscriptEvent[] => [
  ev.turn(`t-${id}`, 'show it'),
  ev.codeStart(id, 'local'),
  ev.codeDone(id, code),
  ev.interpreting(id),
];
const end = (id: string): TranscriptEvent[] => [ev.completed(id), ev.turnEnd(`t-${id}`)];

describe('rich outputs in the panel (headless Chromium)', function () {
  this.timeout(180_000);
  let bundle = '';
  let server: PanelServer | undefined;
  let browser: Browser | undefined;
  /** A server the hostile HTML points at: it must never be asked for anything. */
  let evil: Server | undefined;
  let evilOrigin = '';
  const evilHits: string[] = [];

  before(async function () {
    if (!chromiumAvailable()) this.skip();
    bundle = await buildBundle();
    server = await startServer(bundle);
    browser = await launch();
    evil = createServer((req, res) => {
      evilHits.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end();
    });
    await new Promise<void>((r) => evil!.listen(0, '127.0.0.1', r));
    evilOrigin = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    await new Promise((r) => (evil ? evil.close(r) : r(undefined)));
    if (bundle) cleanup(bundle);
  });

  async function open(viewport = { width: 520, height: 900 }): Promise<PanelPage> {
    const p = await PanelPage.open(browser!, server!.url, viewport);
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    return p;
  }

  /** The output flow of the card: its children as `pane:<text>` and `display:<mime>`. */
  const flow = (p: PanelPage, id: string) =>
    p.page.evaluate((itemId) => {
      const el = document.querySelector(`section.card.exec[data-item-id="${itemId}"] .output-flow`);
      return Array.from(el?.children ?? [])
        .filter((c) => !(c as HTMLElement).hidden)
        .map((c) =>
          c.classList.contains('output-pane')
            ? `pane:${(c.textContent ?? '').trim()}`
            : c.classList.contains('display')
              ? `display:${c.getAttribute('data-mime')}`
              : c.className,
        );
    }, id);

  it('shows print, plot, print in that order: a pane, the image, a pane; a flood of text alone is still one pane', async () => {
    const p = await open();
    const big = pngBase64(1600, 400);
    await p.sendEvents([
      ...run('c1', 'print("before"); plt.show(); print("after")'),
      ev.out('c1', 'before\n'),
      ev.display('c1', {
        data: { 'image/png': pngBase64(640, 480), 'text/plain': '<Figure size 640x480>' },
        metadata: { 'image/png': { width: 320, height: 240 } },
      }),
      ev.out('c1', 'after\n'),
      ev.display('c1', { data: { 'image/png': big, 'text/plain': '<Figure>' } }),
      ...end('c1'),
    ]);
    await p.whenIdle();
    assert.deepEqual(await flow(p, 'c1'), ['pane:before', 'display:image/png', 'pane:after', 'display:image/png']);
    const sizes = await p.page.evaluate(async () => {
      const imgs = Array.from(document.querySelectorAll<HTMLImageElement>('.display-image img'));
      await Promise.all(imgs.map((i) => i.decode()));
      const card = document.querySelector('section.card.exec')!.getBoundingClientRect().width;
      return {
        card,
        imgs: imgs.map((i) => ({
          natural: i.naturalWidth,
          shown: Math.round(i.getBoundingClientRect().width),
          h: Math.round(i.getBoundingClientRect().height),
        })),
      };
    });
    assert.deepEqual(sizes.imgs[0], { natural: 640, shown: 320, h: 240 }, 'a HiDPI plot at the size its metadata gives');
    assert.equal(sizes.imgs[1].natural, 1600);
    assert.ok(
      sizes.imgs[1].shown < sizes.card && sizes.imgs[1].shown > 300,
      `a wide image shrinks to the card (${sizes.imgs[1].shown} px in a ${sizes.card} px card)`,
    );
    assert.equal(sizes.imgs[1].h, Math.round((sizes.imgs[1].shown * 400) / 1600), 'and keeps its aspect ratio');

    const flood: TranscriptEvent[] = run('c2', 'for i in range(3000): print(i)');
    for (let i = 0; i < 3000; i++) flood.push(ev.out('c2', `line ${i}\n`));
    await p.sendEvents([...flood, ...end('c2')], 500);
    await p.whenIdle();
    assert.equal(await p.page.locator('section.card.exec[data-item-id="c2"] .output-pane').count(), 1);
    assert.deepEqual(p.errors, []);
    assert.deepEqual(await p.cspViolations(), []);
    await p.page.close();
  });

  it('a reloaded transcript (displays only in the finished item) shows the same order', async () => {
    const p = await open();
    await p.send({
      type: 'reset',
      conversationId: 'conv-1',
      seq: 1,
      events: [
        ...run('r1', 'x'),
        ev.itemDone({
          id: 'r1',
          outputs: [
            { type: 'logs', logs: 'one\n' },
            { type: 'display', data: { 'text/html': '<table><tr><td>1</td></tr></table>' } },
            { type: 'logs', logs: 'two\n' },
          ],
        }),
        ev.turnEnd('t-r1'),
      ],
    });
    await p.whenIdle();
    assert.deepEqual(await flow(p, 'r1'), ['pane:one', 'display:text/html', 'pane:two']);
    await p.page.close();
  });

  it('saves large displays out of the page state (plain text only) and asks the host for the whole transcript after a reload', async () => {
    const p = await open();
    const rows = (n: number) => `<table><tbody>${'<tr><td>a cell of the big table</td><td>12345.678</td></tr>'.repeat(n)}</tbody></table>`;
    const events = [
      ...run('big', 'display(df) x3'),
      ...[1, 2, 3].map((i) => ev.display('big', { data: { 'text/html': rows(15_000), 'text/plain': `table ${i}` } })),
      ev.display('big', { data: { 'text/plain': 'small stays' } }),
      ...end('big'),
    ];
    await p.sendEvents(events);
    await p.whenIdle();
    await p.page.evaluate('new Promise((r) => setTimeout(r, 1200))'); // the page saves a second after a change
    const saved = await p.page.evaluate(() => JSON.parse(sessionStorage.getItem('__state') ?? '{}'));
    const x = saved.model.items['x:big'];
    assert.equal(saved.partial, true);
    assert.deepEqual(
      x.displays.map((d: { output: { data: Record<string, string> } }) => Object.keys(d.output.data).join('+')),
      ['text/plain', 'text/plain', 'text/plain', 'text/plain'],
    );
    assert.ok(JSON.stringify(saved).length < 100_000, `the saved state is small (${JSON.stringify(saved).length} characters)`);

    await p.page.reload();
    await p.page.waitForSelector('.card.exec');
    const ready = (await p.posted()).find((m) => m.type === 'ready');
    assert.deepEqual(
      { ...ready, seq: undefined },
      { type: 'ready', protocol: 1, seq: undefined, conversationId: 'conv-1', full: true },
      'the page asks for everything',
    );
    assert.deepEqual(await flow(p, 'big'), ['display:text/plain', 'display:text/plain', 'display:text/plain', 'display:text/plain']);
    await p.send({ type: 'reset', conversationId: 'conv-1', seq: 7, events });
    await p.whenIdle();
    assert.deepEqual(await flow(p, 'big'), ['display:text/html', 'display:text/html', 'display:text/html', 'display:text/plain']);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('update_display_data replaces the display where it stands', async () => {
    const p = await open();
    await p.sendEvents([
      ...run('u', 'h = display(..., display_id=True)'),
      ev.display('u', { data: { 'text/plain': 'progress 0%' }, display_id: 'bar' }),
      ev.out('u', 'working\n'),
    ]);
    const first = await p.page.locator('.display[data-mime="text/plain"]').elementHandle();
    await p.sendEvents([
      ev.display('u', { data: { 'text/html': '<b>progress 100%</b>', 'text/plain': 'progress 100%' }, display_id: 'bar' }, true),
      ...end('u'),
    ]);
    await p.whenIdle();
    assert.deepEqual(await flow(p, 'u'), ['display:text/html', 'pane:working']);
    assert.equal(await p.page.locator('.display').count(), 1);
    assert.equal(await p.page.locator('.display .html-output:not(.html-pending)').innerText(), 'progress 100%');
    assert.equal(await first!.evaluate((el) => el.isConnected), false, 'the old element went');
    await p.page.close();
  });

  it('shows SVG as an <img> of a data URL, never as inline SVG', async () => {
    const p = await open();
    const svg =
      '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100" viewBox="0 0 200 100"><rect width="200" height="100" fill="#1f77b4"/><script>window.__svgxss = 1</script><text x="10" y="50">hi</text></svg>';
    await p.sendEvents([...run('s', 'display(SVG(...))'), ev.display('s', { data: { 'image/svg+xml': svg, 'text/plain': '<SVG>' } }), ...end('s')]);
    await p.whenIdle();
    const r = await p.page.evaluate(async () => {
      const img = document.querySelector<HTMLImageElement>('.display[data-mime="image/svg+xml"] img')!;
      await img.decode();
      return {
        src: img.getAttribute('src')!.slice(0, 32),
        width: img.getBoundingClientRect().width,
        inlineSvg: document.querySelectorAll('.display svg:not(.icon), .display foreignObject').length,
        xss: (window as unknown as { __svgxss?: number }).__svgxss ?? 0,
      };
    });
    assert.equal(r.src, 'data:image/svg+xml;charset=utf-8');
    assert.equal(r.width, 200);
    assert.equal(r.inlineSvg, 0);
    assert.equal(r.xss, 0);
    await p.page.close();
  });

  it('renders a hostile HTML bundle as nothing dangerous, and no request leaves the page', async () => {
    const p = await open();
    const requests: string[] = [];
    p.page.on('request', (req) => {
      if (!req.url().startsWith(server!.url) && !req.url().startsWith('data:')) requests.push(req.url());
    });
    const e = evilOrigin;
    const html = `
      <style>body { display: none } .card { position: fixed !important }</style>
      <link rel="stylesheet" href="${e}/a.css"><meta http-equiv="refresh" content="0;url=${e}/meta">
      <script>window.__xss = 1</script>
      <img src="${e}/remote.png"><img src=x onerror="window.__xss = 2">
      <a href="javascript:window.__xss = 3">click</a> <a href="${e}/link">remote link</a>
      <form action="${e}/form"><input name=q value=1><button>go</button></form>
      <iframe src="${e}/frame"></iframe><object data="${e}/obj"></object><embed src="${e}/embed">
      <svg><image href="${e}/svgimg.png"/><script>window.__xss = 4</script></svg>
      <div style="position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:99999;background:url(${e}/bg.png)" class="scroller card exec" id="app" onclick="window.__xss = 5">overlay</div>
      <table background="${e}/tbg.png" style="background-image:url(${e}/t2.png)">
        <thead><tr style="text-align: right; position: fixed"><th></th><th class="card">price</th></tr></thead>
        <tbody><tr><th>0</th><td onmouseover="window.__xss = 6" style="text-align:center">1.5</td></tr></tbody>
      </table>
      <p>safe <b>text</b></p>`;
    await p.sendEvents([...run('h', 'display(HTML(evil))'), ev.display('h', { data: { 'text/html': html, 'text/plain': 'evil' } }), ...end('h')]);
    await p.whenIdle();
    await p.page.evaluate('new Promise((r) => setTimeout(r, 300))');
    await p.page.waitForSelector('.html-output:not(.html-pending)');
    const dom = await p.page.evaluate(() => {
      const box = document.querySelector('.html-output')!;
      const all = Array.from(box.querySelectorAll('*'));
      return {
        tags: [...new Set(all.map((el) => el.tagName.toLowerCase()))].sort(),
        attrs: [...new Set(all.flatMap((el) => el.getAttributeNames()))].sort(),
        classes: [...new Set(all.flatMap((el) => Array.from(el.classList)))].sort(),
        text: (box.textContent ?? '').replace(/\s+/g, ' ').trim(),
        xss: (window as unknown as { __xss?: number }).__xss ?? 0,
        fixed: all.filter((el) => getComputedStyle(el).position === 'fixed').length,
        panelVisible: getComputedStyle(document.body).display !== 'none' && getComputedStyle(document.querySelector('section.card.exec')!).position !== 'fixed',
      };
    });
    assert.deepEqual(dom.tags, ['b', 'div', 'p', 'table', 'tbody', 'td', 'th', 'thead', 'tr']);
    assert.deepEqual(dom.attrs, ['class'], 'no attribute of the input survives (only our alignment classes)');
    assert.deepEqual(dom.classes, ['ca-align-center', 'ca-align-right']);
    assert.match(dom.text, /click remote link/);
    assert.match(dom.text, /safe text/);
    assert.equal(dom.xss, 0);
    assert.equal(dom.fixed, 0);
    assert.ok(dom.panelVisible, 'the panel itself is untouched');
    assert.deepEqual(requests, [], 'no request was attempted');
    assert.deepEqual(evilHits, []);
    assert.deepEqual(await p.cspViolations(), [], 'nothing even tried to load (the sanitiser, not the CSP, stopped it)');
    await p.page.close();
  });

  it('a 10,000-row table shows 200 rows and "9,800 more rows", in a box that scrolls with sticky headers', async () => {
    const p = await open({ width: 420, height: 900 });
    let rows = '';
    for (let i = 0; i < 10_000; i++)
      rows += `<tr><th>${i}</th><td>${(i * 1.5).toFixed(2)}</td><td>customer-${i}</td><td>a long description of order ${i} that makes the table wide</td></tr>`;
    const html = `<table border="1" class="dataframe"><thead><tr style="text-align: right;"><th></th><th>price</th><th>customer</th><th>note</th></tr></thead><tbody>${rows}</tbody></table>`;
    await p.sendEvents([
      ...run('big', 'df'),
      ev.display('big', { data: { 'text/html': html, 'text/plain': '[10000 rows x 3 columns]' }, result: true }),
      ...end('big'),
    ]);
    await p.whenIdle();
    await p.page.waitForSelector('.html-output:not(.html-pending)');
    const r = await p.page.evaluate(() => {
      const box = document.querySelector<HTMLElement>('.html-output')!;
      const th = box.querySelector<HTMLElement>('thead th:nth-child(2)')!;
      box.scrollTop = 2000;
      box.scrollLeft = 200;
      const stuck = Math.round(th.getBoundingClientRect().top - box.getBoundingClientRect().top);
      return {
        body: box.querySelectorAll('tbody tr').length,
        more: box.querySelector('.html-more')?.textContent,
        scrollsSideways: box.scrollWidth > box.clientWidth,
        boxWidth: box.getBoundingClientRect().right <= document.documentElement.clientWidth,
        stuck,
        sticky: getComputedStyle(th).position,
      };
    });
    assert.equal(r.body, 200);
    assert.equal(r.more, '9,800 more rows not shown');
    assert.ok(r.scrollsSideways && r.boxWidth, 'the table scrolls sideways inside its own box, which fits the panel');
    assert.equal(r.sticky, 'sticky');
    assert.ok(r.stuck <= 2, `the header row stays at the top of the box (${r.stuck} px)`);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('draws an HTML table when it comes near the view: one far above waits, then shows when scrolled to', async () => {
    const p = await open({ width: 520, height: 700 });
    const table = '<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>far away</td></tr></tbody></table>';
    const events = [...run('far', 'display(df)'), ev.display('far', { data: { 'text/html': table, 'text/plain': 'df' } }), ...end('far')];
    for (let i = 0; i < 12; i++)
      events.push(ev.turn(`later-${i}`, 'and then'), ev.textDone(`a${i}`, 'A long answer.\n\n'.repeat(30)), ev.turnEnd(`later-${i}`));
    await p.sendEvents(events, 50);
    await p.whenIdle();
    const box = p.page.locator('section.card.exec[data-item-id="far"] .html-output');
    assert.equal(await box.getAttribute('class'), 'html-output html-pending', 'not drawn while far from the view');
    assert.equal(await box.locator('td').count(), 0);
    await p.page.evaluate(() => document.querySelector('section.card.exec[data-item-id="far"]')!.scrollIntoView());
    await p.page.waitForSelector('section.card.exec[data-item-id="far"] .html-output:not(.html-pending) td');
    assert.equal(await p.page.locator('section.card.exec[data-item-id="far"] td').textContent(), 'far away');
    await p.page.close();
  });

  it('keeps 200 displays of an execution and says how many more there were', async () => {
    const p = await open();
    const events = run('many', 'for i in range(250): display(i)');
    for (let i = 0; i < 250; i++) events.push(ev.display('many', { data: { 'text/plain': `value ${i}` } }));
    await p.sendEvents([...events, ...end('many')], 50);
    await p.whenIdle();
    assert.equal(await p.page.locator('.display').count(), 200);
    assert.equal(await p.page.locator('.display').last().innerText(), 'value 199');
    assert.equal(await p.page.locator('.outputs-more').innerText(), '50 more outputs not shown (an execution keeps 200).');
    await p.page.close();
  });

  it("markdown goes through the messages' pipeline (raw HTML escaped, code blocks with their buttons); JSON, LaTeX and plain text", async () => {
    const p = await open();
    const md =
      '## Summary\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n```python\nprint(1)\n```\n\n<img src=x onerror="window.__mdxss=1"> [link](javascript:alert(1))\n';
    await p.sendEvents([
      ...run('m', 'display(Markdown(md))'),
      ev.display('m', { data: { 'text/markdown': md, 'text/plain': 'md' } }),
      ev.display('m', { data: { 'application/json': { a: [1, 2], b: { c: 'd' } }, 'text/plain': "{'a': ...}" } }),
      ev.display('m', { data: { 'text/latex': '$$\\int_0^1 x\\,dx$$', 'text/plain': 'latex' } }),
      ev.display('m', { data: { 'text/plain': '\x1b[31marray([1, 2, 3])\x1b[0m' }, result: true }),
      ...end('m'),
    ]);
    await p.whenIdle();
    const r = await p.page.evaluate(() => {
      const mdEl = document.querySelector('.display[data-mime="text/markdown"] .md')!;
      return {
        h2: mdEl.querySelector('h2')?.textContent,
        cells: Array.from(mdEl.querySelectorAll('td')).map((c) => `${c.textContent}${c.className ? `.${c.className}` : ''}`),
        codeBar: mdEl.querySelectorAll('.md-code .md-code-bar button').length,
        imgs: mdEl.querySelectorAll('img').length,
        jsLinks: mdEl.querySelectorAll('a[href^="javascript"]').length,
        xss: (window as unknown as { __mdxss?: number }).__mdxss ?? 0,
        json: document.querySelector('.display[data-mime="application/json"] .json-tree')?.textContent?.includes('"d"'),
        latex: document.querySelector('.display[data-mime="text/latex"] pre')?.textContent,
        plain: document.querySelector('.display[data-mime="text/plain"] pre')?.textContent,
      };
    });
    assert.equal(r.h2, 'Summary');
    assert.deepEqual(r.cells, ['1', '2.align-right']);
    assert.equal(r.codeBar, 2);
    assert.equal(r.imgs, 0);
    assert.equal(r.jsLinks, 0);
    assert.equal(r.xss, 0);
    assert.equal(r.json, true);
    assert.equal(r.latex, '$$\\int_0^1 x\\,dx$$');
    assert.equal(r.plain, 'array([1, 2, 3])');
    await p.page.close();
  });
});
