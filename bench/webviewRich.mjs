// The rich-output conversation of the webview benchmark (bench/webview.mjs): 5 turns, each an execution that
// prints, shows 4 matplotlib plots (640×480 PNGs) and a pandas table, then an answer. The plots and tables are
// real: made once per run with Debian's /usr/bin/python3 (matplotlib, pandas), as the guest would make them.
// Returns undefined (the figures are then null) when that Python or its libraries are missing.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const PYTHON = process.env.CODEACT_BENCH_PYTHON ?? '/usr/bin/python3';

const MAKE = String.raw`
import base64, io, json, math, random
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
random.seed(1)
plots = []
for i in range(20):
    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
    xs = list(range(60))
    for k in range(2):
        ax.plot(xs, [math.sin(x / (5 + 2 * k + i * 0.3)) * (k + 1) + random.gauss(0, 0.15) for x in xs], label=f"series {k}")
    ax.set_title(f"Revenue by month, region {i}")
    ax.legend()
    ax.grid(True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    plots.append(base64.b64encode(buf.getvalue()).decode())
tables = []
for t in range(5):
    df = pd.DataFrame({
        "month": [f"2024-{m % 12 + 1:02d}" for m in range(30)],
        "region": [["EMEA", "APAC", "AMER"][m % 3] for m in range(30)],
        "revenue": [round(10000 + 377.5 * m + 90 * t, 2) for m in range(30)],
        "orders": [100 + 7 * m + t for m in range(30)],
        "returns": [m % 5 for m in range(30)],
        "margin": [round(0.2 + 0.01 * (m % 9), 3) for m in range(30)],
    })
    tables.append({"html": df._repr_html_(), "plain": repr(df)})
print(json.dumps({"plots": plots, "tables": tables}))
`;

/** The events of the conversation, or undefined when the plots cannot be made here. */
export function richConversation(tmp, log) {
  if (!existsSync(PYTHON)) {
    log(`20 images: skipped (no ${PYTHON})`);
    return undefined;
  }
  const script = join(tmp, 'make_plots.py');
  writeFileSync(script, MAKE);
  let made;
  try {
    made = JSON.parse(
      execFileSync(PYTHON, [script], { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, MPLBACKEND: 'Agg', MPLCONFIGDIR: join(tmp, 'mpl') } }).toString(),
    );
  } catch (e) {
    log(`20 images: skipped (${PYTHON} could not make the plots: ${String(e.message ?? e).split('\n')[0]}; it needs matplotlib and pandas)`);
    return undefined;
  }
  const kb = made.plots.map((p) => Math.round((p.length * 3) / 4 / 1024));
  log(`20 images: ${made.plots.length} plots of ${Math.min(...kb)}-${Math.max(...kb)} KB, ${made.tables.length} tables`);
  const events = [];
  for (let t = 0; t < 5; t++) {
    const id = `x${t}`;
    const code = `df = load(${t})\nfor r in regions[:4]:\n    df[df.region == r].plot()\n    plt.show()\ndisplay(df)\n`;
    events.push(
      { type: 'codeact.turn.started', turn_id: `t${t}`, prompt: `Plot revenue by month for the regions of set ${t}, and show the table` },
      { type: 'response.code_interpreter_call.in_progress', item_id: id, runtime: 'local' },
      { type: 'response.code_interpreter_call_code.done', item_id: id, code },
      { type: 'response.code_interpreter_call.interpreting', item_id: id },
    );
    const outputs = [];
    for (let k = 0; k < 4; k++) {
      const text = `plotting region ${k} of set ${t}: 30 rows\n`;
      const display = {
        type: 'display',
        data: { 'image/png': made.plots[t * 4 + k], 'text/plain': '<Figure size 640x480 with 1 Axes>' },
        metadata: { 'image/png': { width: 640, height: 480 } },
      };
      events.push(
        { type: 'codeact.output.delta', item_id: id, stream: 'stdout', delta: text },
        { type: 'codeact.output.display', item_id: id, output: display },
      );
      outputs.push({ type: 'logs', logs: text }, display);
    }
    const table = { type: 'display', data: { 'text/html': made.tables[t].html, 'text/plain': made.tables[t].plain }, result: true };
    events.push({ type: 'codeact.output.display', item_id: id, output: table }, { type: 'response.code_interpreter_call.completed', item_id: id });
    outputs.push(table);
    events.push(
      {
        type: 'response.output_item.done',
        item: { type: 'code_interpreter_call', id, status: 'completed', code, runtime: 'local', outputs, duration_ms: 900 },
      },
      {
        type: 'response.output_text.done',
        item_id: `m${t}`,
        text: `Here are the **4 plots** of set ${t} and its table: revenue grows every month in all three regions.`,
      },
      { type: 'response.completed', response: { id: `r${t}`, usage: { input_tokens: 2000, output_tokens: 150 } } },
      { type: 'codeact.turn.ended', turn_id: `t${t}`, status: 'completed' },
    );
  }
  return events;
}
