/**
 * Costs at list prices, for the context meter and the CLI's end-of-chat line. The prices are the
 * providers' rows (./providers: US dollars per million tokens, standard tier, prompts up to 200k tokens,
 * as of `PRICES_AS_OF`). Only an estimate: batch, priority and long-prompt tiers and provider discounts are
 * not modelled. A provider without prices (a local or third-party server) has its cost never shown.
 */
import type { Usage } from './events';
import { findProvider, PRICES_AS_OF, type ModelPrice } from './providers';

export { PRICES_AS_OF };

/** The price of `model` of `provider`, or undefined (a local server, an unknown model). */
export function priceOf(provider: string | undefined, model: string | undefined): ModelPrice | undefined {
  const prices = findProvider(provider)?.prices;
  if (!model || !prices) return undefined;
  const m = model
    .trim()
    .toLowerCase()
    .replace(/^models\//, '');
  let best: string | undefined;
  for (const key of Object.keys(prices)) {
    // A whole part of the id: `gpt-5` prices `gpt-5-2025-08-07`, never `gpt-50`.
    if ((m === key || m.startsWith(key + '-')) && (!best || key.length > best.length)) best = key;
  }
  return best ? prices[best] : undefined;
}

/** What `usage` cost in USD at `price` (cached input at the cached rate). */
export function costOf(usage: Usage, price: ModelPrice): number {
  const cached = Math.min(Math.max(0, usage.cached_tokens ?? 0), Math.max(0, usage.input_tokens || 0));
  const fresh = Math.max(0, (usage.input_tokens || 0) - cached);
  return (fresh * price.input + cached * price.cached + Math.max(0, usage.output_tokens || 0) * price.output) / 1_000_000;
}

/** `$0.0123`, `$1.24`, `<$0.0001`. */
export function formatCost(usd: number): string {
  if (usd > 0 && usd < 0.0001) return '<$0.0001';
  return usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`;
}
