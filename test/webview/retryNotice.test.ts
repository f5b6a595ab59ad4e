/** The notice `codeact.retry` events leave in the transcript: one per turn carrying one counter, gone when the retries are over; a change of course (no delay) says only what changed. */
import assert from 'node:assert/strict';
import { applyEvent, createTranscript, type NoticeView, type TranscriptModel } from '../../src/common/transcript';

const retry = (attempt: number) => ({
  type: 'codeact.retry' as const,
  attempt,
  delay_ms: 1000,
  status: 429,
  message: `Rate limited (HTTP 429). Retrying in 1.0 s (attempt ${attempt + 1} of 4).`,
});
const notices = (m: TranscriptModel) => m.turns.flatMap((t) => t.itemKeys.map((k) => m.items[k])).filter((i): i is NoticeView => i?.kind === 'notice');

describe('transcript: retry notices', () => {
  it("retries of one turn share one notice whose text is the latest attempt's", () => {
    const m = createTranscript();
    applyEvent(m, { type: 'codeact.turn.started', turn_id: 't1', prompt: 'p', source: 'chat', started_at: 0 });
    applyEvent(m, retry(1));
    applyEvent(m, retry(2));
    const [n, ...rest] = notices(m);
    assert.equal(rest.length, 0, 'one notice, not one per retry');
    assert.equal(n.text, 'Rate limited (HTTP 429). Retrying in 1.0 s (attempt 3 of 4).');
    assert.equal(n.done, undefined, 'still retrying');
    applyEvent(m, { type: 'codeact.turn.ended', turn_id: 't1', status: 'failed', duration_ms: 5 });
    assert.equal(notices(m)[0].done, true, 'over once the turn ends');
  });

  it('the switch to the text protocol (no delay) is shown as the message alone, and a later retry gets a notice of its own', () => {
    const m = createTranscript();
    const message = '"gemma2:2b" does not accept tools (function calling): it does not support tools. Continuing without tools.';
    applyEvent(m, { type: 'codeact.retry', attempt: 1, delay_ms: 0, status: 400, message });
    applyEvent(m, retry(1));
    const [a, b] = notices(m);
    assert.equal(a.text, message);
    assert.equal(a.retry, undefined);
    assert.equal(b.retry, true);
  });
});
