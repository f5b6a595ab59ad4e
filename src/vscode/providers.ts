/**
 * Each provider's label and suggested models, for pickers and messages (the registry's). No `vscode` here,
 * so the session's logic (./session) can use them in plain Node tests too.
 */
import { PROVIDER_CATALOG } from '../core/providers/shared/catalog';
import { API_KEY_ENV_VARS, ProviderError } from '../core/providers/shared/errors';
import { PROVIDERS } from '../core/providers/registry';
import type { ProviderId } from '../core/providers/shared/types';
import type { FileOutput } from '../common/events';
import { createProvider } from '../core/providers/factory';
import type { CodeActSettings } from './settings';

/** Each provider's label, for pickers and messages (the registry's). */
export const PROVIDER_NAMES: Record<ProviderId, string> = Object.fromEntries(PROVIDERS.map((p) => [p.id, p.label])) as Record<ProviderId, string>;

/** Each provider's suggested models (the registry's). */
export const DEFAULT_MODELS: Record<ProviderId, readonly string[]> = Object.fromEntries(PROVIDER_CATALOG.map((p) => [p.id, p.defaultModels])) as Record<ProviderId, readonly string[]>;

/** Whether the provider needs an API key (an OpenAI-compatible server usually does not). */
export function needsKey(provider: ProviderId): boolean {
  return PROVIDER_CATALOG.find((p) => p.id === provider)?.needsKey ?? true;
}

/** The missing-key error as VS Code says it: the button that fixes it first, the environment second. */
export function noKeyError(provider: ProviderId): ProviderError {
  const vars = API_KEY_ENV_VARS[provider].join(' or ');
  return new ProviderError({
    code: 'auth',
    provider,
    message: `No API key for ${PROVIDER_NAMES[provider]} yet. Choose Set API Key… to store one in VS Code's secret storage${vars ? ` (or start VS Code with ${vars} in its environment)` : ''}.`,
  });
}

/** Downloads a file the provider's hosted sandbox produced (OpenAI container files, Anthropic Files API). */
export async function downloadHostedFile(s: CodeActSettings, apiKey: (p: ProviderId) => Promise<string | undefined>, file: FileOutput): Promise<{ bytes: Uint8Array; filename: string }> {
  const provider = await createProvider({ provider: s.provider, apiKey: await apiKey(s.provider), baseURL: s.baseUrl });
  if (!provider.downloadFile) throw new Error(`${PROVIDER_NAMES[s.provider]} has no downloadable sandbox files; switch to the provider that made this file.`);
  const got = await provider.downloadFile(file);
  const filename = (got.filename ?? file.filename ?? file.file_id ?? 'download').split(/[\\/]/).pop()!;
  return { bytes: got.bytes, filename };
}
