/**
 * The display protocol of the real local guest, at the frame level (test/support/guestHarness.ts):
 * display() and the IPython rich-repr protocol, the last expression as an execute_result, the order
 * of text and displays (markers on stdout and stderr before each frame), notes for broken reprs,
 * the caps, threads and forked children, IPython.display routed to ours.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { imageSize } from '../../src/common/displays';
import { DEBIAN_PYTHON, plain, startGuest, timeline, type GuestHarness } from '../support/guestHarness';

const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

(existsSync(DEBIAN_PYTHON) ? describe : describe.skip)('guest displays (frames of the real guest)', function () {
  this.timeout(120_000);
  let g: GuestHarness;
  before(async () => (g = await startGuest()));
  after(async () => g?.close());

  it('maps each _repr_*_ method to its MIME type, binary as base64, always with text/plain', async () => {
    const r = await g.run(
      [
        'import base64',
        'class A:',
        '    def _repr_html_(self): return "<b>A</b>"',
        '    def _repr_markdown_(self): return "**A**"',
        '    def _repr_svg_(self): return "<svg/>"',
        `    def _repr_png_(self): return base64.b64decode("${PNG_1PX}")`,
        '    def _repr_jpeg_(self): return (b"\\xff\\xd8jpeg", {"width": 3})',
        '    def _repr_json_(self): return {"a": [1, 2]}',
        '    def _repr_latex_(self): return r"$x^2$"',
        '    def __repr__(self): return "A()"',
        'display(A())',
      ].join('\n'),
    );
    assert.equal(r.complete.ok, true, JSON.stringify(r.complete.error));
    assert.equal(r.displays.length, 1);
    const d = r.displays[0];
    assert.deepEqual(d.data, {
      'text/html': '<b>A</b>',
      'text/markdown': '**A**',
      'image/svg+xml': '<svg/>',
      'image/png': PNG_1PX,
      'image/jpeg': Buffer.from('\xff\xd8jpeg', 'latin1').toString('base64'),
      'application/json': { a: [1, 2] },
      'text/latex': '$x^2$',
      'text/plain': 'A()',
    });
    assert.deepEqual(d.metadata, { 'image/jpeg': { width: 3 } });
    assert.equal(d.result, undefined);
    assert.equal(r.stderr.replace(/\u0000codeact-display:\w+:\d+\u0000/g, ''), '');
  });

  it('takes _repr_mimebundle_ as a dict or a (data, metadata) tuple, and fills in what it left out', async () => {
    const r = await g.run(
      [
        'class D:',
        '    def _repr_mimebundle_(self, include=None, exclude=None): return {"text/html": "<i>D</i>", "text/plain": "D!"}',
        '    def _repr_markdown_(self): return "*D*"',
        'class T:',
        '    def _repr_mimebundle_(self, include=None, exclude=None):',
        '        return {"text/html": "<i>T</i>"}, {"text/html": {"isolated": True}}',
        'display(D(), T())',
        'display(D(), exclude=["text/html"])',
      ].join('\n'),
    );
    assert.deepEqual(
      r.displays.map((d) => d.data),
      [
        { 'text/html': '<i>D</i>', 'text/plain': 'D!', 'text/markdown': '*D*' },
        { 'text/html': '<i>T</i>', 'text/plain': r.displays[1].data['text/plain'] },
        { 'text/plain': 'D!', 'text/markdown': '*D*' },
      ],
    );
    assert.match(r.displays[1].data['text/plain'], /^<__main__\.T object at 0x/);
    assert.deepEqual(r.displays[1].metadata, { 'text/html': { isolated: true } });
  });

  it('skips a repr that raises or returns garbage with a one-line note naming it, and the run goes on', async () => {
    const r = await g.run(
      [
        'class Bad:',
        '    def _repr_html_(self): raise ValueError("no html here")',
        '    def _repr_markdown_(self): return b"bytes"',
        '    def _repr_json_(self): return {"k": object()}',
        '    def _repr_svg_(self): return "x" * (3 << 20)',
        '    def __repr__(self): return "Bad()"',
        'class Junk:',
        '    def _repr_mimebundle_(self, include=None, exclude=None): return [1, 2]',
        'class Mixed:',
        '    def _repr_mimebundle_(self, include=None, exclude=None): return {1: "x", "text/html": 5, "text/markdown": "ok"}',
        'display(Bad(), Junk(), Mixed())',
        'print("still running")',
        'return 7',
      ].join('\n'),
    );
    assert.equal(r.complete.ok, true);
    assert.equal(r.complete.value, 7);
    assert.deepEqual(
      r.displays.map((d) => Object.keys(d.data)),
      [['text/plain'], ['text/plain'], ['text/markdown', 'text/plain']],
    );
    const notes = plain(r.stderr).trim().split('\n');
    assert.deepEqual(notes, [
      '[codeact: Bad._repr_html_ raised ValueError: no html here; showing its text instead]',
      '[codeact: Bad._repr_markdown_ returned bytes where text is wanted; showing its text instead]',
      '[codeact: Bad._repr_svg_ returned 3 MB, over the 2 MB limit per display; showing its text instead]',
      '[codeact: Bad._repr_json_ returned a value that is not JSON (TypeError: Object of type object is not JSON serializable); showing its text instead]',
      '[codeact: Junk._repr_mimebundle_ returned a list, not a dict; showing its text instead]',
      "[codeact: Mixed._repr_mimebundle_['text/html'] returned an int, not a string; showing the rest]",
      '[codeact: Mixed._repr_mimebundle_ returned a key that is not a MIME type string; showing the rest]',
    ]);
    assert.equal(plain(r.stdout), 'still running\n');
  });

  it('shows a last expression that is not JSON as an execute_result; a JSON value stays the value; None shows nothing', async () => {
    const shown = await g.run('{1, 2, 3}');
    assert.equal(shown.complete.ok, true);
    assert.equal(shown.complete.value ?? null, null);
    assert.deepEqual(
      shown.displays.map((d) => [d.data, d.result]),
      [[{ 'text/plain': '{1, 2, 3}' }, true]],
    );
    assert.equal(plain(shown.stdout), '');
    const value = await g.run('{"a": [1, 2]}');
    assert.deepEqual([value.complete.value, value.displays.length], [{ a: [1, 2] }, 0]);
    const none = await g.run('None');
    assert.deepEqual([none.complete.value ?? null, none.displays.length], [null, 0]);
  });

  it('keeps the order print, display, print: each marker on stdout and stderr precedes its frame, seq 1, 2, …', async () => {
    const r = await g.run('import sys\nprint("a")\nprint("e1", file=sys.stderr)\ndisplay("one")\nprint("b")\ndisplay("two")\nprint("e2", file=sys.stderr)');
    assert.deepEqual(timeline(r.stdout, r.end), ['a\n', 1, 'b\n', 2]);
    assert.deepEqual(timeline(r.stderr, r.end), ['e1\n', 1, 2, 'e2\n']);
    assert.deepEqual(
      r.displays.map((d) => [d.seq, d.marks, d.data['text/plain']]),
      [
        [1, [true, true], "'one'"],
        [2, [true, true], "'two'"],
      ],
    );
    // The frames arrive in seq order, before the run's "complete" frame.
    assert.deepEqual(
      r.frames.map((f) => f.t),
      ['display', 'display', 'complete'],
    );
  });

  it('shows a raw bundle as it is, and updates a display through its handle (IPython DisplayHandle shape)', async () => {
    const r = await g.run(
      [
        'display({"text/html": "<p>raw</p>", "text/plain": "raw"}, raw=True)',
        'h = display("first", display_id=True)',
        'h.update("second")',
        'print(type(h).__name__, h.display_id == h.display_id)',
      ].join('\n'),
    );
    assert.deepEqual(r.displays[0].data, { 'text/html': '<p>raw</p>', 'text/plain': 'raw' });
    const [first, second] = r.displays.slice(1);
    assert.equal(typeof first.display_id, 'string');
    assert.equal(first.update, undefined);
    assert.deepEqual([second.display_id, second.update, second.data['text/plain']], [first.display_id, true, "'second'"]);
    assert.equal(plain(r.stdout), 'DisplayHandle True\n');
  });

  it('caps the count per execution: 10,000 tiny displays give max_count frames and exactly one note', async () => {
    const r = await g.run('for i in range(10_000):\n    display(i)\nprint("done")');
    assert.equal(r.displays.length, 200);
    assert.deepEqual(
      r.displays.map((d) => d.seq),
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    assert.equal(plain(r.stderr), '[codeact: 9,800 more displays were not shown; the cap is 200 per execution]\n');
    assert.equal(plain(r.stdout), 'done\n');
    const small = await g.run('for i in range(5):\n    display(i)', { display: { max_count: 3 } });
    assert.equal(small.displays.length, 3);
    assert.equal(plain(small.stderr), '[codeact: 2 more displays were not shown; the cap is 3 per execution]\n');
    // The count starts again with each execution.
    assert.equal((await g.run('display(1)')).displays.length, 1);
  });

  it('caps the bytes per execution (the JSON size of each bundle) with one note for the run', async () => {
    const r = await g.run('for i in range(10):\n    display("x" * 50_000)', { display: { max_total: 200_000 } });
    assert.equal(r.displays.length, 3);
    assert.equal(plain(r.stderr), '[codeact: 7 more displays were not shown; the cap is 195.3 KB of displays per execution]\n');
  });

  it('downscales an image over the per-display cap with Pillow, and says so', async () => {
    const r = await g.run(
      [
        'import io, numpy as np',
        'from PIL import Image',
        'im = Image.fromarray(np.random.default_rng(1).integers(0, 255, (600, 800, 3), dtype=np.uint8))',
        'display(im)',
      ].join('\n'),
      { display: { max_bytes: 200_000 } },
    );
    assert.equal(r.displays.length, 1);
    const d = r.displays[0];
    assert.ok(JSON.stringify(d.data).length <= 200_000, `${JSON.stringify(d.data).length} bytes`);
    const size = imageSize('image/png', d.data['image/png'])!;
    assert.ok(size.width < 800 && size.height < 600 && Math.abs(size.width / size.height - 4 / 3) < 0.02, JSON.stringify(size));
    assert.match(
      plain(r.stderr),
      new RegExp(`^\\[codeact: the PNG image \\(1\\.\\d MB\\) was downscaled from 800×600 to ${size.width}×${size.height} to stay under 195\\.3 KB\\]\\n$`),
    );
  });

  it('never decodes to downscale an image whose header declares more than the pixel cap: a note says its size and the setting', async () => {
    // 10000×10000 (100 megapixels: under Pillow's own bomb error, so Pillow alone would decode it), ~100 KB.
    const r = await g.run(
      [
        'import struct, zlib',
        'def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)',
        'raw = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 10000, 10000, 8, 0, 0, 0, 0))',
        'raw += chunk(b"IDAT", zlib.compress(bytes(10001 * 10000), 9)) + chunk(b"IEND", b"")',
        'class Bomb:',
        '    def _repr_png_(self): return raw',
        'display(Bomb())',
      ].join('\n'),
      { display: { max_bytes: 50_000, max_pixels: 40_000_000 } },
    );
    assert.equal(r.complete.ok, true, JSON.stringify(r.complete.error));
    assert.ok(
      r.displays.every((d) => !('image/png' in d.data)),
      'the bomb is not shown, not even downscaled',
    );
    assert.match(
      plain(r.stderr),
      /a 10000×10000 PNG image \(\d+ KB\) was not shown: it is over the 48\.8 KB limit per display, and it could not be made smaller \(it declares 10000×10000 pixels, over the 40-megapixel cap \(codeact\.outputs\.maxImageMegapixels\)\)/,
    );
  });

  it('without Pillow, replaces an image over the cap by a note; for a figure it says how to save it to a file', async () => {
    // A guest of its own: Pillow is blocked for the rest of its life.
    const alone = await startGuest();
    try {
      await pillowAbsent(alone);
    } finally {
      await alone.close();
    }
  });

  it('never sends a frame over the channel limit: the display limit shrinks to it', async () => {
    const small = await startGuest({ maxFrameBytes: 256 << 10 });
    try {
      const r = await small.run('display({"text/html": "x" * 400_000, "text/plain": "big"}, raw=True)\nprint("alive")');
      assert.deepEqual(
        r.displays.map((d) => d.data),
        [{ 'text/plain': 'big' }],
      );
      assert.match(
        plain(r.stderr),
        /^\[codeact: display\(raw=True\)\['text\/html'\] returned 390\.6 KB, over the 96 KB limit per display; showing its text instead\]\n$/,
      );
      assert.equal(plain(r.stdout), 'alive\n');
    } finally {
      await small.close();
    }
  });

  it('sends displays from another thread; a forked child never writes a frame (its text goes to stdout)', async () => {
    const r = await g.run(
      [
        'import os, threading',
        't = threading.Thread(target=lambda: display("from a thread"))',
        't.start(); t.join()',
        'pid = os.fork()',
        'if pid == 0:',
        '    display("from the child")',
        '    os._exit(0)',
        'os.waitpid(pid, 0)',
        'display("parent")',
      ].join('\n'),
    );
    assert.deepEqual(
      r.displays.map((d) => d.data['text/plain']),
      ["'from a thread'", "'parent'"],
    );
    assert.equal(plain(r.stdout), "'from the child'\n");
  });

  it('keeps display out of the variables view, as call_tool', async () => {
    await g.run('x = 1');
    const frame = await g.vars();
    const names = frame.variables.map((v: any) => v.name);
    assert.ok(names.includes('x') && !names.includes('display') && !names.includes('call_tool'), names.join(', '));
  });

  it('routes IPython.display (display, update_display, publish_display_data) to ours; its objects work through their reprs', async () => {
    const r = await g.run(
      [
        'from IPython.display import display as ipy_display, HTML, Markdown, Image, SVG, JSON, update_display',
        'import IPython.display, IPython.core.display_functions as f, base64',
        'print(ipy_display is display, f.display is display)',
        'ipy_display(HTML("<b>hi</b>"), Markdown("**md**"), SVG("<svg xmlns=\\"http://www.w3.org/2000/svg\\"></svg>"), JSON({"a": 1}))',
        `ipy_display(Image(data=base64.b64decode("${PNG_1PX}"), width=50))`,
        'h = ipy_display("a", display_id="abc")',
        'h.update("b")',
        'update_display("c", display_id="abc")',
        'IPython.display.publish_display_data({"text/plain": "published"})',
      ].join('\n'),
    );
    assert.equal(r.complete.ok, true, JSON.stringify(r.complete.error));
    assert.equal(plain(r.stdout), 'True True\n');
    const kinds = r.displays.map((d) => Object.keys(d.data).filter((k) => k !== 'text/plain')[0] ?? d.data['text/plain']);
    assert.deepEqual(kinds, ['text/html', 'text/markdown', 'image/svg+xml', 'application/json', 'image/png', "'a'", "'b'", "'c'", 'published']);
    assert.equal(r.displays[4].data['image/png'], PNG_1PX);
    assert.deepEqual(r.displays[4].metadata, { 'image/png': { width: 50 } });
    assert.deepEqual(
      r.displays.slice(5, 8).map((d) => [d.display_id, d.update ?? false]),
      [
        ['abc', false],
        ['abc', true],
        ['abc', true],
      ],
    );
  });
});

async function pillowAbsent(g: GuestHarness): Promise<void> {
  const r = await g.run(
    [
      'import base64, sys, numpy as np',
      'import matplotlib.pyplot as plt',
      'from PIL import Image',
      'raw = Image.fromarray(np.random.default_rng(2).integers(0, 255, (300, 400, 3), dtype=np.uint8))',
      'import io; buf = io.BytesIO(); raw.save(buf, "PNG"); png = buf.getvalue()',
      'sys.modules["PIL"] = None  # Pillow is not there any more',
      'class Pic:',
      '    def _repr_png_(self): return png',
      '    def __repr__(self): return "Pic()"',
      'display(Pic())',
      'fig, ax = plt.subplots()',
      'ax.imshow(np.random.default_rng(3).random((300, 400)))',
      'plt.show()',
      'print("after")',
    ].join('\n'),
    { display: { max_bytes: 100_000 } },
  );
  assert.equal(r.complete.ok, true, JSON.stringify(r.complete.error));
  assert.deepEqual(
    r.displays.map((d) => Object.keys(d.data)),
    [['text/plain'], ['text/plain']],
  );
  assert.equal(r.displays[1].data['text/plain'], '<Figure size 640x480 with 1 Axes>');
  const notes = plain(r.stderr).trim().split('\n');
  assert.equal(notes.length, 2);
  assert.match(
    notes[0],
    /^\[codeact: a 400×300 PNG image \(35\d\.\d KB\) was not shown: it is over the 97\.7 KB limit per display, and Pillow is not installed to make it smaller; showing its text instead\]$/,
  );
  assert.match(
    notes[1],
    /^\[codeact: a \d+×\d+ PNG image \(.+\) was not shown: .*Pillow is not installed to make it smaller; fig\.savefig\("name\.png"\) writes it to a file you get; showing its text instead\]$/,
  );
  assert.equal(plain(r.stdout), 'after\n');
}
