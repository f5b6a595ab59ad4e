import * as assert from 'node:assert/strict';
import { cellAt, codeOf, findCells } from '../../src/common/cells';

describe('# %% cells', () => {
  const src = ['import os', '', '# %% Load', 'x = 1', '', '#%% [markdown] notes', '# text', '# %%', 'y = 2', ''];
  it('finds cells, including an implicit first one', () => {
    const cells = findCells(src);
    assert.deepEqual(
      cells.map((c) => [c.start, c.end, c.codeStart, c.title]),
      [
        [0, 1, 0, undefined],
        [2, 4, 3, 'Load'],
        [5, 6, 6, 'notes'],
        [7, 9, 8, undefined],
      ],
    );
    assert.deepEqual(findCells(['print(1)']), []);
  });
  it('finds the cell at a line, and its code without trailing blank lines', () => {
    const c = cellAt(src, 4)!;
    assert.equal(c.start, 2);
    assert.deepEqual(codeOf(src, c.codeStart, c.end), { code: 'x = 1\n', lastLine: 3 });
  });
});
