/**
 * matplotlib without asking, in the real local guest (Debian's matplotlib 3.6): our backend is the
 * default without MPLBACKEND, plt.show() and the end of an execution show the figures, a figure
 * kept in a variable shows in a later execution, HiDPI, the user's own backend choice, the prebuilt
 * font cache, and no warning on stderr (also inside bubblewrap, through the LocalRuntime).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { imageSize } from '../../src/common/displays';
import { logsOf } from '../../src/common/events';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { DEBIAN_PYTHON, plain, startGuest, timeline, type GuestFrame, type GuestHarness } from '../support/guestHarness';

const size = (d: GuestFrame) => imageSize('image/png', d.data['image/png'])!;

(existsSync(DEBIAN_PYTHON) ? describe : describe.skip)('guest matplotlib', function () {
  this.timeout(120_000);
  let g: GuestHarness;
  before(async () => {
    g = await startGuest();
    await g.run('import matplotlib.pyplot as plt');
  });
  after(async () => g?.close());

  it('uses our backend without MPLBACKEND; a child process does not inherit it', async () => {
    const r = await g.run(
      [
        'import os, subprocess, sys',
        'import matplotlib.pyplot as plt',
        'print(plt.get_backend(), "MPLBACKEND" in os.environ)',
        'child = subprocess.run([sys.executable, "-c", "import matplotlib; print(matplotlib.get_backend())"], capture_output=True, text=True)',
        'print(child.stdout.strip() != plt.get_backend(), repr(child.stderr))',
      ].join('\n'),
    );
    assert.equal(plain(r.stdout), "module://codeact_mpl False\nTrue ''\n");
    assert.equal(plain(r.stderr), '');
  });

  it('shows each open figure as PNG on plt.show() (640×480 at 100 dpi, tight), closes them, in order with the prints', async () => {
    const r = await g.run(
      [
        'print("before")',
        'fig, ax = plt.subplots()',
        'ax.plot([1, 3, 2])',
        'plt.figure()',
        'plt.plot([2, 1])',
        'plt.show()',
        'print("after", plt.get_fignums())',
      ].join('\n'),
    );
    assert.equal(r.complete.ok, true, JSON.stringify(r.complete.error));
    assert.deepEqual(timeline(r.stdout, r.end), ['before\n', 1, 2, 'after []\n']);
    assert.equal(r.displays.length, 2);
    for (const d of r.displays) {
      const s = size(d);
      assert.ok(s.width > 500 && s.width <= 640 && s.height > 380 && s.height <= 480, JSON.stringify(s));
      assert.equal(d.data['text/plain'], '<Figure size 640x480 with 1 Axes>');
      assert.deepEqual(d.metadata, {});
      // A white background: the first pixel row of the PNG is not transparent (colour type 6 would carry alpha).
      assert.ok([2, 6].includes(Buffer.from(d.data['image/png'], 'base64')[25]));
    }
    assert.equal(plain(r.stderr), '');
  });

  it('shows the figures still open at the end of an execution (after the last print), and closes them', async () => {
    const r = await g.run('fig, ax = plt.subplots()\nax.plot([1, 2])\nprint("drawn")');
    assert.deepEqual(timeline(r.stdout, r.end), ['drawn\n', 1]);
    assert.equal(r.displays.length, 1);
    assert.equal(r.displays[0].result, undefined);
    const next = await g.run('print(plt.get_fignums())');
    assert.equal(plain(next.stdout), '[]\n');
    assert.equal(next.displays.length, 0);
  });

  it('shows a figure once: fig.show() shows that figure, and the end of the run skips it unless it changed after', async () => {
    const r = await g.run(
      [
        'a = plt.figure(); a.gca().plot([1])',
        'b = plt.figure(); b.gca().plot([2])',
        'a.show()',
        'b.show()',
        'b.gca().set_title("changed")',
        'print("end")',
      ].join('\n'),
    );
    assert.deepEqual(timeline(r.stdout, r.end), [1, 2, 'end\n', 3]);
    assert.notEqual(r.displays[2].data['image/png'], r.displays[1].data['image/png'], 'b again, with its title');
  });

  it('shows a figure kept in a variable in a later execution: display(fig), or fig as the last expression', async () => {
    const first = await g.run('kept, ax = plt.subplots()\nbars = ax.bar(["a", "b"], [3, 4])');
    assert.equal(first.displays.length, 1);
    const shown = await g.run('display(kept)');
    assert.equal(shown.displays.length, 1);
    assert.equal(shown.displays[0].data['image/png'], first.displays[0].data['image/png']);
    const last = await g.run('kept');
    assert.deepEqual([last.displays.length, last.displays[0].result], [1, true]);
    assert.equal(last.displays[0].data['image/png'], first.displays[0].data['image/png']);
    // As the last expression of the run that made it, a figure is shown once (not again at the end).
    const once = await g.run('f2 = plt.figure(); f2.gca().plot([5, 6])\nf2');
    assert.deepEqual(
      once.displays.map((d) => d.result ?? false),
      [true],
    );
  });

  it('renders at twice the dpi for HiDPI, with the display size in the metadata', async () => {
    const plot = 'fig, ax = plt.subplots()\nax.plot([1, 2, 3])\nplt.show()';
    const normal = size((await g.run(plot)).displays[0]);
    const r = await g.run(plot, { display: { hidpi: true } });
    const d = r.displays[0];
    const hi = size(d);
    assert.ok(Math.abs(hi.width - 2 * normal.width) <= 4 && Math.abs(hi.height - 2 * normal.height) <= 4, `${JSON.stringify(hi)} vs ${JSON.stringify(normal)}`);
    assert.deepEqual(d.metadata, { 'image/png': { width: Math.floor(hi.width / 2), height: Math.floor(hi.height / 2) } });
  });

  it('lets Stop end a slow figure at the end of an execution: a note, the result, and the session lives on', async () => {
    const started = await g.start(
      [
        'import sys, time',
        'from matplotlib.artist import Artist',
        'class Slow(Artist):',
        '    def draw(self, renderer):',
        '        print("drawing"); sys.stdout.flush()',
        '        time.sleep(120)',
        'slow = plt.figure()',
        'slow.add_artist(Slow())',
        '"the value"',
      ].join('\n'),
    );
    await g.stdoutHas('drawing');
    g.interrupt();
    const r = await started.done;
    assert.equal(r.complete.ok, true, JSON.stringify(r.complete.error));
    assert.equal(r.complete.value, 'the value');
    assert.equal(plain(r.stderr), '[codeact: showing the outputs stopped (KeyboardInterrupt)]\n');
    const next = await g.run('print(plt.get_fignums())\n1 + 1');
    assert.deepEqual([next.complete.value, plain(next.stdout)], [2, '[]\n']);
  });

  it('keeps the backend the user chose (MPLBACKEND, matplotlib.use, a matplotlibrc of their own)', async () => {
    const agg = await startGuest({ env: { MPLBACKEND: 'agg' } });
    try {
      const r = await agg.run('import matplotlib.pyplot as plt\nplt.plot([1])\nplt.show()\nprint(plt.get_backend())');
      assert.deepEqual([plain(r.stdout), r.displays.length], ['agg\n', 0]);
    } finally {
      await agg.close();
    }
    const use = await startGuest();
    try {
      const r = await use.run('import matplotlib\nmatplotlib.use("agg")\nimport matplotlib.pyplot as plt\nplt.plot([1])\nprint(plt.get_backend())');
      assert.deepEqual([plain(r.stdout), r.displays.length], ['agg\n', 0]);
    } finally {
      await use.close();
    }
    // A matplotlibrc in the working directory that names a backend; one that does not leaves ours.
    for (const [rc, expected] of [
      ['backend : svg  # mine\n', 'svg'],
      ['# backend: svg\nlines.linewidth: 3\n', 'module://codeact_mpl'],
    ]) {
      const dir = mkdtempSync(path.join(tmpdir(), 'codeact-mplrc-'));
      writeFileSync(path.join(dir, 'matplotlibrc'), rc);
      const own = await startGuest({ cwd: dir });
      try {
        const r = await own.run('import matplotlib.pyplot as plt\nprint(plt.get_backend())');
        assert.equal(plain(r.stdout), `${expected}\n`);
      } finally {
        await own.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it('copies the prebuilt font cache (CODEACT_MPL_CACHE) into MPLCONFIGDIR before matplotlib loads', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'codeact-mpl-test-'));
    try {
      const cache = path.join(root, 'cache');
      // Build a font cache the way the host would, then mark it so that its use can be seen.
      execFileSync(DEBIAN_PYTHON, ['-I', '-c', 'import matplotlib.font_manager'], { env: { PATH: '/usr/bin:/bin', MPLCONFIGDIR: cache, HOME: root } });
      const name = readdirSync(cache).find((n) => /^fontlist-.*\.json$/.test(n))!;
      const json = JSON.parse(readFileSync(path.join(cache, name), 'utf8'));
      json.codeact_marker = 'prebuilt';
      writeFileSync(path.join(cache, name), JSON.stringify(json));
      const config = path.join(root, 'config');
      const guest = await startGuest({ env: { MPLCONFIGDIR: config, CODEACT_MPL_CACHE: cache } });
      try {
        const r = await guest.run('import matplotlib.font_manager as fm\nprint(getattr(fm.fontManager, "codeact_marker", None))');
        assert.equal(plain(r.stdout), 'prebuilt\n');
        assert.equal(plain(r.stderr), '');
        assert.ok(existsSync(path.join(config, name)));
      } finally {
        await guest.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

(existsSync(DEBIAN_PYTHON) ? describe : describe.skip)('guest matplotlib through the LocalRuntime', function () {
  this.timeout(120_000);
  // Code that draws text (fonts, fontconfig through fc-list) but shows nothing, so it runs on any host side.
  const code = [
    'import io, matplotlib.pyplot as plt',
    'fig, ax = plt.subplots()',
    'ax.plot([1, 2, 3]); ax.set_title("revenue by month"); ax.set_xlabel("month")',
    'fig.savefig(io.BytesIO(), format="png")',
    'plt.close(fig)',
    'print(plt.get_backend())',
  ].join('\n');

  it('needs no warning on stderr inside bubblewrap (no Fontconfig error, no matplotlib cache warning)', async function () {
    const reason = await probeBubblewrap();
    if (reason) {
      console.log(`      skipped: ${reason}`);
      return this.skip();
    }
    const rt = new LocalRuntime({ python: DEBIAN_PYTHON, sandbox: { kind: 'bubblewrap' } });
    try {
      const item = await rt.execute({ code });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(logsOf(item), 'module://codeact_mpl\n');
      assert.equal(logsOf(item, 'stderr'), '');
    } finally {
      await rt.dispose();
    }
  });

  it('gives guests forked from a zygote that preloaded pyplot our backend', async () => {
    const rt = new LocalRuntime({ python: DEBIAN_PYTHON, sandbox: { kind: 'none' }, preload: ['matplotlib.pyplot'] });
    try {
      const item = await rt.execute({ code });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(logsOf(item), 'module://codeact_mpl\n');
      assert.equal(logsOf(item, 'stderr'), '');
    } finally {
      await rt.dispose();
    }
  });
});
