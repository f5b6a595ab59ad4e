/** A conversation compacted once, as the engine reports it: three turns, the third compacted before its first request. */
import type { ContextCompacted } from '../../src/common/events';
import type { TranscriptEvent } from '../../src/common/transcript';

export const SUMMARY = '## Task (verbatim)\nLoad sales.csv and plot revenue per month.\n\n## Session\n- df: DataFrame (1200, 5)\n- monthly: Series (12,)';

const usage = (used: number): TranscriptEvent => ({ type: 'codeact.context.usage', used_tokens: used, window_tokens: 8192, compact_at_tokens: 6144 });

function turn(n: number, before: TranscriptEvent[], used: number, input: number, cached: number): TranscriptEvent[] {
  return [
    { type: 'codeact.turn.started', turn_id: `t${n}`, prompt: `Prompt ${n}`, source: 'chat', provider: 'openai', model: 'gpt-5-mini' },
    ...before,
    usage(used),
    {
      type: 'response.output_item.done',
      item: {
        type: 'code_interpreter_call',
        id: `x${n}`,
        status: 'completed',
        code: `print(${n})`,
        runtime: 'local',
        outputs: [{ type: 'logs', logs: `${n}\n` }],
      },
    },
    { type: 'response.output_text.done', item_id: `m${n}`, text: `Answer ${n}` },
    { type: 'response.completed', response: { id: `r${n}`, usage: { input_tokens: input, output_tokens: 100, cached_tokens: cached } } },
    { type: 'codeact.turn.ended', turn_id: `t${n}`, status: 'completed', duration_ms: 10 },
  ];
}

export const COMPACTED: ContextCompacted = {
  type: 'codeact.context.compacted',
  turn_id: 't3',
  before_tokens: 6900,
  after_tokens: 2100,
  summary: SUMMARY,
  kept_turns: 1,
  method: 'summary',
};

/** Turn 3 carries the compaction: used 5,210 of 8,192 afterwards (64%), compaction at 75%. */
export function compactedConversation(): TranscriptEvent[] {
  return [...turn(1, [], 3000, 3000, 0), ...turn(2, [], 6900, 6900, 2048), ...turn(3, [COMPACTED], 5210, 5210, 1024)];
}
