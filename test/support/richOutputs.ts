/** The outputs of one execution with every kind of rich output, as the runtimes produce them (for export tests). */
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { pngBase64 } from './png';

export const RICH_OUTPUTS: CodeInterpreterCallItem['outputs'] = [
  { type: 'logs', logs: 'loading\n' },
  {
    type: 'display',
    data: { 'image/png': pngBase64(64, 48), 'text/plain': '<Figure size 640x480 with 1 Axes>' },
    metadata: { 'image/png': { width: 64, height: 48, codeact: { downscaled: false } }, codeact: { source: 'plt.show' } },
  },
  { type: 'logs', logs: 'careful\n', stream: 'stderr' },
  { type: 'logs', logs: 'between\n' },
  {
    type: 'display',
    data: {
      'text/html': '<table>\n<tr><td>1</td></tr>\n</table>',
      'text/markdown': '| a |\n|---|\n| 1 |',
      'application/json': { a: [1] },
      'application/vnd.custom+json': [1, 2],
      'text/latex': '$x$',
      'text/plain': '   a\n0  1',
      'image/bogus': 42,
    },
    summary: 'DataFrame 1 row × 1 column',
  },
  { type: 'display', data: { 'image/svg+xml': '<svg xmlns="http://www.w3.org/2000/svg"/>', 'text/plain': '<svg>' } },
  { type: 'display', data: { 'text/plain': '   a\n0  1', 'text/html': '<b>df</b>' }, result: true },
  { type: 'file', filename: 'out.csv', path: '/tmp/session/out.csv', bytes: 1234, mime_type: 'text/csv' },
];
