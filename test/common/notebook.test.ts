import * as assert from 'node:assert/strict';
import type { TranscriptEvent } from '../../src/common/transcript';
import { conversationToNotebook } from '../../src/common/notebook';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { makeImages } from '../support/images';
import { pngBase64, pngDeclaring } from '../support/png';
import { RICH_OUTPUTS } from '../support/richOutputs';

/** The notebook of one execution, and its code cell (the last cell). */
function exportOne(item: Partial<CodeInterpreterCallItem>): { nb: any; cell: any } {
  const nb = conversationToNotebook([
    {
      type: 'response.output_item.done',
      item: { type: 'code_interpreter_call', id: 'exec_1', status: 'completed', code: 'plot()', runtime: 'local', outputs: [], ...item },
    },
  ]) as any;
  return { nb, cell: nb.cells.at(-1) };
}

describe('notebook export', () => {
  it('turns prompts, answers and executions into nbformat 4 cells with their outputs', () => {
    const events: TranscriptEvent[] = [
      { type: 'codeact.turn.started', turn_id: 't1', prompt: 'How many lamps?', source: 'chat' },
      {
        type: 'response.output_item.done',
        item: {
          type: 'code_interpreter_call',
          id: 'exec_1',
          status: 'completed',
          code: 'print("hi")\nreturn 85',
          runtime: 'local',
          outputs: [
            { type: 'logs', logs: 'hi\n' },
            { type: 'logs', logs: 'warn\n', stream: 'stderr' },
            { type: 'image', url: `data:image/png;base64,${pngBase64(2, 2)}` },
          ],
          value: 85,
          error: null,
        },
      },
      {
        type: 'response.output_item.done',
        item: {
          type: 'code_interpreter_call',
          id: 'exec_2',
          status: 'failed',
          code: '1/0',
          runtime: 'local',
          outputs: [],
          error: { type: 'ZeroDivisionError', message: 'division by zero', traceback: 'Traceback…\nZeroDivisionError: division by zero' },
        },
      },
      { type: 'response.output_text.done', item_id: 'm1', text: '**85** lamps.' },
    ];
    const nb = conversationToNotebook(events, { title: 'Lamps' }) as { nbformat: number; cells: any[] };
    assert.equal(nb.nbformat, 4);
    // Title, what the cells need outside CodeAct (a `return`) and the cell that provides it, the prompt, the cells, the answer.
    assert.deepEqual(
      nb.cells.map((c) => c.cell_type),
      ['markdown', 'markdown', 'code', 'markdown', 'code', 'code', 'markdown'],
    );
    assert.deepEqual([nb.cells[1].metadata.codeact.role, nb.cells[2].metadata.codeact.role], ['setup', 'setup']);
    nb.cells.splice(1, 2);
    const code = nb.cells[2];
    assert.deepEqual(code.source, ['print("hi")\n', 'return 85']);
    assert.deepEqual(
      code.outputs.map((o: any) => o.output_type),
      ['stream', 'stream', 'display_data', 'execute_result'],
    );
    assert.equal(code.outputs[1].name, 'stderr');
    assert.equal(code.outputs[2].data['image/png'], pngBase64(2, 2));
    assert.equal(code.outputs[3].data['application/json'], 85);
    assert.equal(nb.cells[3].outputs[0].ename, 'ZeroDivisionError');
    assert.deepEqual(nb.cells[4].source, ['**85** lamps.']);
  });

  it('keeps every display whole, in order with the streams: display_data with all MIME types and metadata, execute_result for the last expression', () => {
    const { cell } = exportOne({ outputs: RICH_OUTPUTS, value: null });
    assert.deepEqual(
      cell.outputs.map((o: any) => o.output_type + (o.name ? `:${o.name}` : '')),
      ['stream:stdout', 'display_data', 'stream:stderr', 'stream:stdout', 'display_data', 'display_data', 'execute_result', 'display_data'],
    );
    const [, plot, , , table, svg, result, file] = cell.outputs;
    assert.equal(plot.data['image/png'], (RICH_OUTPUTS[1] as any).data['image/png']);
    assert.deepEqual(plot.data['text/plain'], ['<Figure size 640x480 with 1 Axes>']);
    assert.deepEqual(plot.metadata, { 'image/png': { width: 64, height: 48 } }, 'our private metadata is left out');
    assert.deepEqual(table.data['text/html'], ['<table>\n', '<tr><td>1</td></tr>\n', '</table>']);
    assert.deepEqual(table.data['text/markdown'], ['| a |\n', '|---|\n', '| 1 |']);
    assert.deepEqual(table.data['application/json'], { a: [1] });
    assert.deepEqual(table.data['application/vnd.custom+json'], [1, 2]);
    assert.deepEqual(table.data['text/latex'], ['$x$']);
    assert.equal('image/bogus' in table.data, false, 'a value of the wrong shape is left out');
    assert.deepEqual(table.metadata, {});
    assert.deepEqual(svg.data['image/svg+xml'], ['<svg xmlns="http://www.w3.org/2000/svg"/>']);
    assert.equal(result.execution_count, cell.execution_count);
    assert.deepEqual(result.data['text/html'], ['<b>df</b>']);
    assert.deepEqual(file.data, { 'text/plain': ['[file out.csv, 1.2 KB]'] });
    assert.equal(cell.outputs.filter((o: any) => o.output_type === 'execute_result').length, 1, 'no second result for the null value');
  });

  it("turns hosted sandboxes' data-URL images into display_data of their type (SVG as text), a remote URL into text", () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="2"/>';
    const [jpeg] = makeImages([{ width: 4, height: 3, format: 'JPEG' }]);
    const { cell } = exportOne({
      runtime: 'openai',
      outputs: [
        { type: 'image', url: `data:image/jpeg;base64,${jpeg}` },
        { type: 'image', url: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}` },
        { type: 'image', url: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}` },
        { type: 'image', url: 'https://example.com/x.png' },
      ],
    });
    assert.deepEqual(
      cell.outputs.map((o: any) => Object.keys(o.data)),
      [['image/jpeg', 'text/plain'], ['image/svg+xml', 'text/plain'], ['image/svg+xml', 'text/plain'], ['text/plain']],
    );
    assert.equal(cell.outputs[0].data['image/jpeg'], jpeg);
    assert.deepEqual(cell.outputs[1].data['image/svg+xml'], [svg]);
    assert.deepEqual(cell.outputs[2].data['image/svg+xml'], [svg]);
    assert.deepEqual(cell.outputs[3].data['text/plain'], ['<image at https://example.com/x.png>']);
  });

  it('exports no image whose header declares more than the pixel cap (a display or a hosted image): its note instead', () => {
    const bomb = pngDeclaring(40000, 40000).toString('base64');
    const { cell } = exportOne({
      outputs: [
        { type: 'display', data: { 'image/png': bomb, 'text/plain': '<Figure>' } },
        { type: 'image', url: `data:image/png;base64,${bomb}` },
      ],
    });
    assert.ok(!JSON.stringify(cell).includes(bomb), 'the bomb is not in the file');
    for (const o of cell.outputs) {
      assert.deepEqual(Object.keys(o.data), ['text/plain']);
      assert.match(o.data['text/plain'].join(''), /^\[codeact: a PNG image of 40,000×40,000 pixels \(1,600 megapixels\) was not shown/);
    }
  });

  it('a display without usable data is left out; garbage metadata becomes {}', () => {
    const { cell } = exportOne({
      outputs: [
        { type: 'display', data: null as any },
        { type: 'display', data: { 'text/plain': 7 as any } },
        { type: 'display', data: { 'text/plain': 'ok' }, metadata: [1, 2] as any },
      ],
    });
    assert.deepEqual(cell.outputs, [{ output_type: 'display_data', data: { 'text/plain': ['ok'] }, metadata: {} }]);
  });
});
