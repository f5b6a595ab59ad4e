/**
 * A pixel bomb from the code: the real local guest (python3 in bubblewrap) shows a PNG of a few hundred
 * bytes whose IHDR declares 40000×40000, next to a normal 64×48 PNG. The host reads each header before
 * anything decodes it: the bomb reaches the item (and so the panel, the notebook and the model) as the note
 * that says its size, the cap and the setting, never as image data; the normal image is still an image.
 * A lower cap (codeact.outputs.maxImageMegapixels, through the runtime limits) turns the normal one into a
 * note too. As root and as an unprivileged user.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { DisplayOutput } from '../../src/common/events';
import { imageBudgetFrom, runtimeLimitsFrom } from '../../src/core/config/engine';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { DEBIAN_PYTHON } from '../support/guestHarness';
import { cannotSwitchUser, runInChild, TESTER } from './support/asUser';

/** Python that builds both PNGs itself (struct and zlib: no Pillow) and displays them through _repr_png_. */
const CODE = [
  'import struct, zlib',
  'def png(w, h, rows):',
  '    def chunk(t, d):',
  "        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)",
  "    ihdr = struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0)",
  "    return b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', ihdr) + chunk(b'IDAT', zlib.compress(rows, 9)) + chunk(b'IEND', b'')",
  'bomb = png(40000, 40000, bytes(40001 * 16))',
  "small = png(64, 48, (b'\\x00' + b'\\x80' * 64) * 48)",
  'class Img:',
  '    def __init__(self, b): self.b = b',
  '    def _repr_png_(self): return self.b',
  'display(Img(bomb))',
  'display(Img(small))',
  'return len(bomb)',
].join('\n');

const NOTE =
  /^\[codeact: a PNG image of 40,000×40,000 pixels \(1,600 megapixels\) was not shown: the limit is 40 megapixels per image \(codeact\.outputs\.maxImageMegapixels\)/;

const users: Array<{ label: string; user?: { uid: number; gid: number }; skip?: () => string | null }> = [
  { label: 'as root' },
  { label: `as an unprivileged user (${TESTER.name})`, user: TESTER, skip: cannotSwitchUser },
];

(existsSync(DEBIAN_PYTHON) ? describe : describe.skip)('an image bomb from the code (real guest in bubblewrap)', function () {
  this.timeout(180_000);
  let noBwrap: string | null = null;
  before(async () => {
    noBwrap = await probeBubblewrap();
  });

  for (const { label, user, skip } of users) {
    it(`${label}: the bomb becomes the note before anything decodes it; a normal image is still an image`, async function () {
      const why = noBwrap ?? skip?.();
      if (why) {
        console.log(`      skipped: ${why}`);
        return this.skip();
      }
      const o = await runInChild(CODE, { python: DEBIAN_PYTHON, sandbox: { kind: 'bubblewrap' } }, user);
      assert.equal(o.item.status, 'completed', JSON.stringify(o.item.error));
      assert.ok((o.item.value as number) < 2000, `the bomb is small: ${String(o.item.value)} bytes`);
      const displays = o.item.outputs.filter((x): x is DisplayOutput => x.type === 'display');
      assert.equal(displays.length, 2);
      const [bomb, small] = displays;
      assert.deepEqual(Object.keys(bomb.data), ['text/plain'], 'no image data of the bomb reaches the item');
      assert.match(String(bomb.data['text/plain']), NOTE);
      assert.ok(typeof small.data['image/png'] === 'string' && (small.data['image/png'] as string).startsWith('iVBORw0KGgo'), 'the 64×48 PNG is shown');
    });
  }

  it('the cap comes from the runtime limits (the setting): at 3,000 pixels the 64×48 PNG is a note too', async function () {
    if (noBwrap) return this.skip();
    const o = await runInChild(CODE, { python: DEBIAN_PYTHON, sandbox: { kind: 'bubblewrap' }, limits: { maxImagePixels: 3000 } });
    const displays = o.item.outputs.filter((x): x is DisplayOutput => x.type === 'display');
    assert.equal(displays.length, 2);
    assert.ok(displays.every((d) => !('image/png' in d.data)));
    assert.match(String(displays[1].data['text/plain']), /a PNG image of 64×48 pixels \(0\.00307 megapixels\) was not shown: the limit is 0\.003 megapixels/);
  });

  it('reads the cap from codeact.outputs.maxImageMegapixels (default 40, a workspace may set it) for the runtimes and the model', () => {
    const none = resolveEngineConfig(() => undefined, { trusted: false });
    assert.equal(none.config.maxImagePixels, 40_000_000);
    const set = resolveEngineConfig((k) => (k === 'outputs.maxImageMegapixels' ? { workspace: 2.5 } : undefined), { trusted: false });
    assert.equal(runtimeLimitsFrom(set.config).maxImagePixels, 2_500_000);
    assert.equal(imageBudgetFrom(set.config).maxPixels, 2_500_000);
    const bad = resolveEngineConfig((k) => (k === 'outputs.maxImageMegapixels' ? { user: 0 } : undefined), { trusted: false });
    assert.equal(bad.config.maxImagePixels, 40_000_000);
    assert.ok(
      bad.ignored.some((i) => i.key === 'codeact.outputs.maxImageMegapixels' && /at least 0\.01/.test(i.reason)),
      JSON.stringify(bad.ignored),
    );
  });
});
