/**
 * The notebook export round trip on real outputs: a conversation's executions run in the real local guest
 * (Debian's python3 with matplotlib and pandas) in one session, as the panel runs them; the conversation is
 * exported; the notebook is valid nbformat 4 and holds the recorded plot, table and text; a plain Jupyter
 * kernel (nbclient) runs it again and draws the same kinds of outputs, in the same order.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { conversationToNotebook } from '../../src/common/notebook';
import type { TranscriptEvent } from '../../src/common/transcript';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';

const PYTHON = '/usr/bin/python3';
const probe = spawnSync(PYTHON, ['-c', 'import matplotlib, pandas, nbformat, nbclient, ipykernel'], { encoding: 'utf8' });
if (probe.status !== 0) console.log(`  matplotlib, pandas, nbformat, nbclient or ipykernel missing for ${PYTHON}: skipping the notebook round trip`);

const RUN_AND_VALIDATE = `
import sys, json, nbformat, nbclient
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()
nbformat.validate(nb)
nbformat.write(nb, sys.argv[2])
`;

const CELLS = [
  'import matplotlib.pyplot as plt\nprint("plotting")\nplt.plot([10, 12, 9])\nplt.title("revenue")\nplt.show()\nprint("plotted")',
  'import pandas as pd\ndf = pd.DataFrame({"month": ["Jan", "Feb", "Mar"], "revenue": [10, 12, 9]})\ndf',
  'from IPython.display import Markdown, display\ndisplay(Markdown("**peak** in Feb"))\nint(df["revenue"].max())',
];

/** "stream", "display_data image/png", "execute_result text/html"… of a cell's outputs. */
function shapes(outputs: any[]): string[] {
  return outputs.map((o) => {
    if (o.output_type === 'stream') return `stream ${o.name}`;
    const main = ['image/png', 'text/html', 'text/markdown', 'application/json'].find((m) => o.data && m in o.data) ?? 'text/plain';
    return `${o.output_type} ${main}`;
  });
}

(probe.status === 0 ? describe : describe.skip)('notebook export round trip on the real local guest', function () {
  this.timeout(180_000);
  let dir: string;
  let runtime: LocalRuntime;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'codeact-nbrt-'));
    runtime = new LocalRuntime({ python: PYTHON });
  });
  after(async () => {
    await runtime.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the plot, the DataFrame and the markdown are in the notebook, and a plain kernel draws them again', async () => {
    const events: TranscriptEvent[] = [{ type: 'codeact.turn.started', turn_id: 't1', prompt: 'Plot revenue', source: 'chat' }];
    const items: CodeInterpreterCallItem[] = [];
    for (const code of CELLS) {
      const item = await runtime.execute({ code, sessionId: 'roundtrip' });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      items.push(item);
      events.push({ type: 'response.output_item.done', item });
    }
    const nb = conversationToNotebook(events, { title: 'Revenue' }) as { cells: { metadata: Record<string, any>; outputs?: any[] }[] };
    const exported = nb.cells.filter((c) => c.metadata.codeact?.item_id).map((c) => shapes(c.outputs!));
    assert.deepEqual(exported, [
      ['stream stdout', 'display_data image/png', 'stream stdout'],
      ['execute_result text/html'],
      ['display_data text/markdown', 'execute_result application/json'],
    ]);
    for (const c of nb.cells)
      for (const o of c.outputs ?? []) assert.ok(!JSON.stringify(o.metadata ?? {}).includes('"codeact"'), 'no private metadata in an output');

    const input = join(dir, 'in.ipynb');
    const output = join(dir, 'out.ipynb');
    writeFileSync(input, JSON.stringify(nb, null, 1));
    const env: NodeJS.ProcessEnv = { ...process.env, PYDEVD_DISABLE_FILE_VALIDATION: '1' };
    delete env.MPLBACKEND;
    const run = spawnSync(PYTHON, ['-c', RUN_AND_VALIDATE, input, output], { encoding: 'utf8', timeout: 150_000, env });
    assert.equal(run.status, 0, `valid before and after, and it ran to its end:\n${run.stderr.slice(-3000)}`);
    const ran = JSON.parse(readFileSync(output, 'utf8')) as { cells: { metadata: Record<string, any>; outputs?: any[] }[] };
    const again = ran.cells.filter((c) => c.metadata.codeact?.item_id).map((c) => shapes(c.outputs!));
    // A plain kernel shows the last expression's int as text/plain where CodeAct returned it as JSON.
    assert.deepEqual(again, [
      ['stream stdout', 'display_data image/png', 'stream stdout'],
      ['execute_result text/html'],
      ['display_data text/markdown', 'execute_result text/plain'],
    ]);
  });
});
