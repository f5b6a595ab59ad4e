/**
 * Creates a provider adapter from the registry (./registry), with its key from the configuration or the
 * environment. A missing key for a provider that needs one is a `ProviderError` with code `auth`, before any
 * request.
 */
import { missingKeyError } from './shared/errors';
import { PROVIDER_IDS, providerEntry } from './registry';
import type { Provider, ProviderConfig, ProviderId } from './shared/types';

export { PROVIDER_IDS };

/** The key from the environment variables of the provider (first one set), if any. */
export function apiKeyFromEnv(provider: ProviderId, env: Record<string, string | undefined> = process.env): string | undefined {
  for (const name of providerEntry(provider).keyEnv) {
    const v = env[name];
    if (v && v.trim()) return v.trim();
  }
  return undefined;
}

export async function createProvider(config: ProviderConfig): Promise<Provider> {
  const entry = providerEntry(config.provider);
  const apiKey = config.apiKey ?? apiKeyFromEnv(config.provider, config.env ?? process.env);
  if (entry.needsKey && !apiKey) throw missingKeyError(config.provider);
  return entry.create(config, apiKey);
}
