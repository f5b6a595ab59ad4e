/**
 * An exported notebook opens and runs in a plain Jupyter kernel: executed with the real
 * Jupyter here (Debian's nbclient + ipykernel, as `jupyter nbconvert --execute` does), the cells that call
 * managed tools get the results recorded in the conversation, a cell's `return` gives its value, top-level
 * names carry over from cell to cell, and cells that failed in the conversation fail again without stopping
 * the run. Skips with one line when nbclient or ipykernel is missing.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { conversationToNotebook } from '../../src/common/notebook';
import type { TranscriptEvent } from '../../src/common/transcript';
import { pngBase64 } from '../support/png';
import { RICH_OUTPUTS } from '../support/richOutputs';

const PYTHON = process.env.CODEACT_JUPYTER_PYTHON ?? '/usr/bin/python3';
const probe = spawnSync(PYTHON, ['-c', 'import nbclient, nbformat, ipykernel'], { encoding: 'utf8' });
const available = probe.status === 0;
if (!available)
  console.log(`  nbclient/ipykernel not found for ${PYTHON} (apt-get install python3-nbconvert python3-ipykernel): skipping the notebook execution test`);

/** Validates a notebook (a file) against nbformat 4's schema; prints the errors and exits 1 when it is invalid. */
const VALIDATE = `
import sys, json, nbformat
from nbformat.validator import iter_validate
nb = json.load(open(sys.argv[1]))
errors = [str(e).splitlines()[0] for e in iter_validate(nb)]
nbformat.validate(nb) if not errors else None
print("\\n".join(errors) or "valid")
sys.exit(1 if errors else 0)
`;

const EXECUTE = `
import sys, nbformat, nbclient
nb = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()
nbformat.write(nb, sys.argv[2])
`;

function exec(id: string, code: string, extra: Partial<CodeInterpreterCallItem> = {}): TranscriptEvent {
  return { type: 'response.output_item.done', item: { type: 'code_interpreter_call', id, status: 'completed', code, runtime: 'local', outputs: [], ...extra } };
}

function toolCall(itemId: string, n: number, name: string, args: unknown, result: { output?: unknown; error?: string }): TranscriptEvent[] {
  const callId = `${itemId}:${n}`;
  return [
    { type: 'codeact.tool_call.started', item_id: itemId, call_id: callId, name, arguments: args },
    { type: 'codeact.tool_call.completed', item_id: itemId, call_id: callId, name, duration_ms: 4, ...result },
  ];
}

const CELL1 = `import asyncio

orders = await call_tool("list_orders", status="open")
stock = await asyncio.gather(*(call_tool("check_stock", sku=o["sku"]) for o in orders))
total = sum(o["qty"] for o in orders)
note = """two
lines"""
return {"total": total, "in_stock": [s["on_hand"] > 0 for s in stock], "note": note}`;

const CELL3 = `def bonus():
    return 1


if total > 1:
    return bonus() + total
return 0`;

const nbformatProbe = spawnSync(PYTHON, ['-c', 'import nbformat'], { encoding: 'utf8' });
if (nbformatProbe.status !== 0) console.log(`  nbformat not found for ${PYTHON} (apt-get install python3-nbformat): skipping the notebook validation test`);

/** nbformat's verdict on a notebook: "valid", or its errors. */
function validate(nb: unknown, dir: string, name = 'validate.ipynb'): { ok: boolean; text: string } {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(nb, null, 1));
  const r = spawnSync(PYTHON, ['-c', VALIDATE, file], { encoding: 'utf8', timeout: 60_000 });
  return { ok: r.status === 0, text: `${r.stdout}${r.stderr}`.trim() };
}

(nbformatProbe.status === 0 ? describe : describe.skip)('an exported notebook is valid nbformat 4', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'codeact-nbv-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('with every kind of output: streams, displays of every MIME type, a result, hosted images, files, a value, an error', () => {
    const events: TranscriptEvent[] = [
      { type: 'codeact.turn.started', turn_id: 't1', prompt: 'Plot it', source: 'chat' },
      ...toolCall('exec_1', 1, 'list_orders', {}, { output: [1, 2] }),
      exec('exec_1', 'rows = await call_tool("list_orders")\nplot(rows)', { outputs: RICH_OUTPUTS, value: null }),
      exec('exec_2', 'return 1', { outputs: [{ type: 'display', data: { 'text/plain': 'x' }, metadata: { codeact: { private: true } } }], value: { n: 1 } }),
      exec('exec_3', 'chart()', {
        runtime: 'openai',
        outputs: [
          { type: 'image', url: `data:image/png;base64,${pngBase64(8, 8)}` },
          { type: 'image', url: 'data:image/svg+xml;charset=utf-8,%3Csvg%20xmlns%3D%22http%3A%2F%2Fwww.w3.org%2F2000%2Fsvg%22%2F%3E' },
          { type: 'image', url: 'https://example.com/a.png' },
          { type: 'file', file_id: 'cfile_1', container_id: 'cntr_1' },
        ],
      }),
      exec('exec_4', '1/0', {
        status: 'failed',
        outputs: [{ type: 'display', data: { 'image/png': pngBase64(2, 2) } }],
        error: { type: 'ZeroDivisionError', message: 'division by zero' },
      }),
      { type: 'response.output_text.done', item_id: 'm1', text: 'Done.' },
    ];
    const nb = conversationToNotebook(events, { title: 'Plots' });
    const verdict = validate(nb, dir);
    assert.ok(verdict.ok, verdict.text);
    assert.equal(JSON.stringify(nb).includes('"private"'), false, 'our private output metadata is left out');
  });

  it('the validator does reject a broken output (the check can fail)', () => {
    const nb = conversationToNotebook([exec('exec_1', 'x', { outputs: RICH_OUTPUTS })]) as { cells: { outputs?: { data?: Record<string, unknown> }[] }[] };
    nb.cells.at(-1)!.outputs![1].data!['image/png'] = 42;
    assert.equal(validate(nb, dir, 'broken.ipynb').ok, false);
  });
});

