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
  it('a retry after a delay says when and which attempt', () => {
    assert.equal(notice({ attempt: 2, delay_ms: 2000, status: 429, message: 'Rate limited' }), 'Rate limited (HTTP 429). Retrying in 2 s (attempt 2).');
  });

  it('the switch to the text protocol (no delay) is shown as the message alone, not as a retry', () => {
    const message = '"gemma2:2b" does not accept tools (function calling): it does not support tools. Continuing without tools.';
    assert.equal(notice({ attempt: 1, delay_ms: 0, status: 400, message }), message);
  });
});
