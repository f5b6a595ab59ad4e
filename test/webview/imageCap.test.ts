/**
 * The pixel cap in the panel (headless Chromium, the built bundle): an image whose header declares more
 * pixels than the cap (a PNG of a few hundred bytes that says 40000×40000) is the note that says so, and no
 * `<img>` or `Image` is ever given its data (every `src` the page sets is recorded), so nothing decodes it
 * and nothing can open it full size; a normal image next to it still renders. The cap is the host's
 * setting, sent in the host state; a hosted sandbox's image (a data URL) is held to it too.
 */
import assert from 'node:assert/strict';
import type { TranscriptEvent } from '../../src/common/transcript';
import { pngDeclaring } from '../support/png';
import { PanelPage } from './support/browser';
import { ev, hostState } from './support/fixtures';
import { usePanelBrowser } from './support/panelBrowser';
import { pngBase64 } from './support/png';

const BOMB = pngDeclaring(40000, 40000).toString('base64');
const NOTE =
  /\[codeact: a PNG image of 40,000×40,000 pixels \(1,600 megapixels\) was not shown: the limit is 40 megapixels per image \(codeact\.outputs\.maxImageMegapixels\)/;

const run = (id: string): TranscriptEvent[] => [ev.turn(`t-${id}`, 'show it'), ev.codeStart(id, 'local'), ev.codeDone(id, 'show()'), ev.interpreting(id)];
const end = (id: string): TranscriptEvent[] => [ev.completed(id), ev.turnEnd(`t-${id}`)];

/** Records every image source the page sets from now on (the `src` property, and the attribute on an <img>). */
async function recordImageSources(p: PanelPage): Promise<void> {
  await p.page.evaluate(`(() => {
    const seen = (window.__imageSources = []);
    const desc = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, 'src');
    Object.defineProperty(HTMLImageElement.prototype, 'src', {
      configurable: true,
      get() { return desc.get.call(this); },
      set(v) { seen.push(String(v)); desc.set.call(this, v); },
    });
    const setAttribute = Element.prototype.setAttribute;
    Element.prototype.setAttribute = function (name, value) {
      if (this instanceof HTMLImageElement && String(name).toLowerCase() === 'src') seen.push(String(value));
      return setAttribute.call(this, name, value);
    };
  })()`);
}

const sources = (p: PanelPage) => p.page.evaluate('window.__imageSources') as Promise<string[]>;

describe('the pixel cap in the panel (headless Chromium)', function () {
  this.timeout(120_000);
  const ui = usePanelBrowser();

  it('a bomb is the note and never an <img>; a normal image next to it still renders', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url);
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await recordImageSources(p);
    const normal = pngBase64(64, 48);
    await p.sendEvents([
      ...run('c1'),
      ev.display('c1', { data: { 'image/png': BOMB, 'text/plain': '<Figure size 400000x400000>' }, metadata: { 'image/png': { width: 400, height: 400 } } }),
      ev.display('c1', { data: { 'image/png': normal, 'text/plain': '<Figure>' } }),
      ...end('c1'),
    ]);
    await p.whenIdle();
    const card = p.page.locator('section.card.exec[data-item-id="c1"]');
    const displays = card.locator('.output-flow > .display');
    assert.equal(await displays.count(), 2);
    assert.equal(await displays.nth(0).locator('img').count(), 0, 'no <img> for the bomb');
    assert.match(await displays.nth(0).innerText(), NOTE);
    assert.equal(await displays.nth(1).locator('img').count(), 1, 'the normal image is an <img>');
    const natural = await displays
      .nth(1)
      .locator('img')
      .evaluate(async (img: HTMLImageElement) => (await img.decode(), img.naturalWidth));
    assert.equal(natural, 64);
    const set = await sources(p);
    assert.ok(set.length >= 1 && set.every((s) => !s.includes(BOMB)), `no image source of the page ever held the bomb (${set.length} set)`);
    assert.ok(set.some((s) => s.includes(normal)));
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it("the cap is the host's setting: under it a normal image is a note too, and so is a hosted sandbox's bomb", async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url);
    await p.send({ type: 'init', protocol: 1, state: { ...hostState(), maxImagePixels: 3000 } });
    await recordImageSources(p);
    await p.sendEvents([...run('c2'), ev.display('c2', { data: { 'image/png': pngBase64(64, 48), 'text/plain': '<Figure>' } }), ...end('c2')]);
    await p.sendEvents([...run('c3'), ev.itemDone({ id: 'c3', outputs: [{ type: 'image', url: `data:image/png;base64,${BOMB}` }] }), ...end('c3')]);
    await p.whenIdle();
    const c2 = p.page.locator('section.card.exec[data-item-id="c2"]');
    assert.equal(await c2.locator('img').count(), 0);
    assert.match(
      await c2.locator('.display').innerText(),
      /a PNG image of 64×48 pixels \(0\.00307 megapixels\) was not shown: the limit is 0\.003 megapixels per image/,
    );
    const c3 = p.page.locator('section.card.exec[data-item-id="c3"]');
    assert.equal(await c3.locator('img').count(), 0);
    assert.match(await c3.locator('.exec-image-note').innerText(), /a PNG image of 40,000×40,000 pixels/);
    assert.deepEqual(await sources(p), [], 'no image source was set at all');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });
});
