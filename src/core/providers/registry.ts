/**
 * The provider registry: the catalogue (./shared/catalog: ids, labels, keys, default models) and how to
 * build each adapter, with the error classifier of its SDK (one per SDK: the OpenAI SDK's serves OpenAI and
 * the OpenAI-compatible servers). The SDK is loaded lazily, so starting the extension or the CLI loads none of them; SDK
 * retries are off (the agent loop retries); stream parse failures become ProviderErrors with the detail,
 * never SDK console output.
 */
import { AnthropicProvider } from './anthropic/anthropic';
import { anthropicErrors } from './anthropic/anthropicErrors';
import { geminiErrors } from './gemini/geminiErrors';
import { openaiErrors } from './openai/openaiErrors';
import type { ErrorClassifier } from './shared/errorReading';
import { PROVIDER_IDS, providerInfo, type ProviderInfo } from './shared/catalog';
import { GeminiProvider } from './gemini/gemini';
import { OpenAICompatibleProvider } from './openai/openaiChat';
import { OpenAIResponsesProvider } from './openai/openaiResponses';
import type { Provider, ProviderConfig, ProviderId } from './shared/types';
import { tappedFetch, type StreamBounds } from './shared/watchdog';

export { PROVIDER_IDS };

interface ProviderEntry extends ProviderInfo {
  /** Reads the errors of the provider's SDK; the adapter gets it at creation. */
  errors: ErrorClassifier;
  create(config: ProviderConfig, apiKey: string | undefined): Promise<Provider>;
}

/** Each provider's SDK, by the classifier of its errors. */
const SDK_ERRORS: Record<ProviderId, ErrorClassifier> = {
  openai: openaiErrors,
  anthropic: anthropicErrors,
  gemini: geminiErrors,
  'openai-compatible': openaiErrors,
};

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
    return new OpenAIResponsesProvider(client, SDK_ERRORS.openai, config.baseURL, boundsOf(config));
  },
  anthropic: async (config, apiKey) => {
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const client = new Anthropic(stainlessOptions(config, apiKey));
    return new AnthropicProvider(client, SDK_ERRORS.anthropic, config.baseURL, boundsOf(config));
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
    return new GeminiProvider(client, SDK_ERRORS.gemini, config.baseURL, boundsOf(config));
  },
  'openai-compatible': async (config, apiKey) => {
    const { default: OpenAI } = await import('openai');
    const baseURL = config.baseURL ?? providerInfo('openai-compatible').defaultBaseURL!;
    // Local servers (Ollama, vLLM, llama.cpp, LM Studio) accept any key; the SDK insists on one.
    const client = new OpenAI({ ...stainlessOptions(config, apiKey ?? 'not-needed'), baseURL });
    return new OpenAICompatibleProvider(client, {
      baseURL,
      errors: SDK_ERRORS['openai-compatible'],
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
  return { ...providerInfo(id), errors: SDK_ERRORS[id], create: FACTORIES[id] };
}
