/**
 * An exported notebook opens and runs in a plain Jupyter kernel (issue 12, point 8): executed with the real
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

const PYTHON = process.env.CODEACT_JUPYTER_PYTHON ?? '/usr/bin/python3';
const probe = spawnSync(PYTHON, ['-c', 'import nbclient, nbformat, ipykernel'], { encoding: 'utf8' });
const available = probe.status === 0;
if (!available) console.log(`  nbclient/ipykernel not found for ${PYTHON} (apt-get install python3-nbconvert python3-ipykernel): skipping the notebook execution test`);

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

(available ? describe : describe.skip)('an exported notebook runs in a plain Jupyter kernel', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'codeact-nb-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('call_tool answers with the recorded results, return gives the value, names carry over, failed cells fail again', () => {
    const events: TranscriptEvent[] = [
      { type: 'codeact.turn.started', turn_id: 't1', prompt: 'How many open items, and are they in stock?', source: 'chat' },
      ...toolCall('exec_1', 1, 'list_orders', { status: 'open' }, { output: [{ sku: 'A-1', qty: 2 }, { sku: 'B-2', qty: 3 }] }),
      ...toolCall('exec_1', 2, 'check_stock', { sku: 'A-1' }, { output: { on_hand: 4 } }),
      ...toolCall('exec_1', 3, 'check_stock', { sku: 'B-2' }, { output: { on_hand: 0 } }),
      { type: 'codeact.tool_call.started', item_id: 'exec_1', call_id: 'exec_1:4', name: 'codeact.search_tools', arguments: { query: 'x' }, kind: 'discovery' },
      exec('exec_1', CELL1, { value: { total: 5, in_stock: [true, false], note: 'two\nlines' } }),
      exec('exec_2', 'total * 2', { value: 10 }),
      exec('exec_3', CELL3, { value: 6 }),
      exec('exec_4', '1 / 0', { status: 'failed', error: { type: 'ZeroDivisionError', message: 'division by zero' } }),
      ...toolCall('exec_5', 1, 'send_note', { text: 'hi' }, { error: 'The user denied the call to "send_note".' }),
      exec('exec_5', 'await call_tool("send_note", text="hi")', { status: 'failed', error: { type: 'RuntimeError', message: 'The user denied the call to "send_note".' } }),
      exec('exec_6', 'return await call_tool("never_called", x=1)', { status: 'failed', error: { type: 'RuntimeError', message: '' } }),
      exec('exec_7', 'f"{total} items"', { value: '5 items' }),
      { type: 'response.output_text.done', item_id: 'm1', text: '5 items are open; B-2 is out of stock.' },
    ];
    const nb = conversationToNotebook(events, { title: 'Open orders' }) as { cells: { cell_type: string; source: string[]; metadata: Record<string, any> }[] };
    // The Markdown cell says what the cells need, and the first code cell provides it.
    assert.equal(nb.cells[1].cell_type, 'markdown');
    assert.match(nb.cells[1].source.join(''), /plain Jupyter kernel .* defines `call_tool`, which answers with the 4 tool results recorded/s);
    assert.equal(nb.cells[2].metadata.codeact.role, 'setup');
    assert.match(nb.cells[2].source.join(''), /^async def call_tool\(name, \*\*arguments\):/m);
    assert.deepEqual(nb.cells.filter((c) => c.metadata.tags).map((c) => c.metadata.codeact.item_id), ['exec_4', 'exec_5', 'exec_6']);

    const input = join(dir, 'in.ipynb');
    const output = join(dir, 'out.ipynb');
    writeFileSync(input, JSON.stringify(nb, null, 1));
    const run = spawnSync(PYTHON, ['-c', EXECUTE, input, output], { encoding: 'utf8', timeout: 110_000, env: { ...process.env, PYDEVD_DISABLE_FILE_VALIDATION: '1' } });
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
});
