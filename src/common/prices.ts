/**
 * A small, dated price table for the first-party models, for the context meter and the CLI's end-of-chat
 * line. List prices in US dollars per million tokens (standard tier, prompts up to 200k tokens), as of
 * `PRICES_AS_OF`. Only an estimate: batch, priority and long-prompt tiers and provider discounts are not
 * modelled. Local and third-party servers (`openai-compatible`) have no price: their cost is never shown.
 */
import type { Usage } from './events';

export const PRICES_AS_OF = '2026-12-01';

interface ModelPrice {
  /** USD per million input tokens (not read from the cache). */
  input: number;
  /** USD per million input tokens read from the prompt cache. */
  cached: number;
  /** USD per million output tokens (reasoning included). */
  output: number;
}

type Provider = 'openai' | 'anthropic' | 'gemini';

/** Longest prefix wins: `gpt-5-mini-2025-08-07` is priced as `gpt-5-mini`. */
const PRICES: Record<Provider, Record<string, ModelPrice>> = {
  openai: {
    'gpt-5': { input: 1.25, cached: 0.125, output: 10 },
    'gpt-5-mini': { input: 0.25, cached: 0.025, output: 2 },
    'gpt-5-nano': { input: 0.05, cached: 0.005, output: 0.4 },
    'gpt-4.1': { input: 2, cached: 0.5, output: 8 },
    'gpt-4.1-mini': { input: 0.4, cached: 0.1, output: 1.6 },
    'gpt-4.1-nano': { input: 0.1, cached: 0.025, output: 0.4 },
    'gpt-4o': { input: 2.5, cached: 1.25, output: 10 },
    'gpt-4o-mini': { input: 0.15, cached: 0.075, output: 0.6 },
  },
  anthropic: {
    'claude-sonnet-4': { input: 3, cached: 0.3, output: 15 },
    'claude-opus-4-5': { input: 5, cached: 0.5, output: 25 },
    'claude-opus-4-1': { input: 15, cached: 1.5, output: 75 },
    'claude-opus-4-0': { input: 15, cached: 1.5, output: 75 },
    'claude-haiku-4-5': { input: 1, cached: 0.1, output: 5 },
  },
  gemini: {
    'gemini-3-pro': { input: 2, cached: 0.2, output: 12 },
    'gemini-3-flash': { input: 0.5, cached: 0.05, output: 3 },
    'gemini-2.5-pro': { input: 1.25, cached: 0.125, output: 10 },
    'gemini-2.5-flash': { input: 0.3, cached: 0.03, output: 2.5 },
    'gemini-2.5-flash-lite': { input: 0.1, cached: 0.01, output: 0.4 },
  },
};

/** The price of `model` of `provider`, or undefined (a local server, an unknown model). */
export function priceOf(provider: string | undefined, model: string | undefined): ModelPrice | undefined {
  if (!model || (provider !== 'openai' && provider !== 'anthropic' && provider !== 'gemini')) return undefined;
  const m = model
    .trim()
    .toLowerCase()
    .replace(/^models\//, '');
  let best: string | undefined;
  for (const key of Object.keys(PRICES[provider])) {
    // A whole part of the id: `gpt-5` prices `gpt-5-2025-08-07`, never `gpt-50`.
    if ((m === key || m.startsWith(key + '-')) && (!best || key.length > best.length)) best = key;
  }
  return best ? PRICES[provider][best] : undefined;
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
