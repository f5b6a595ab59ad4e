/**
 * The providers, once: id, label, where their key comes from, their default models, and whether they are
 * first-party (their key must never go to a server a workspace chose). Pure data, so error messages and
 * settings can use it; ./registry adds how to build each adapter.
 */
import type { ProviderId } from './types';

export interface ProviderInfo {
  id: ProviderId;
  /** For pickers and messages: "OpenAI". */
  label: string;
  /** In a sentence: "the OpenAI-compatible server". */
  who: string;
  /** Environment variables its key is read from, in order (never OPENAI_API_KEY for a third-party server). */
  keyEnv: readonly string[];
  /** Needs a key (a local OpenAI-compatible server usually does not). */
  needsKey: boolean;
  /** A first-party provider: its base URL only from the user's settings or a flag. */
  firstParty: boolean;
  defaultModels: readonly string[];
}

export const PROVIDER_CATALOG: readonly ProviderInfo[] = [
  { id: 'openai', label: 'OpenAI', who: 'OpenAI', keyEnv: ['OPENAI_API_KEY'], needsKey: true, firstParty: true, defaultModels: ['gpt-5', 'gpt-5-mini', 'gpt-5-nano', 'gpt-4.1'] },
  { id: 'anthropic', label: 'Anthropic', who: 'Anthropic', keyEnv: ['ANTHROPIC_API_KEY'], needsKey: true, firstParty: true, defaultModels: ['claude-sonnet-4-6', 'claude-opus-4-1', 'claude-haiku-4-5'] },
  {
    id: 'gemini',
    label: 'Gemini',
    who: 'Gemini',
    keyEnv: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    needsKey: true,
    firstParty: true,
    defaultModels: ['gemini-3-flash-preview', 'gemini-3-pro-preview', 'gemini-2.5-pro', 'gemini-2.5-flash'],
  },
  // Never OPENAI_API_KEY: a local or third-party server must not receive the user's OpenAI key.
  { id: 'openai-compatible', label: 'OpenAI-compatible', who: 'the OpenAI-compatible server', keyEnv: ['OPENAI_COMPATIBLE_API_KEY'], needsKey: false, firstParty: false, defaultModels: ['qwen2.5-coder:7b', 'llama3.1:8b', 'gpt-oss:20b'] },
];

export const PROVIDER_IDS: readonly ProviderId[] = PROVIDER_CATALOG.map((p) => p.id);

export function providerInfo(id: ProviderId): ProviderInfo {
  const p = PROVIDER_CATALOG.find((c) => c.id === id);
  if (!p) throw new Error(`Unknown provider "${String(id)}": use one of ${PROVIDER_IDS.join(', ')}.`);
  return p;
}
