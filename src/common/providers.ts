/**
 * The providers, once: one row per provider with every fact the engine, the panel and the CLI read about
 * it, so that nothing outside this module compares a provider's name. A new provider is a new member of
 * `ProviderId`, which fails to compile until its row is written here (and its adapter in
 * src/core/providers/registry.ts). Pure data; core's own facts (vision, context windows, hosted tool
 * versions) are in src/core/providers/shared/catalog.ts, which re-exports these.
 */
import { MODES, type CodeMode, type ConfiguredRuntime, type RuntimeKind } from './runtimes';

export type ProviderId = 'openai' | 'openai-compatible' | 'anthropic' | 'gemini';

/** The runtime kind of a provider's hosted sandbox: the provider's own id. */
export type HostedRuntime = Extract<RuntimeKind, ProviderId>;

/** List prices of one model, in US dollars per million tokens. */
export interface ModelPrice {
  /** USD per million input tokens (not read from the cache). */
  input: number;
  /** USD per million input tokens read from the prompt cache. */
  cached: number;
  /** USD per million output tokens (reasoning included). */
  output: number;
}

/** The date of the price lists below (standard tier, prompts up to 200k tokens). */
export const PRICES_AS_OF = '2026-12-01';

/**
 * The date of the model lists below (each provider's `defaultModels`: its newest first-party models CodeAct
 * knows, the pickers' suggestions) and of which models are known not to see images (core's catalog.ts). The
 * pickers and the README show it; any other model id can still be typed.
 */
export const MODELS_AS_OF = '2026-12-04';

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
  /**
   * A server the person runs (Ollama, vLLM, llama.cpp, LM Studio) or a third party's: messages name its base
   * URL, ask whether it runs, point at its model list, and a rejection may be of `tools`.
   */
  localServer: boolean;
  /** The runtime kind of its own hosted sandbox (hosted mode runs code there); unset: it has none, and hosted mode runs code locally. */
  hostedSandbox?: HostedRuntime;
  /** The models the pickers suggest, the first one the default (as of MODELS_AS_OF). */
  defaultModels: readonly string[];
  /** The largest image its API takes, in base64 characters (larger ones are never attached: the request would fail). */
  maxImageBase64?: number;
  /** The server asked when no base URL is set (unset: the SDK's own). */
  defaultBaseURL?: string;
  /**
   * List prices by model id (the longest whole prefix wins: `gpt-5-mini-2025-08-07` is priced as
   * `gpt-5-mini`), as of PRICES_AS_OF. Unset: its costs are never shown (a local or third-party server).
   */
  prices?: Readonly<Record<string, ModelPrice>>;
  /** How Select Model's "Other model…" box ends "The exact model id …". */
  modelIdFrom: string;
  /** What the panel's first steps say about its key, when it needs none (set exactly when `needsKey` is false). */
  keyOptional?: string;
}

type ProviderRow = Omit<ProviderInfo, 'id'>;

