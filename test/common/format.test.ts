/** The shared small formatters: one way to cut a text short, a measured duration, an item's logs. */
import assert from 'node:assert/strict';
import { logsOf, type CodeInterpreterCallItem } from '../../src/common/events';
import { clip, formatElapsed } from '../../src/common/format';

describe('text cut short, durations and logs (common)', () => {
  it('clip keeps a text that fits, and cuts a longer one to the limit, "…" included', () => {
    assert.equal(clip('abc', 3), 'abc');
    assert.equal(clip('abcd', 3), 'ab…');
    assert.equal(clip('x'.repeat(100), 80).length, 80);
  });

  it('formatElapsed shows a measured duration in ms, s or min, and nothing for a missing one', () => {
    assert.equal(formatElapsed(7.4), '7 ms');
    assert.equal(formatElapsed(1234), '1.23 s');
    assert.equal(formatElapsed(12345), '12.3 s');
    assert.equal(formatElapsed(75000), '1 min 15 s');
    assert.equal(formatElapsed(Number.NaN), '');
  });

  it('logsOf reads stdout, stderr, or both as printed', () => {
    const item = {
      outputs: [
        { type: 'logs', logs: 'a' },
        { type: 'logs', logs: 'E', stream: 'stderr' },
        { type: 'image', url: 'x' },
        { type: 'logs', logs: 'b' },
      ],
    } as unknown as CodeInterpreterCallItem;
    assert.equal(logsOf(item), 'ab');
    assert.equal(logsOf(item, 'stderr'), 'E');
    assert.equal(logsOf(item, 'both'), 'aEb');
  });
});
