/**
 * Two writers on one conversation (two processes, or a build from before the lock) interleave their events
 * in the file. Each saved event carries its turn (`turn_id`): the panel's reducer and the notebook export
 * put each turn's answer and code under its own prompt, never under the other turn's.
 */
import assert from 'node:assert/strict';
import { conversationToNotebook } from '../../src/common/notebook';
import { buildTranscript, type MessageView, type TranscriptEvent } from '../../src/common/transcript';
import { demoTurn } from '../webview/support/fixtures';

/** Turn A's events and turn B's, interleaved one by one after both started, each marked with its turn. */
function interleaved(): TranscriptEvent[] {
  const mark = (events: TranscriptEvent[], turnId: string) =>
    events.map((e) => (e.type === 'codeact.turn.started' || e.type === 'codeact.turn.ended' ? e : { ...e, turn_id: turnId }));
  const a = mark(demoTurn('turn-a', 'ci_a'), 'turn-a').map((e) => renamed(e, 'a'));
  const b = mark(demoTurn('turn-b', 'ci_b'), 'turn-b').map((e) => renamed(e, 'b'));
  const out: TranscriptEvent[] = [a.shift()!, b.shift()!];
  while (a.length || b.length) {
    if (a.length) out.push(a.shift()!);
    if (b.length) out.push(b.shift()!);
  }
  return out;
}

/** The demo turn with its own prompt, message ids and code (so the two turns differ). */
function renamed(e: TranscriptEvent, tag: string): TranscriptEvent {
  return JSON.parse(
    JSON.stringify(e)
      .replace(/Which of ACME’s open orders are late\?/g, `Prompt ${tag}`)
      .replace(/"msg_(\d)"/g, `"msg_${tag}$1"`)
      .replace(/list_orders/g, `list_orders_${tag}`),
  );
}

describe('events grouped by their turn', () => {
  it("the panel's reducer puts each turn's messages and code under its own prompt", () => {
    const m = buildTranscript(interleaved());
    assert.deepEqual(
      m.turns.map((t) => [t.prompt, t.itemKeys]),
      [
        ['Prompt a', ['m:msg_a0', 'x:ci_a', 'm:msg_a1']],
        ['Prompt b', ['m:msg_b0', 'x:ci_b', 'm:msg_b1']],
      ],
    );
    assert.equal((m.items['m:msg_a0'] as MessageView).text, 'Let me check the open orders with the order tools.');
    assert.deepEqual(
      m.turns.map((t) => t.status),
      ['completed', 'completed'],
    );
  });

  it("the notebook export puts each turn's code cell after its own prompt", () => {
    const nb = conversationToNotebook(interleaved()) as { cells: { source: string[]; metadata: { codeact?: { role?: string } } }[] };
    const shown = nb.cells
      .filter((c) => c.metadata.codeact?.role !== 'setup')
      .map((c) => c.source.join(''))
      .filter((s) => /^\*\*You:\*\*|list_orders_/.test(s))
      .map((s) => (s.startsWith('**You:**') ? s : /list_orders_(a|b)/.exec(s)![0]));
    assert.deepEqual(shown, ['**You:** Prompt a', 'list_orders_a', '**You:** Prompt b', 'list_orders_b']);
  });
});
