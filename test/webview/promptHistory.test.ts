/** ↑ and ↓ in the composer browse the prompts sent, as a shell's history does. */
import assert from 'node:assert/strict';
import { PromptHistory } from '../../src/webview/promptHistory';

describe('composer: prompt history', () => {
  it('↑ goes back from the line being typed, ↓ returns to it; nothing to browse, nothing happens', () => {
    assert.equal(new PromptHistory([], 10).older('typing'), undefined);
    const h = new PromptHistory(['one', 'two'], 10);
    assert.equal(h.newer(), undefined, "not browsing: ↓ is the cursor's");
    assert.equal(h.older('draft'), 'two');
    assert.equal(h.older('two'), 'one');
    assert.equal(h.older('one'), undefined, 'the oldest: stays');
    assert.equal(h.newer(), 'two');
    assert.equal(h.newer(), 'draft', 'past the newest: the draft comes back');
    assert.equal(h.newer(), undefined, 'and browsing is over');
  });

  it('typing ends the browsing; a sent prompt is kept once and the oldest go past the cap', () => {
    const h = new PromptHistory(['a'], 2);
    assert.equal(h.older(''), 'a');
    h.reset();
    assert.equal(h.newer(), undefined);
    h.add('b');
    h.add('b');
    h.add('c');
    assert.deepEqual(h.items, ['b', 'c']);
  });
});
