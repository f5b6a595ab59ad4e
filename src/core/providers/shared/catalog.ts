/**
 * The providers, once: id, label, where their key comes from, their default models and base URL, whether
 * they are first-party (their key must never go to a server a workspace chose), and their hosted
 * sandboxes' options. Pure data, so error messages, settings (config/keys.ts) and both hosts use it;
 * ./registry adds how to build each adapter.
 */

export type ProviderId = 'openai' | 'openai-compatible' | 'anthropic' | 'gemini';

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
  /** The largest image its API takes, in base64 characters (larger ones are never attached: the request would fail). */
  maxImageBase64?: number;
  /** The server asked when no base URL is set (unset: the SDK's own). */
  defaultBaseURL?: string;
}

export const PROVIDER_CATALOG: readonly ProviderInfo[] = [
  {
    id: 'openai',
    label: 'OpenAI',
    who: 'OpenAI',
    keyEnv: ['OPENAI_API_KEY'],
    needsKey: true,
    firstParty: true,
    defaultModels: ['gpt-5', 'gpt-5-mini', 'gpt-5-nano', 'gpt-4.1'],
  },
  {
    id: 'anthropic',
    label: 'Anthropic',
    who: 'Anthropic',
    keyEnv: ['ANTHROPIC_API_KEY'],
    needsKey: true,
    firstParty: true,
    defaultModels: ['claude-sonnet-4-6', 'claude-opus-4-1', 'claude-haiku-4-5'],
    // "image exceeds 5 MB maximum": the API counts the base64 text.
    maxImageBase64: 5 * 1024 * 1024,
  },
  {
    id: 'gemini',
    label: 'Gemini',
    who: 'Gemini',
    keyEnv: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    needsKey: true,
    firstParty: true,
    defaultModels: ['gemini-3-flash-preview', 'gemini-3-pro-preview', 'gemini-2.5-pro', 'gemini-2.5-flash'],
  },
  {
    id: 'openai-compatible',
    label: 'OpenAI-compatible',
    who: 'the OpenAI-compatible server',
    // Never OPENAI_API_KEY: a local or third-party server must not receive the user's OpenAI key.
    keyEnv: ['OPENAI_COMPATIBLE_API_KEY'],
    needsKey: false,
    firstParty: false,
    defaultModels: ['qwen2.5-coder:7b', 'llama3.1:8b', 'gpt-oss:20b'],
    // Ollama's.
    defaultBaseURL: 'http://127.0.0.1:11434/v1',
  },
];

export const PROVIDER_IDS: readonly ProviderId[] = PROVIDER_CATALOG.map((p) => p.id);

/** Where VS Code's secret storage keeps the provider's key. */
export function secretKeyName(id: ProviderId): string {
  return `codeact.apiKey.${id}`;
}

/** The provider named at the start of a sentence: "The OpenAI-compatible server rejected…". */
export function whoStarting(id: ProviderId): string {
  const who = providerInfo(id).who;
  return who[0].toUpperCase() + who.slice(1);
}

// ---- hosted sandboxes -----------------------------------------------------------------------------

/**
 * Anthropic's code execution tool versions, each with the `anthropic-beta` it needs (none for the newer
 * ones; what each streams: ../anthropic/anthropic.ts). codeact.hosted.anthropicToolVersion offers these
 * (config/keys.ts; test/engine/catalogue.test.ts checks package.json against them).
 */
export const ANTHROPIC_CODE_TOOLS = {
  code_execution_20250522: 'code-execution-2025-05-22',
  code_execution_20250825: 'code-execution-2025-08-25',
  code_execution_20260120: undefined,
  code_execution_20260521: undefined,
} as const satisfies Record<string, string | undefined>;

export type AnthropicCodeTool = keyof typeof ANTHROPIC_CODE_TOOLS;
export const ANTHROPIC_CODE_TOOL_VERSIONS = Object.keys(ANTHROPIC_CODE_TOOLS) as AnthropicCodeTool[];
export const DEFAULT_ANTHROPIC_CODE_TOOL: AnthropicCodeTool = 'code_execution_20250825';

