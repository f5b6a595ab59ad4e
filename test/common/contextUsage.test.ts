/** Compaction and the context meter in the shared layer: the reducer's boundary item and sums, prices, the notebook's boundary cell. */
import assert from 'node:assert/strict';
import { conversationToNotebook } from '../../src/common/notebook';
import { costOf, formatCost, priceOf, PRICES_AS_OF } from '../../src/common/prices';
import { applyEvent, buildTranscript, createTranscript, type CompactionView } from '../../src/common/transcript';
import { contextFill, contextText, totalsOfEvents, totalsText } from '../../src/common/usage';
import { COMPACTED, compactedConversation, SUMMARY } from '../support/contextEvents';

describe('context: compaction boundary and usage', () => {
  it('the reducer keeps the compaction as a boundary item of its turn, with counts and summary, and every turn', () => {
    const m = buildTranscript(compactedConversation());
    assert.equal(m.turns.length, 3, 'no turn is dropped');
    const t3 = m.turns[2];
    const first = m.items[t3.itemKeys[0]] as CompactionView;
    assert.equal(first.kind, 'compaction', 'the boundary comes first in the compacted turn');
    assert.deepEqual(
      { b: first.beforeTokens, a: first.afterTokens, k: first.keptTurns, m: first.method, s: first.summary },
      { b: 6900, a: 2100, k: 1, m: 'summary', s: SUMMARY },
    );
    // Items of the earlier turns are still there.
    assert.equal(m.turns[0].itemKeys.filter((k) => m.items[k]?.kind === 'exec').length, 1);
    // The saved panel state (JSON) keeps it.
    const again = JSON.parse(JSON.stringify(m));
    assert.equal(again.items[first.key].summary, SUMMARY);
  });

  it('bounds a hostile compaction event: a huge summary is cut, bad counts become 0, an unknown method is "summary"', () => {
    const m = createTranscript();
    applyEvent(m, { type: 'codeact.turn.started', turn_id: 't', prompt: 'p' });
    applyEvent(m, { ...COMPACTED, turn_id: 'nope', summary: 'x'.repeat(200_000), before_tokens: -5, after_tokens: NaN, method: 'weird' as never });
    const v = m.items[m.turns[0].itemKeys[0]] as CompactionView;
    assert.ok(v.summary.length < 70_000);
    assert.match(v.summary, /more characters in the saved conversation\]$/);
    assert.deepEqual([v.beforeTokens, v.afterTokens, v.method], [0, 0, 'summary']);
  });

  it('sums usage per turn and per conversation, cached tokens included, and prices the first-party models', () => {
    const m = buildTranscript(compactedConversation());
    assert.deepEqual(m.context, { used_tokens: 5210, window_tokens: 8192, compact_at_tokens: 6144 });
    assert.equal(m.turns[1].usage?.cached_tokens, 2048);
    assert.equal(m.usage?.input_tokens, 15110);
    assert.equal(m.usage?.cached_tokens, 3072);
    assert.equal(m.usage?.output_tokens, 300);
    // gpt-5-mini: $0.25 / 1M fresh input, $0.025 cached, $2 output.
    assert.ok(Math.abs((m.usage?.cost_usd ?? 0) - 0.0036863) < 1e-9, String(m.usage?.cost_usd));
    assert.equal(totalsText(m.usage!), '15,110 in (3,072 cached) · 300 out · $0.0037');
    const fill = contextFill(m.context!)!;
    assert.equal(contextText(fill), '5,210 of 8,192 tokens (64%); compaction at 75%');
    assert.equal(fill.compactFraction, 0.75);
  });

  it('has no price for local servers or unknown models; the longest matching model id wins', () => {
    assert.equal(priceOf('openai-compatible', 'gpt-5'), undefined);
    assert.equal(priceOf('openai', 'gpt-50'), undefined);
    assert.equal(priceOf('openai', 'gpt-5-mini-2025-08-07')?.input, 0.25);
    assert.equal(priceOf('anthropic', 'claude-sonnet-4-6')?.output, 15);
    assert.equal(priceOf('gemini', 'models/gemini-2.5-flash-lite')?.input, 0.1);
    assert.match(PRICES_AS_OF, /^2026-\d\d-\d\d$/);
    assert.equal(costOf({ input_tokens: 1_000_000, output_tokens: 0, cached_tokens: 1_000_000 }, priceOf('openai', 'gpt-5')!), 0.125);
    assert.equal(formatCost(0.00001), '<$0.0001');
    const m = createTranscript();
    applyEvent(m, { type: 'codeact.turn.started', turn_id: 't', prompt: 'p', provider: 'openai-compatible', model: 'qwen2.5-coder:7b' });
    applyEvent(m, { type: 'response.completed', response: { id: 'r', usage: { input_tokens: 10, output_tokens: 5 } } });
    assert.equal(m.usage?.cost_usd, undefined);
    assert.equal(m.usage?.unpriced, 1);
    assert.equal(totalsText(m.usage!), '10 in · 5 out');
  });

  it('a turn saved before cached tokens were counted goes on from its sums', () => {
    const m = createTranscript();
    applyEvent(m, { type: 'codeact.turn.started', turn_id: 't', prompt: 'p' });
    m.turns[0].usage = { input_tokens: 100, output_tokens: 10, total_tokens: 110 };
    applyEvent(m, { type: 'response.completed', response: { id: 'r', usage: { input_tokens: 50, output_tokens: 5, cached_tokens: 20 } } });
    assert.deepEqual([m.turns[0].usage?.input_tokens, m.turns[0].usage?.output_tokens, m.turns[0].usage?.cached_tokens], [150, 15, 20]);
  });

  it('totalsOfEvents prices each turn by its own model (what the CLI reports for a conversation)', () => {
    const { totals, context } = totalsOfEvents(compactedConversation());
    assert.equal(totals.input_tokens, 15110);
    assert.equal(formatCost(totals.cost_usd!), '$0.0037');
    assert.equal(context?.used_tokens, 5210);
  });

  it('the notebook export keeps every cell and adds the summary as a markdown cell at the boundary', () => {
    const nb = conversationToNotebook(compactedConversation()) as { cells: any[] };
    const roles = nb.cells.map((c) => (c.cell_type === 'code' ? 'code' : c.metadata.codeact?.role));
    assert.deepEqual(roles, ['user', 'code', 'assistant', 'user', 'code', 'assistant', 'compaction', 'user', 'code', 'assistant']);
    const cell = nb.cells[6];
    const text = cell.source.join('');
    assert.match(text, /\*\*Earlier turns summarised\*\* \(6,900 → 2,100 tokens; the last step stays verbatim\)/);
    assert.match(text, /> Load sales\.csv and plot revenue per month\./);
    assert.deepEqual(cell.metadata.codeact, { role: 'compaction', method: 'summary', before_tokens: 6900, after_tokens: 2100, kept_turns: 1 });
    // Stand-ins summarise nothing: the cell says what the model was sent instead.
    const stand = conversationToNotebook(
      compactedConversation().map((e) => (e === COMPACTED ? { ...COMPACTED, method: 'stand-ins' as const, summary: '' } : e)),
    ) as { cells: any[] };
    assert.match(
      stand.cells[6].source.join(''),
      /^---\n\n\*\*Earlier tool results shortened\*\* \(6,900 → 2,100 tokens; the last step stays verbatim\)\. The cells above are kept in full; the model was sent short stand-ins/,
    );
  });

  it('a compaction inside a long turn (between executions) stays where it happened', () => {
    const events = compactedConversation().filter((e) => e !== COMPACTED);
    const at = events.findIndex((e) => e.type === 'response.output_item.done' && e.item.id === 'x3');
    events.splice(at + 1, 0, COMPACTED);
    const nb = conversationToNotebook(events) as { cells: any[] };
    assert.deepEqual(
      nb.cells.slice(-4).map((c) => (c.cell_type === 'code' ? 'code' : c.metadata.codeact?.role)),
      ['user', 'code', 'compaction', 'assistant'],
    );
    const m = buildTranscript(events);
    assert.deepEqual(
      m.turns[2].itemKeys.map((k) => m.items[k].kind),
      ['exec', 'compaction', 'message'],
    );
  });
});
