/** The human chat printer says where the conversation was compacted (stderr), and --json's filter lets the context events through unchanged. */
import * as assert from 'node:assert/strict';
import { chatPrinter } from '../../src/cli/print';
import { captureOutput as capture } from '../support/captureOutput';
import { COMPACTED } from '../support/contextEvents';

describe('codeact chat printer: compaction', () => {
  it('prints one line at the boundary, on stderr, and nothing of the summary on stdout', () => {
    const print = chatPrinter();
    const r = capture(() => {
      print(COMPACTED);
      print({ type: 'codeact.context.usage', used_tokens: 5210, window_tokens: 8192, compact_at_tokens: 6144 });
    });
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, '── Earlier turns summarised (6,900 → 2,100 tokens; the last step stays verbatim) ──\n');
    const s = capture(() => print({ ...COMPACTED, method: 'stand-ins', summary: '', kept_turns: 3 }));
    assert.equal(s.stderr, '── Earlier tool results shortened (6,900 → 2,100 tokens; the last 3 steps stay verbatim) ──\n');
  });
});
