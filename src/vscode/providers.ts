/**
 * What the extension says and does about providers beyond the catalogue (core/providers/shared/catalog.ts:
 * labels, keys, default models). No `vscode` here, so the controller's logic (./controller) can use it in
 * plain Node tests too.
 */
import { providerInfo } from '../core/providers/shared/catalog';
import { ProviderError } from '../core/providers/shared/errors';
import type { Provider, ProviderId } from '../core/providers/shared/types';
import { providerConfigFrom } from '../core/config/engine';
import type { FileOutput } from '../common/events';
import { createProvider } from '../core/providers/factory';
import type { CodeActSettings } from './settings';

/** The missing-key message as VS Code says it: the button that fixes it first, the environment second. */
export function noKeyMessage(provider: ProviderId): string {
  const vars = providerInfo(provider).keyEnv.join(' or ');
  return `No API key for ${providerInfo(provider).label} yet. Choose Set API Key… to store one in VS Code's secret storage${vars ? ` (or start VS Code with ${vars} in its environment)` : ''}.`;
}

function noKeyError(provider: ProviderId): ProviderError {
  return new ProviderError({ code: 'auth', provider, message: noKeyMessage(provider) });
}

/** The provider a folder's settings name, with its key from secret storage (a needed key missing: {@link noKeyError}). */
export async function providerFor(s: CodeActSettings, apiKey: (p: ProviderId) => Promise<string | undefined>): Promise<Provider> {
  const key = await apiKey(s.provider);
  if (!key && providerInfo(s.provider).needsKey) throw noKeyError(s.provider);
  return createProvider(providerConfigFrom(s, key));
}

/** Downloads a file the provider's hosted sandbox produced (OpenAI container files, Anthropic Files API). */
export async function downloadHostedFile(
  s: CodeActSettings,
  apiKey: (p: ProviderId) => Promise<string | undefined>,
  file: FileOutput,
): Promise<{ bytes: Uint8Array; filename: string }> {
  const provider = await createProvider({ provider: s.provider, apiKey: await apiKey(s.provider), baseURL: s.baseURL });
  if (!provider.downloadFile)
    throw new Error(`${providerInfo(s.provider).label} has no downloadable sandbox files; switch to the provider that made this file.`);
  const got = await provider.downloadFile(file);
  const filename = (got.filename ?? file.filename ?? file.file_id ?? 'download').split(/[\\/]/).pop()!;
  return { bytes: got.bytes, filename };
}