const ROWS: Record<ProviderId, ProviderRow> = {
  openai: {
    label: 'OpenAI',
    who: 'OpenAI',
    keyEnv: ['OPENAI_API_KEY'],
    needsKey: true,
    firstParty: true,
    localServer: false,
    hostedSandbox: 'openai',
    defaultModels: ['gpt-5', 'gpt-5-mini', 'gpt-5-nano', 'gpt-4.1'],
    prices: {
      'gpt-5': { input: 1.25, cached: 0.125, output: 10 },
      'gpt-5-mini': { input: 0.25, cached: 0.025, output: 2 },
      'gpt-5-nano': { input: 0.05, cached: 0.005, output: 0.4 },
      'gpt-4.1': { input: 2, cached: 0.5, output: 8 },
      'gpt-4.1-mini': { input: 0.4, cached: 0.1, output: 1.6 },
      'gpt-4.1-nano': { input: 0.1, cached: 0.025, output: 0.4 },
      'gpt-4o': { input: 2.5, cached: 1.25, output: 10 },
      'gpt-4o-mini': { input: 0.15, cached: 0.075, output: 0.6 },
    },
    modelIdFrom: 'of the provider',
  },
  anthropic: {
    label: 'Anthropic',
    who: 'Anthropic',
    keyEnv: ['ANTHROPIC_API_KEY'],
    needsKey: true,
    firstParty: true,
    localServer: false,
    hostedSandbox: 'anthropic',
    defaultModels: ['claude-sonnet-4-6', 'claude-opus-4-5', 'claude-haiku-4-5'],
    // "image exceeds 5 MB maximum": the API counts the base64 text.
    maxImageBase64: 5 * 1024 * 1024,
    prices: {
      'claude-sonnet-4': { input: 3, cached: 0.3, output: 15 },
      'claude-opus-4-5': { input: 5, cached: 0.5, output: 25 },
      'claude-opus-4-1': { input: 15, cached: 1.5, output: 75 },
      'claude-opus-4-0': { input: 15, cached: 1.5, output: 75 },
      'claude-haiku-4-5': { input: 1, cached: 0.1, output: 5 },
    },
    modelIdFrom: 'of the provider',
  },
  gemini: {
    label: 'Gemini',
    who: 'Gemini',
    keyEnv: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    needsKey: true,
    firstParty: true,
    localServer: false,
    hostedSandbox: 'gemini',
    defaultModels: ['gemini-3-flash-preview', 'gemini-3-pro-preview', 'gemini-2.5-pro', 'gemini-2.5-flash'],
    prices: {
      'gemini-3-pro': { input: 2, cached: 0.2, output: 12 },
      'gemini-3-flash': { input: 0.5, cached: 0.05, output: 3 },
      'gemini-2.5-pro': { input: 1.25, cached: 0.125, output: 10 },
      'gemini-2.5-flash': { input: 0.3, cached: 0.03, output: 2.5 },
      'gemini-2.5-flash-lite': { input: 0.1, cached: 0.01, output: 0.4 },
    },
    modelIdFrom: 'of the provider',
  },
  'openai-compatible': {
    label: 'OpenAI-compatible',
    who: 'the OpenAI-compatible server',
    // Never OPENAI_API_KEY: a local or third-party server must not receive the user's OpenAI key.
    keyEnv: ['OPENAI_COMPATIBLE_API_KEY'],
    needsKey: false,
    firstParty: false,
    localServer: true,
    defaultModels: ['qwen2.5-coder:7b', 'llama3.1:8b', 'gpt-oss:20b'],
    // Ollama's.
    defaultBaseURL: 'http://127.0.0.1:11434/v1',
    modelIdFrom: 'your server serves (ollama list)',
    keyOptional: 'OpenAI-compatible servers such as Ollama, vLLM and llama.cpp usually need none; set one with Set API Key… if yours does.',
  },
};

/** Every provider's row, by id. */
export const PROVIDERS: Readonly<Record<ProviderId, ProviderInfo>> = withIds(ROWS);

function withIds(rows: Record<ProviderId, ProviderRow>): Record<ProviderId, ProviderInfo> {
  const out = {} as Record<ProviderId, ProviderInfo>;
  for (const id of Object.keys(rows) as ProviderId[]) out[id] = { id, ...rows[id] };
  return out;
}

/** The providers in the order pickers show them. */
export const PROVIDER_CATALOG: readonly ProviderInfo[] = Object.values(PROVIDERS);

export const PROVIDER_IDS: readonly ProviderId[] = PROVIDER_CATALOG.map((p) => p.id);

export function providerInfo(id: ProviderId): ProviderInfo {
  const p = findProvider(id);
  if (!p) throw new Error(`Unknown provider "${String(id)}": use one of ${PROVIDER_IDS.join(', ')}.`);
  return p;
}

/** The row of a provider named by a string from elsewhere (a transcript, the panel's state), if it is one. */
export function findProvider(id: string | undefined): ProviderInfo | undefined {
  return id !== undefined && Object.prototype.hasOwnProperty.call(PROVIDERS, id) ? PROVIDERS[id as ProviderId] : undefined;
}

/** Where VS Code's secret storage keeps the provider's key. */
export function secretKeyName(id: ProviderId): string {
  return `codeact.apiKey.${id}`;
}

/** The provider named at the start of a sentence: "The OpenAI-compatible server rejected…". */
export function whoStarting(id: ProviderId): string {
  const who = providerInfo(id).who;
  return who[0].toUpperCase() + who.slice(1);
}

/**
 * Where a configuration's code runs: the runtime setting's in a mode of ours; in hosted mode, the provider's
 * own sandbox (a provider without one, an OpenAI-compatible server, has its code run locally).
 */
export function runtimeKindOf(config: { mode: CodeMode; provider: string; runtime: ConfiguredRuntime }): RuntimeKind {
  if (MODES[config.mode].ourRuntime) return config.runtime;
  return findProvider(config.provider)?.hostedSandbox ?? 'local';
}
