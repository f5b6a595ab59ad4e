/**
 * The provider registry: the catalogue (./catalog: ids, labels, keys, default models) and how to build
 * each adapter. The SDK is loaded lazily, so starting the extension or the CLI loads none of them; SDK
 * retries are off (the agent loop retries); stream parse failures become ProviderErrors with the detail,
 * never SDK console output.
 */
import { AnthropicProvider } from './anthropic/anthropic';
import { PROVIDER_IDS, providerInfo, type ProviderInfo } from './shared/catalog';
import { GeminiProvider } from './gemini/gemini';
import { OpenAICompatibleProvider } from './openai/openaiChat';
import { OpenAIResponsesProvider } from './openai/openaiResponses';
import type { Provider, ProviderConfig, ProviderId } from './shared/types';
import { tappedFetch, type StreamBounds } from './shared/watchdog';

export { PROVIDER_IDS };

interface ProviderEntry extends ProviderInfo {
  create(config: ProviderConfig, apiKey: string | undefined): Promise<Provider>;
}

/** A streamed turn's bounds from the configuration (shared/watchdog: unset means the default). */
function boundsOf(config: ProviderConfig): Partial<StreamBounds> {
  return { firstByteMs: config.firstByteTimeoutMs, idleMs: config.idleTimeoutMs };
}

/** The options of the two Stainless-made SDKs (OpenAI's and Anthropic's): our retries, our timeout, no logs. */
function stainlessOptions(config: ProviderConfig, apiKey: string | undefined) {
  return {
    apiKey,
    baseURL: config.baseURL,
    maxRetries: 0,
    timeout: config.timeoutMs,
    defaultHeaders: config.headers,
    logLevel: 'off' as const,
    fetch: tappedFetch(),
  };
}

// Every client gets `tappedFetch`: the turn's watchdog sees each piece of the body (pings included).
const FACTORIES: Record<ProviderId, ProviderEntry['create']> = {
  openai: async (config, apiKey) => {
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI(stainlessOptions(config, apiKey));
    return new OpenAIResponsesProvider(client, config.baseURL, boundsOf(config));
  },
  anthropic: async (config, apiKey) => {
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const client = new Anthropic(stainlessOptions(config, apiKey));
    return new AnthropicProvider(client, config.baseURL, boundsOf(config));
  },
  gemini: async (config, apiKey) => {
    const { GoogleGenAI } = await import('@google/genai');
    const client = new GoogleGenAI({
      apiKey,
      httpOptions: {
        ...(config.baseURL ? { baseUrl: config.baseURL } : {}),
        ...(config.headers ? { headers: config.headers } : {}),
        ...(config.timeoutMs ? { timeout: config.timeoutMs } : {}),
        fetch: tappedFetch(),
      },
    });
    return new GeminiProvider(client, config.baseURL, boundsOf(config));
  },
  'openai-compatible': async (config, apiKey) => {
    const { default: OpenAI } = await import('openai');
    const baseURL = config.baseURL ?? providerInfo('openai-compatible').defaultBaseURL!;
    // Local servers (Ollama, vLLM, llama.cpp, LM Studio) accept any key; the SDK insists on one.
    const client = new OpenAI({ ...stainlessOptions(config, apiKey ?? 'not-needed'), baseURL });
    return new OpenAICompatibleProvider(client, {
      baseURL,
      supportsTools: config.supportsTools ?? true,
      contextWindow: config.contextWindow,
      models: config.models ?? {},
      streamUsage: config.streamUsage ?? true,
      visionModels: config.visionModels ?? [],
      bounds: boundsOf(config),
    });
  },
};

export function providerEntry(id: ProviderId): ProviderEntry {
  return { ...providerInfo(id), create: FACTORIES[id] };
}