(available ? describe : describe.skip)('an exported notebook runs in a plain Jupyter kernel', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'codeact-nb-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('call_tool answers with the recorded results, return gives the value, names carry over, failed cells fail again', () => {
    const events: TranscriptEvent[] = [
      { type: 'codeact.turn.started', turn_id: 't1', prompt: 'How many open items, and are they in stock?', source: 'chat' },
      ...toolCall(
        'exec_1',
        1,
        'list_orders',
        { status: 'open' },
        {
          output: [
            { sku: 'A-1', qty: 2 },
            { sku: 'B-2', qty: 3 },
          ],
        },
      ),
      ...toolCall('exec_1', 2, 'check_stock', { sku: 'A-1' }, { output: { on_hand: 4 } }),
      ...toolCall('exec_1', 3, 'check_stock', { sku: 'B-2' }, { output: { on_hand: 0 } }),
      { type: 'codeact.tool_call.started', item_id: 'exec_1', call_id: 'exec_1:4', name: 'codeact.search_tools', arguments: { query: 'x' }, kind: 'discovery' },
      exec('exec_1', CELL1, { value: { total: 5, in_stock: [true, false], note: 'two\nlines' } }),
      exec('exec_2', 'total * 2', { value: 10 }),
      exec('exec_3', CELL3, { value: 6 }),
      exec('exec_4', '1 / 0', { status: 'failed', error: { type: 'ZeroDivisionError', message: 'division by zero' } }),
      ...toolCall('exec_5', 1, 'send_note', { text: 'hi' }, { error: 'The user denied the call to "send_note".' }),
      exec('exec_5', 'await call_tool("send_note", text="hi")', {
        status: 'failed',
        error: { type: 'RuntimeError', message: 'The user denied the call to "send_note".' },
      }),
      exec('exec_6', 'return await call_tool("never_called", x=1)', { status: 'failed', error: { type: 'RuntimeError', message: '' } }),
      exec('exec_7', 'f"{total} items"', { value: '5 items' }),
      { type: 'response.output_text.done', item_id: 'm1', text: '5 items are open; B-2 is out of stock.' },
    ];
    const nb = conversationToNotebook(events, { title: 'Open orders' }) as { cells: { cell_type: string; source: string[]; metadata: Record<string, any> }[] };
    // The Markdown cell says what the cells need, and the first code cell provides it.
    assert.equal(nb.cells[1].cell_type, 'markdown');
    assert.match(nb.cells[1].source.join(''), /plain Jupyter kernel .* defines `call_tool`, which answers with the 4 tool results recorded/s);
    assert.equal(nb.cells[2].metadata.codeact.role, 'setup');
    assert.match(nb.cells[2].source.join(''), /^    async def call_tool\(name, \*\*arguments\):/m);
    assert.deepEqual(
      nb.cells.filter((c) => c.metadata.tags).map((c) => c.metadata.codeact.item_id),
      ['exec_4', 'exec_5', 'exec_6'],
    );

    const input = join(dir, 'in.ipynb');
    const output = join(dir, 'out.ipynb');
    writeFileSync(input, JSON.stringify(nb, null, 1));
    const run = spawnSync(PYTHON, ['-c', EXECUTE, input, output], {
      encoding: 'utf8',
      timeout: 110_000,
      env: { ...process.env, PYDEVD_DISABLE_FILE_VALIDATION: '1' },
    });
    assert.equal(run.status, 0, `the notebook ran to its end:\n${run.stderr.slice(-3000)}`);

    const ran = JSON.parse(readFileSync(output, 'utf8')) as { cells: { cell_type: string; metadata: Record<string, any>; outputs?: any[] }[] };
    const byItem = new Map(ran.cells.filter((c) => c.metadata.codeact?.item_id).map((c) => [c.metadata.codeact.item_id as string, c.outputs ?? []]));
    const value = (id: string) => {
      const text = byItem.get(id)!.find((o) => o.output_type === 'execute_result')?.data['text/plain'];
      return Array.isArray(text) ? text.join('') : text;
    };
    const error = (id: string) => byItem.get(id)!.find((o) => o.output_type === 'error');
    assert.equal(ran.cells[2].outputs?.length, 0, 'the setup cell runs quietly');
    assert.equal(value('exec_1'), "{'total': 5, 'in_stock': [True, False], 'note': 'two\\nlines'}", 'recorded results, gathered calls, a multi-line string');
    assert.equal(value('exec_2'), '10', 'a later cell uses the names the first bound');
    assert.equal(value('exec_3'), '6', 'a return inside an if, and a def with a return of its own');
    assert.equal(error('exec_4')?.ename, 'ZeroDivisionError');
    assert.equal(error('exec_5')?.ename, 'RuntimeError');
    assert.equal(error('exec_5')?.evalue, 'The user denied the call to "send_note".', 'a recorded error is raised again');
    assert.match(error('exec_6')?.evalue ?? '', /call_tool\('never_called'\) has no recorded result .* exported from CodeAct/);
    assert.equal(value('exec_7'), "'5 items'", 'the cells after the failures ran');
  });

  it('cells that plotted, displayed HTML and ended with a DataFrame run again with their plots, tables and HTML', () => {
    const plot = 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("revenue")\nplt.show()';
    const table = 'import pandas as pd\ndf = pd.DataFrame({"month": ["Jan", "Feb"], "revenue": [10, 12]})\ndf';
    const html = 'from IPython.display import HTML, display\ndisplay(HTML("<b>bold</b>"))\nprint("after")';
    const events: TranscriptEvent[] = [
      exec('exec_1', plot, {
        outputs: [
          { type: 'display', data: { 'image/png': pngBase64(640, 480), 'text/plain': '<Figure size 640x480 with 1 Axes>' }, metadata: { codeact: { x: 1 } } },
        ],
      }),
      exec('exec_2', table, {
        outputs: [{ type: 'display', data: { 'text/html': '<table><tr><td>Jan</td></tr></table>', 'text/plain': '  month  revenue' }, result: true }],
      }),
      exec('exec_3', html, {
        outputs: [
          { type: 'display', data: { 'text/html': '<b>bold</b>', 'text/plain': '<IPython.core.display.HTML object>' } },
          { type: 'logs', logs: 'after\n' },
        ],
      }),
    ];
    const nb = conversationToNotebook(events, { title: 'Revenue' });
    const verdict = validate(nb, dir, 'plots-in.ipynb');
    assert.ok(verdict.ok, verdict.text);
    // As exported: the recorded plot, table and HTML are there before anything runs.
    const cells = (nb as { cells: { metadata: Record<string, any>; outputs?: any[] }[] }).cells.filter((c) => c.metadata.codeact?.item_id);
    assert.deepEqual(
      cells.map((c) => c.outputs!.map((o) => o.output_type)),
      [['display_data'], ['execute_result'], ['display_data', 'stream']],
    );

    const input = join(dir, 'plots-in.ipynb');
    const output = join(dir, 'plots-out.ipynb');
    // The kernel's own inline backend draws the plots (as in a fresh Jupyter), whatever this process was given.
    const env: NodeJS.ProcessEnv = { ...process.env, PYDEVD_DISABLE_FILE_VALIDATION: '1' };
    delete env.MPLBACKEND;
    const run = spawnSync(PYTHON, ['-c', EXECUTE, input, output], { encoding: 'utf8', timeout: 110_000, env });
    assert.equal(run.status, 0, `the notebook ran to its end:\n${run.stderr.slice(-3000)}`);
    const ran = JSON.parse(readFileSync(output, 'utf8'));
    const after = validate(ran, dir, 'plots-check.ipynb');
    assert.ok(after.ok, after.text);
    const byItem = new Map<string, any[]>(ran.cells.filter((c: any) => c.metadata.codeact?.item_id).map((c: any) => [c.metadata.codeact.item_id, c.outputs]));
    const png = byItem.get('exec_1')!.find((o) => o.output_type === 'display_data' && o.data['image/png']);
    assert.ok(png, `the kernel drew the plot: ${JSON.stringify(byItem.get('exec_1')).slice(0, 500)}`);
    assert.ok(Buffer.from(png.data['image/png'], 'base64').subarray(1, 4).toString() === 'PNG');
    const result = byItem.get('exec_2')!.find((o) => o.output_type === 'execute_result');
    assert.match([].concat(result.data['text/html']).join(''), /<table[\s\S]*Jan[\s\S]*Feb/);
    const shown = byItem.get('exec_3')!;
    assert.deepEqual(
      shown.map((o) => o.output_type),
      ['display_data', 'stream'],
    );
    assert.deepEqual([].concat(shown[0].data['text/html']).join(''), '<b>bold</b>');
  });
});
