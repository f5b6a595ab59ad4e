/**
 * Creates a provider adapter. The SDK of the chosen provider is loaded lazily (`await import()`),
 * so that starting the extension or the CLI loads none of them (the adapter modules import the SDKs
 * for types only). SDK retries are off (`maxRetries: 0`,
 * no Gemini `retryOptions`): the agent loop retries.
 */
import { AnthropicProvider } from './anthropic';
import { API_KEY_ENV_VARS, missingKeyError } from './errors';
import { GeminiProvider } from './gemini';
import { OpenAICompatibleProvider } from './openai-chat';
import { OpenAIResponsesProvider } from './openai-responses';
import type { Provider, ProviderConfig, ProviderId } from './types';

export const PROVIDER_IDS: readonly ProviderId[] = ['openai', 'openai-compatible', 'anthropic', 'gemini'];

/** The key from the environment variables of the provider (first one set), if any. */
export function apiKeyFromEnv(provider: ProviderId, env: Record<string, string | undefined> = process.env): string | undefined {
  for (const name of API_KEY_ENV_VARS[provider]) {
    const v = env[name];
    if (v && v.trim()) return v.trim();
  }
  return undefined;
}

/**
 * Throws a `ProviderError` with code `auth` when the key is missing (not for `openai-compatible`,
 * whose local servers usually need none).
 */
export async function createProvider(config: ProviderConfig): Promise<Provider> {
  const apiKey = config.apiKey ?? apiKeyFromEnv(config.provider, config.env ?? process.env);
  switch (config.provider) {
    case 'openai': {
      if (!apiKey) throw missingKeyError('openai');
      const { default: OpenAI } = await import('openai');
      const client = new OpenAI({
        apiKey,
        baseURL: config.baseURL,
        maxRetries: 0,
        timeout: config.timeoutMs,
        defaultHeaders: config.headers,
        // Stream parse failures become ProviderErrors with the detail; no SDK console output.
        logLevel: 'off',
      });
      return new OpenAIResponsesProvider(client, config.baseURL);
    }
    case 'openai-compatible': {
      const { default: OpenAI } = await import('openai');
      const baseURL = config.baseURL ?? 'http://127.0.0.1:11434/v1';
      const client = new OpenAI({
        // Local servers (Ollama, vLLM, llama.cpp, LM Studio) accept any key; the SDK insists on one.
        apiKey: apiKey ?? 'not-needed',
        baseURL,
        maxRetries: 0,
        timeout: config.timeoutMs,
        defaultHeaders: config.headers,
        // Stream parse failures become ProviderErrors with the detail; no SDK console output.
        logLevel: 'off',
      });
      return new OpenAICompatibleProvider(client, {
        baseURL,
        supportsTools: config.supportsTools ?? true,
        contextWindow: config.contextWindow,
        models: config.models ?? {},
        streamUsage: config.streamUsage ?? true,
      });
    }
    case 'anthropic': {
      if (!apiKey) throw missingKeyError('anthropic');
      const { default: Anthropic } = await import('@anthropic-ai/sdk');
      const client = new Anthropic({
        apiKey,
        baseURL: config.baseURL,
        maxRetries: 0,
        timeout: config.timeoutMs,
        defaultHeaders: config.headers,
        // Stream parse failures become ProviderErrors with the detail; no SDK console output.
        logLevel: 'off',
      });
      return new AnthropicProvider(client, config.baseURL);
    }
    case 'gemini': {
      if (!apiKey) throw missingKeyError('gemini');
      const { GoogleGenAI } = await import('@google/genai');
      const client = new GoogleGenAI({
        apiKey,
        httpOptions: {
          ...(config.baseURL ? { baseUrl: config.baseURL } : {}),
          ...(config.headers ? { headers: config.headers } : {}),
          ...(config.timeoutMs ? { timeout: config.timeoutMs } : {}),
        },
      });
      return new GeminiProvider(client, config.baseURL);
    }
    default: {
      const p: never = config.provider;
      throw new Error(`Unknown provider "${String(p)}". Use one of: ${PROVIDER_IDS.join(', ')}.`);
    }
  }
}
