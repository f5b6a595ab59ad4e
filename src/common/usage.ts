/**
 * Token usage and the context window, in one place for the panel's meter, the turn footers and the CLI:
 * sums of the providers' reported usage (cached tokens included), their cost where a price is known
 * (./prices), and the words that describe them ("5,210 of 8,192 tokens (64%); compaction at 75%").
 */
import type { ContextUsage, Usage, UsageSummary, UsageTotalsShape } from './events';
import { traitsOf } from './eventTraits';
import { formatCount } from './format';
import { costOf, formatCost, priceOf, PRICES_AS_OF } from './prices';

/** Usage summed over model requests, with its cost where a price is known. */
export type UsageTotals = UsageTotalsShape;

export function emptyTotals(): UsageTotals {
  return { input_tokens: 0, output_tokens: 0, cached_tokens: 0, total_tokens: 0, unpriced: 0 };
}

const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

/** Adds one request's usage (of `model` of `provider`, for its price) to `sum`, in place. */
export function addUsage(sum: UsageTotals, usage: Usage, provider?: string, model?: string): UsageTotals {
  const input = n(usage.input_tokens);
  const output = n(usage.output_tokens);
  sum.input_tokens += input;
  sum.output_tokens += output;
  sum.cached_tokens += n(usage.cached_tokens);
  sum.total_tokens += n(usage.total_tokens) || input + output;
  const price = priceOf(provider, model);
  if (price) sum.cost_usd = (sum.cost_usd ?? 0) + costOf({ input_tokens: input, output_tokens: output, cached_tokens: n(usage.cached_tokens) }, price);
  else if (input || output) sum.unpriced++;
  return sum;
}

/** The window as the meter shows it: fractions of the window, clamped to [0, 1]. */
interface ContextFill {
  used: number;
  window: number;
  compactAt: number;
  /** used / window */
  fraction: number;
  /** compactAt / window */
  compactFraction: number;
}

export function contextFill(c: Pick<ContextUsage, 'used_tokens' | 'window_tokens' | 'compact_at_tokens'>): ContextFill | undefined {
  const window = n(c.window_tokens);
  if (!window) return undefined;
  const used = n(c.used_tokens);
  const compactAt = n(c.compact_at_tokens) || window;
  const clamp = (x: number) => Math.min(1, Math.max(0, x));
  return { used, window, compactAt, fraction: clamp(used / window), compactFraction: clamp(compactAt / window) };
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** "5,210 of 8,192 tokens (64%); compaction at 75%" */
export function contextText(fill: ContextFill): string {
  return `${formatCount(fill.used)} of ${formatCount(fill.window)} tokens (${pct(fill.used / fill.window)}); compaction at ${pct(fill.compactAt / fill.window)}`;
}

/** "5,210 in (1,024 cached) · 320 out · $0.0123" */
export function totalsText(t: UsageTotals): string {
  const parts = [
    `${formatCount(t.input_tokens)} in${t.cached_tokens ? ` (${formatCount(t.cached_tokens)} cached)` : ''}`,
    `${formatCount(t.output_tokens)} out`,
  ];
  if (t.cost_usd !== undefined) parts.push(`${formatCost(t.cost_usd)}${t.unpriced ? ' (some requests unpriced)' : ''}`);
  return parts.join(' · ');
}

/** The usage a model request reported in `e`, where its type's `usage` trait says (./eventTraits): a response's, or a compaction's summary request's. */
export function usageOfEvent(e: { type: string }): Usage | undefined {
  const at = traitsOf(e.type)?.usage;
  const carrier = e as { response?: { usage?: Usage }; usage?: Usage };
  return at === 'response' ? carrier.response?.usage : at === 'event' ? carrier.usage : undefined;
}

/** Sums the usage of every model request of `events` (of one turn, or a whole conversation: responses and summary requests), priced per turn's model. */
export function totalsOfEvents(events: readonly { type: string }[], provider?: string, model?: string): { totals: UsageTotals; context?: ContextUsage } {
  const totals = emptyTotals();
  let context: ContextUsage | undefined;
  let p = provider;
  let m = model;
  for (const e of events) {
    if (e.type === 'codeact.turn.started') {
      const t = e as { provider?: string; model?: string };
      p = t.provider ?? provider;
      m = t.model ?? model;
    } else if (e.type === 'codeact.context.usage') context = e as ContextUsage;
    else {
      const u = usageOfEvent(e);
      if (u) addUsage(totals, u, p, m);
    }
  }
  return { totals, ...(context ? { context } : {}) };
}

/** What `codeact chat` reports at the end: this turn's usage (events from `turnStart` on), the conversation's, the window. */
export function usageSummary(conversationId: string, events: readonly { type: string }[], turnStart: number): UsageSummary {
  const turn = totalsOfEvents(events.slice(turnStart));
  // The turn's model prices the earlier events only from their own turn markers.
  const all = totalsOfEvents(events);
  const context = turn.context ?? all.context;
  const priced = turn.totals.cost_usd !== undefined || all.totals.cost_usd !== undefined;
  return {
    type: 'codeact.usage.summary',
    conversation_id: conversationId,
    turn: turn.totals,
    conversation: all.totals,
    ...(context ? { context: { used_tokens: context.used_tokens, window_tokens: context.window_tokens, compact_at_tokens: context.compact_at_tokens } } : {}),
    ...(priced ? { prices_as_of: PRICES_AS_OF } : {}),
  };
}

/** The end of a human chat: "tokens this turn: 5,210 in (1,024 cached) · 100 out · $0.0013; conversation: …; context: 5,210 of 8,192 tokens (64%); compaction at 75%". */
export function usageSummaryText(s: UsageSummary): string {
  const parts = [`this turn ${totalsText(s.turn)}`, `conversation ${totalsText(s.conversation)}`];
  const fill = s.context ? contextFill(s.context) : undefined;
  if (fill) parts.push(`context ${contextText(fill)}`);
  return `tokens: ${parts.join('; ')}${s.prices_as_of ? ` (list prices as of ${s.prices_as_of})` : ''}`;
}
