/**
 * Long conversations (issue 21): the host's time to build one request for a 500-turn conversation (the
 * context budget's view and estimate, then the Chat Completions body), and the tokens compaction saves.
 *
 * - context_request_500_turns_ms_first: the first request of a reopened 500-turn conversation (nothing cached);
 * - context_request_500_turns_ms_p50: each later request, one step appended each time (goal: at most 5 ms);
 * - context_tokens_sent_without / _with: tokens (estimated) of the 500 requests of the scripted run, sent
 *   whole against compacted in an 8k window (a fixed summary text stands in for the model's);
 * - context_compactions: how many compactions that took.
 */
import { ContextBudget } from '../src/core/agent/contextBudget';
import { OpenAICompatibleProvider } from '../src/core/providers/openai/openaiChat';
import { openaiErrors } from '../src/core/providers/openai/openaiErrors';
import type { ConversationItem } from '../src/core/providers/shared/types';

const TURNS = 500;

function step(k: number): ConversationItem[] {
  const out = Array.from({ length: 100 }, (_, i) => `region ${i} value ${i * k} step ${k}`).join('\n');
  return [
    { type: 'message', id: `u${k}`, role: 'user', text: `Step ${k}: go on with the next rows.` },
    {
      type: 'function_call',
      id: `c${k}`,
      call_id: `call_${k}`,
      name: 'execute_tool_code',
      arguments: JSON.stringify({ code: `rows_${k} = load(${k})\nprint(rows_${k})` }),
    },
    {
      type: 'function_call_output',
      id: `o${k}`,
      item_id: `c${k}`,
      call_id: `call_${k}`,
      name: 'execute_tool_code',
      output: JSON.stringify({ execution: k, status: 'completed', stdout: out }),
    },
    { type: 'message', id: `a${k}`, role: 'assistant', text: `Step ${k} is done.` },
  ];
}

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const r2 = (x: number) => Math.round(x * 100) / 100;

export async function benchContext(): Promise<Record<string, unknown>> {
  const provider = new OpenAICompatibleProvider({} as never, {
    baseURL: 'http://127.0.0.1:1/v1',
    errors: openaiErrors,
    supportsTools: true,
    models: {},
    streamUsage: true,
  });
  const budget = (window: number, onCompacted?: () => void) =>
    new ContextBudget({
      window,
      reserve: 1024,
      fixedTokens: 1500,
      toolNames: [],
      summarize: async () => ({ text: 'Decisions: keep going.' }),
      variables: async () => null,
      emit: (e) => e.type === 'codeact.context.compacted' && onCompacted?.(),
    });
  const request = async (b: ContextBudget, items: ConversationItem[]) => {
    b.nextRequest();
    const view = await b.prepare(items);
    provider.buildRequest({ model: 'm', system: 'system', history: view, tools: [] });
    return b.estimate(view);
  };
  // A 500-turn conversation, reopened: the first request, then one step more each time.
  const items = Array.from({ length: TURNS }, (_, k) => step(k + 1)).flat();
  const big = budget(1_000_000);
  let t0 = performance.now();
  await request(big, items);
  const first = performance.now() - t0;
  const times: number[] = [];
  for (let k = TURNS + 1; k <= TURNS + 30; k++) {
    items.push(...step(k));
    t0 = performance.now();
    await request(big, items);
    times.push(performance.now() - t0);
  }
  // The scripted run: 500 turns in an 8k window, whole against compacted.
  let without = 0;
  let withC = 0;
  let compactions = 0;
  const small = budget(8192, () => compactions++);
  const run: ConversationItem[] = [];
  for (let k = 1; k <= TURNS; k++) {
    run.push(...step(k));
    without += small.estimate(run);
    withC += await request(small, run);
  }
  return {
    context_request_500_turns_ms_first: r2(first),
    context_request_500_turns_ms_p50: r2(p50(times)),
    context_tokens_sent_without: without,
    context_tokens_sent_with: withC,
    context_compactions: compactions,
  };
}
