import * as assert from 'node:assert/strict';
import type { TranscriptEvent } from '../../src/common/transcript';
import { conversationToNotebook } from '../../src/common/notebook';

describe('notebook export', () => {
  it('turns prompts, answers and executions into nbformat 4 cells with their outputs', () => {
    const events: TranscriptEvent[] = [
      { type: 'codeact.turn.started', turn_id: 't1', prompt: 'How many lamps?', source: 'chat' },
      {
        type: 'response.output_item.done',
        item: {
          type: 'code_interpreter_call', id: 'exec_1', status: 'completed', code: 'print("hi")\nreturn 85', runtime: 'local',
          outputs: [{ type: 'logs', logs: 'hi\n' }, { type: 'logs', logs: 'warn\n', stream: 'stderr' }, { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' }],
          value: 85, error: null,
        },
      },
      {
        type: 'response.output_item.done',
        item: { type: 'code_interpreter_call', id: 'exec_2', status: 'failed', code: '1/0', runtime: 'local', outputs: [], error: { type: 'ZeroDivisionError', message: 'division by zero', traceback: 'Traceback…\nZeroDivisionError: division by zero' } },
      },
      { type: 'response.output_text.done', item_id: 'm1', text: '**85** lamps.' },
    ];
    const nb = conversationToNotebook(events, { title: 'Lamps' }) as { nbformat: number; cells: any[] };
    assert.equal(nb.nbformat, 4);
    // Title, what the cells need outside CodeAct (a `return`) and the cell that provides it, the prompt, the cells, the answer.
    assert.deepEqual(nb.cells.map((c) => c.cell_type), ['markdown', 'markdown', 'code', 'markdown', 'code', 'code', 'markdown']);
    assert.deepEqual([nb.cells[1].metadata.codeact.role, nb.cells[2].metadata.codeact.role], ['setup', 'setup']);
    nb.cells.splice(1, 2);
    const code = nb.cells[2];
    assert.deepEqual(code.source, ['print("hi")\n', 'return 85']);
    assert.deepEqual(code.outputs.map((o: any) => o.output_type), ['stream', 'stream', 'display_data', 'execute_result']);
    assert.equal(code.outputs[1].name, 'stderr');
    assert.equal(code.outputs[2].data['image/png'], 'iVBORw0KGgo=');
    assert.equal(code.outputs[3].data['application/json'], 85);
    assert.equal(nb.cells[3].outputs[0].ename, 'ZeroDivisionError');
    assert.deepEqual(nb.cells[4].source, ['**85** lamps.']);
  });
});
