/**
 * Rich outputs (issue 19): what showing a plot costs over rendering it.
 *
 * - display_png_overhead_ratio: in ONE run of the real local guest (Debian's matplotlib), the median
 *   time of plt.show() on a 640×480 line plot, through the whole display path (our backend, the
 *   formatter, base64, the display marker and the frame written to the host), over the median time of
 *   the same figure saved to a BytesIO with the same savefig options; interleaved repetitions. Goal ≤ 1.2.
 * - display_png_show_ms_p50, display_png_savefig_ms_p50: the two medians.
 *
 * The guest is driven at the frame level (test/support/guestHarness.ts), which reads every frame as the
 * host does; the figure is the guest's own cost.
 */
import { existsSync } from 'node:fs';
import { DEBIAN_PYTHON, startGuest } from '../test/support/guestHarness';

const REPS = 21;

const CODE = String.raw`
import io, time, statistics
import matplotlib.pyplot as plt

def make():
    fig, ax = plt.subplots()
    ax.plot(range(200), [(i % 37) * i for i in range(200)])
    ax.set_title("revenue by month")
    return fig

def shown():
    make()
    t0 = time.perf_counter()
    plt.show()
    return time.perf_counter() - t0

def saved():
    fig = make()
    t0 = time.perf_counter()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight", facecolor=fig.get_facecolor())
    buf.getvalue()
    took = time.perf_counter() - t0
    plt.close(fig)
    return took

for _ in range(3):
    shown(); saved()
shows, saves = [], []
for _ in range(${REPS}):
    shows.append(shown())
    saves.append(saved())
show, save = statistics.median(shows), statistics.median(saves)
return {"ratio": show / save, "show_ms": show * 1000, "save_ms": save * 1000}
`;

export async function benchDisplay(): Promise<Record<string, number | string | null>> {
  if (!existsSync(DEBIAN_PYTHON)) return { display_png_overhead_ratio: null, display_skipped: `${DEBIAN_PYTHON} is not there` };
  const g = await startGuest();
  try {
    const r = await g.run(CODE, { timeoutMs: 300_000 });
    if (!r.complete.ok) throw new Error(`the display bench failed: ${JSON.stringify(r.complete.error)}`);
    if (r.displays.length !== REPS + 3) throw new Error(`the display bench showed ${r.displays.length} figures, not ${REPS + 3}`);
    const v = r.complete.value as { ratio: number; show_ms: number; save_ms: number };
    const r2 = (x: number) => Math.round(x * 100) / 100;
    return { display_png_overhead_ratio: r2(v.ratio), display_png_show_ms_p50: r2(v.show_ms), display_png_savefig_ms_p50: r2(v.save_ms) };
  } finally {
    await g.close();
  }
}
