/**
 * The providers' facts that only the engine reads: which models see images, context windows, and the
 * hosted sandboxes' options. The facts the panel and the CLI read too (ids, labels, keys, default models,
 * local server, hosted sandbox, prices) are in src/common/providers.ts, re-exported here; ./registry adds
 * how to build each adapter and read its SDK's errors.
 */
import type { ProviderId } from '../../../common/providers';

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
  return SEES_IMAGES[provider](baseModel(model), model, compatibleVisionModels);
}

/** Per provider: whether the normalised model id `m` (`model` as set) sees images. */
const SEES_IMAGES: Record<ProviderId, (m: string, model: string, listed: readonly string[]) => boolean> = {
  openai: (m) => OPENAI_VISION.test(m) && !OPENAI_TEXT_ONLY.test(m),
  anthropic: (m) => m.startsWith('claude-') && !ANTHROPIC_TEXT_ONLY.test(m),
  gemini: (m) => !GEMINI_TEXT_ONLY.test(m),
  'openai-compatible': (_m, model, listed) => listed.some((v) => v === '*' || v === model || v.trim().toLowerCase() === model.trim().toLowerCase()),
};

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
  'openai-compatible': undefined,
};

/** The context window of a first-party model (undefined for an OpenAI-compatible server: its settings and the server say). */
export function contextWindowOf(provider: ProviderId, model: string): number | undefined {
  const m = baseModel(model);
  return WINDOWS[provider]?.find(([re]) => re.test(m))?.[1];
}