/** The memory of a new OpenAI code-interpreter container (codeact.hosted.memoryLimit). */
export const OPENAI_CONTAINER_MEMORY = ['1g', '4g', '16g', '64g'] as const;
export type OpenAIContainerMemory = (typeof OPENAI_CONTAINER_MEMORY)[number];
export const DEFAULT_OPENAI_CONTAINER_MEMORY: OpenAIContainerMemory = '1g';

// ---- which models see images ----------------------------------------------------------------------

/** OpenAI models that take image input (ids as the API names them; fine-tunes by their base model). */
const OPENAI_VISION = /^(chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-4-vision|gpt-[5-9]|o1|o3|o4|computer-use)/;
/** OpenAI models of those families that are text-only, or not chat models at all. */
const OPENAI_TEXT_ONLY = /^(o1-mini|o1-preview|o3-mini)|-(audio|realtime|transcribe|tts|search)(-|$)|^gpt-4-turbo-preview|^gpt-4-\d{4}-preview/;
/** Claude models before Claude 3 are text-only; every Claude 3 and later sees images. */
const ANTHROPIC_TEXT_ONLY = /^claude-(2|instant)/;
/** Gemini models that are text-only (embeddings, the attributed-QA model, Gemini 1.0 Pro). */
const GEMINI_TEXT_ONLY = /embedding|^aqa$|^gemini-(1\.0-)?pro(-\d+)?$|^gemini-1\.0-pro-(\d+|latest)$/;

/** Normalised model id: lower case, without `models/` (Gemini) or a fine-tune's `ft:` prefix and suffix. */
function baseModel(model: string): string {
  let m = model
    .trim()
    .toLowerCase()
    .replace(/^models\//, '');
  if (m.startsWith('ft:')) m = m.slice(3).split(':')[0];
  return m;
}

/**
 * Whether `model` of `provider` can see images, the one place this is decided: first-party models by
 * family (OpenAI gpt-4o, 4.1, 4.5, 5 and later, o1, o3, o4; every Claude 3 and later; every Gemini), less
 * the known text-only ones; a model of an OpenAI-compatible server only when the setting lists it
 * (`codeact.openaiCompatible.visionModels`; `"*"` for all; none by default).
 */
export function modelSeesImages(provider: ProviderId, model: string, compatibleVisionModels: readonly string[] = []): boolean {
  const m = baseModel(model);
  switch (provider) {
    case 'openai':
      return OPENAI_VISION.test(m) && !OPENAI_TEXT_ONLY.test(m);
    case 'anthropic':
      return m.startsWith('claude-') && !ANTHROPIC_TEXT_ONLY.test(m);
    case 'gemini':
      return !GEMINI_TEXT_ONLY.test(m);
    case 'openai-compatible':
      return compatibleVisionModels.some((v) => v === '*' || v === model || v.trim().toLowerCase() === model.trim().toLowerCase());
  }
}

export function providerInfo(id: ProviderId): ProviderInfo {
  const p = PROVIDER_CATALOG.find((c) => c.id === id);
  if (!p) throw new Error(`Unknown provider "${String(id)}": use one of ${PROVIDER_IDS.join(', ')}.`);
  return p;
}

// ---- context windows ----------------------------------------------------------------------------

/** Context windows of first-party models, in tokens (as the providers document them; the longest prefix wins). */
const WINDOWS: Record<'openai' | 'anthropic' | 'gemini', readonly [RegExp, number][]> = {
  openai: [
    [/^gpt-5/, 400_000],
    [/^gpt-4\.1/, 1_047_576],
    [/^(o1|o3|o4)/, 200_000],
    [/^(gpt-4o|chatgpt-4o|gpt-4-turbo|gpt-4\.5)/, 128_000],
    [/^gpt-4/, 8_192],
    [/^gpt-3\.5/, 16_385],
    [/./, 128_000],
  ],
  anthropic: [[/./, 200_000]],
  gemini: [
    [/^gemini-1\.0/, 32_760],
    [/./, 1_048_576],
  ],
};

/** The context window of a first-party model (undefined for an OpenAI-compatible server: its settings and the server say). */
export function contextWindowOf(provider: ProviderId, model: string): number | undefined {
  if (provider === 'openai-compatible') return undefined;
  const m = baseModel(model);
  return WINDOWS[provider].find(([re]) => re.test(m))?.[1];
}
