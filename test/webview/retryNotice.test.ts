/** The notice a `codeact.retry` event leaves in the transcript: a retry says when; a change of course (no delay) says only what changed. */
import assert from 'node:assert/strict';
import { applyEvent, createTranscript, type NoticeView } from '../../src/common/transcript';

function notice(event: { attempt: number; delay_ms: number; status?: number; message: string }): string {
  const m = createTranscript();
  applyEvent(m, { type: 'codeact.retry', ...event });
  const item = m.items[m.turns[0].itemKeys[0]] as NoticeView;
  assert.equal(item.kind, 'notice');
  return item.text;
}

describe('transcript: retry notices', () => {
  it('a retry after a delay shows the agent\'s words (when, and which attempt of how many)', () => {
    const message = 'OpenAI is rate-limiting requests (HTTP 429). Retrying in 2.0 s (attempt 2 of 4).';
    assert.equal(notice({ attempt: 1, delay_ms: 2000, status: 429, message }), message);
  });

  it('the retries of a turn share one notice, counting up, and it is done once a response arrives', () => {
    const m = createTranscript();
    applyEvent(m, { type: 'codeact.retry', attempt: 1, delay_ms: 1000, status: 429, message: 'Rate limited. Retrying in 1.0 s (attempt 2 of 4).' });
    applyEvent(m, { type: 'codeact.retry', attempt: 2, delay_ms: 2000, status: 429, message: 'Rate limited. Retrying in 2.0 s (attempt 3 of 4).' });
    const notices = m.turns[0].itemKeys.map((k) => m.items[k]).filter((i): i is NoticeView => i?.kind === 'notice');
    assert.equal(notices.length, 1);
    assert.match(notices[0].text, /attempt 3 of 4/);
    assert.ok(!notices[0].done);
    applyEvent(m, { type: 'codeact.turn.ended', turn_id: m.turns[0].id, status: 'failed' });
    assert.equal(notices[0].done, true, 'the notice goes when the turn ends');
  });

  it('the switch to the text protocol (no delay) is shown as the message alone, not as a retry', () => {
    const message = '"gemma2:2b" does not accept tools (function calling): it does not support tools. Continuing without tools.';
    assert.equal(notice({ attempt: 1, delay_ms: 0, status: 400, message }), message);
  });
});
