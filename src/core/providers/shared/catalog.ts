/**
 * The providers' facts that only the engine reads: which models do not see images, context windows, and the
 * hosted sandboxes' options. The facts the panel and the CLI read too (ids, labels, keys, default models,
 * local server, hosted sandbox, prices) are in src/common/providers.ts, re-exported here; ./registry adds
 * how to build each adapter and read its SDK's errors.
 */
import { providerInfo, type ProviderId } from '../../../common/providers';

export { PROVIDER_CATALOG, PROVIDER_IDS, providerInfo, secretKeyName, whoStarting, type ProviderId, type ProviderInfo } from '../../../common/providers';

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

/**
 * First-party models known NOT to see images (text-only, or not chat models at all), as patterns on the
 * normalised id, as of MODELS_AS_OF (../../../common/providers.ts). Every other model of a first-party
 * provider is taken to see images: current models do, so a new one gets them from its first day, without
 * waiting for a pattern to learn its name. An OpenAI-compatible server is not first-party: its setting
 * decides (`codeact.openaiCompatible.visionModels`), and its list is empty.
 */
const TEXT_ONLY: Record<ProviderId, readonly RegExp[]> = {
  openai: [
    // GPT-3.5 and the first GPT-4 models (gpt-4, -0613, -32k, the -preview turbos before gpt-4-turbo).
    /^gpt-3\.5/,
    /^gpt-4(-\d{4})?$/,
    /^gpt-4-32k/,
    /^gpt-4-\d{4}-preview$/,
    /^gpt-4-turbo-preview$/,
    // The first small reasoning models.
    /^(o1-mini|o1-preview|o3-mini)/,
    // Speech, realtime and search variants of chat models.
    /-(audio|realtime|transcribe|tts|search)(-|$)/,
    // Not chat models.
    /^(text-embedding|text-moderation|omni-moderation|babbage|davinci|whisper|tts-|dall-e|gpt-image|sora)/,
  ],
  // Claude models before Claude 3; every Claude 3 and later sees images.
  anthropic: [/^claude-([12](\.\d+)?|instant)(-|$)/],
  // Embeddings, the attributed-QA model, Gemini 1.0 Pro.
  gemini: [/embedding/, /^aqa$/, /^gemini-(1\.0-)?pro(-\d+)?$/, /^gemini-1\.0-pro-(\d+|latest)$/],
  'openai-compatible': [],
};

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
 * Whether `model` of `provider` can see images, the one place this is decided: a first-party model does
 * unless TEXT_ONLY lists it (a model named after the list was made is taken to see them); a model of an
 * OpenAI-compatible server only when the setting lists it (`codeact.openaiCompatible.visionModels`; `"*"`
 * for all; none by default).
 */
export function modelSeesImages(provider: ProviderId, model: string, compatibleVisionModels: readonly string[] = []): boolean {
  if (providerInfo(provider).firstParty) {
    const m = baseModel(model);
    return !TEXT_ONLY[provider].some((re) => re.test(m));
  }
  const wanted = model.trim().toLowerCase();
  return compatibleVisionModels.some((v) => v === '*' || v === model || v.trim().toLowerCase() === wanted);
}

// ---- context windows ----------------------------------------------------------------------------

/**
 * Context windows of first-party models, in tokens (as the providers document them; the first match
 * wins). None for an OpenAI-compatible server: its settings and the server say.
 */
const WINDOWS: Record<ProviderId, readonly [RegExp, number][] | undefined> = {
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
  'openai-compatible': [],
};

/** The context window of a first-party model (undefined for an OpenAI-compatible server: its settings and the server say). */
export function contextWindowOf(provider: ProviderId, model: string): number | undefined {
  const m = baseModel(model);
  return WINDOWS[provider]?.find(([re]) => re.test(m))?.[1];
}
