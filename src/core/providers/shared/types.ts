/**
 * The provider-neutral contract between the agent loop and the model provider adapters.
 *
 * One model turn = one streamed HTTP request through an official SDK:
 *
 *   const provider = await createProvider({ provider: 'anthropic', apiKey });   // ./factory
 *   const result = await provider.streamTurn({ model, system, history, tools, hosted, signal }, emit);
 *
 * - `emit` receives the shared event vocabulary (`src/common/events.ts`) while the stream arrives:
 *   text (`response.output_text.delta|done`), reasoning apart (`response.reasoning_text.delta|done` on a `reasoning` item),
 *   model function calls (`response.output_item.added {item: function_call}` ->
 *   `response.function_call_arguments.delta|done` -> `response.output_item.done`), hosted code
 *   (`response.code_interpreter_call.in_progress` -> `..._code.delta` (plain code text) -> `..._code.done`
 *   -> `.interpreting` -> `.completed` -> `response.output_item.done {item}`), hosted text-editor
 *   operations (`response.output_item.done {item: text_editor_call}`), finished messages
 *   (`response.output_item.done {item: message}`, carrying annotations such as OpenAI file citations)
 *   and finally `response.completed {response: {id, usage, container_id}}`.
 *   Emitted items never carry `replay` (it is for the history only).
 * - The promise resolves with every finished item of the turn (`items`, each with opaque `replay` data
 *   so that the next request can send the provider its own blocks back verbatim), the function calls
 *   the agent loop must run (`functionCalls`), usage, the container id, and the stop reason.
 * - It rejects with a `ProviderError` (./errors) whose `code` says what went wrong; the events emitted
 *   before the error stay emitted, and `error.partial` holds the items finished so far.
 *
 * The history is a flat list of `ConversationItem`s: user messages (`{type:'message', role:'user'}`),
 * the items of earlier turns as returned in `TurnResult.items`, and `function_call_output` items the
 * agent loop appends for each function call. Every adapter converts it into its own wire format
 * (`function_call_output` / `role:"tool"` / `tool_result` / `functionResponse`). Items that carry `replay`
 * data of the same provider are sent back exactly as the provider produced them (reasoning items,
 * thinking signatures, `server_tool_use` blocks, Gemini `thoughtSignature`s); items from another
 * provider are converted to a neutral form.
 *
 * SDK clients are created with their own retries turned off: retries are the agent loop's job
 * (`ProviderError.retryable`, `retryAfterMs`).
 */
import type { AttachedImage, CodeActEvent, FileOutput, OutputItem, RuntimeKind, Usage } from '../../../common/events';
import type { OpenAIContainerMemory, ProviderId } from './catalog';

export type { ProviderId };

/** A JSON Schema object (draft 2020-12 or draft-07), as the model sees it. */
type JsonSchemaObject = Record<string, unknown>;

/** A function tool offered to the model (for example `execute_tool_code`). */
export interface ModelTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments object (`{type:'object', properties, required}`). */
  parameters: JsonSchemaObject;
}

/**
 * Provider-specific data needed to send an item back verbatim on the next request. Opaque to
 * everything but the adapter that wrote it; plain JSON, so the transcript can persist it.
 *
 * `turn` groups the parts of one model response; `parts[].index` is the position of each raw
 * block/part/item in that response, so that a response is rebuilt in its original order even when
 * one neutral item holds several raw parts (an Anthropic `server_tool_use` + its result block).
 */
export interface ReplayData {
  provider: ProviderId;
  turn: string;
  parts: ReplayPart[];
}

export interface ReplayPart {
  index: number;
  data: unknown;
}

/**
 * An item of a conversation: a shared-vocabulary item, plus optional provider replay data. `images` is set
 * on a `function_call_output` (the images its execution showed) and, in the text protocol's rewritten
 * history, on the "Observation:" user message that stands for it.
 */
export type ConversationItem = OutputItem & { replay?: ReplayData; images?: AttachedImage[] };

/** At most this many images, and bytes of images (decoded), in one request (codeact.vision.maxImages / maxMB). */
export interface ImageBudget {
  maxImages: number;
  maxBytes: number;
  /** The largest image, in pixels from its header (codeact.outputs.maxImageMegapixels); absent: DEFAULT_MAX_IMAGE_PIXELS. */
  maxPixels?: number;
}

/** The defaults of codeact.vision.maxImages and maxMB (src/core/config/keys.ts reads them here). */
export const DEFAULT_IMAGE_BUDGET: ImageBudget = { maxImages: 6, maxBytes: 8 * 1024 * 1024 };

/** Hosted code execution in the provider's own sandbox. */
export interface HostedOptions {
  enabled: boolean;
  /**
   * Reuse this container (OpenAI `cntr_…`, Anthropic `container_…`). Pass `TurnResult.containerId`
   * of the previous turn to keep files and state.
   */
  containerId?: string | null;
  /** OpenAI: memory of a new `auto` container. */
  memoryLimit?: OpenAIContainerMemory;
  /**
   * Files made available in the sandbox. OpenAI: `file_ids` of a new `auto` container (uploaded with
   * purpose `assistants`). Anthropic: Files API ids, attached as `container_upload` blocks.
   */
  fileIds?: string[];
  /** Anthropic tool version: one of ./catalog's ANTHROPIC_CODE_TOOLS (default `code_execution_20250825`). Ignored by the other providers. */
  toolVersion?: string;
}

type ToolChoice = 'auto' | 'required' | 'none';

export interface TurnRequest {
  model: string;
  system?: string;
  history: ConversationItem[];
  tools: ModelTool[];
  hosted?: HostedOptions;
  signal?: AbortSignal;
  maxOutputTokens?: number;
  toolChoice?: ToolChoice;
  /**
   * The images a model that sees them gets in this request: the newest ones within the budget, the older
   * ones replaced by a short text (src/core/providers/shared/history.ts). Default DEFAULT_IMAGE_BUDGET.
   */
  images?: ImageBudget;
}

/** A function call the model asked for, to be run by the agent loop. */
export interface FunctionCallRequest {
  /** The id to answer with in the `function_call_output` item. */
  call_id: string;
  name: string;
  /** The raw JSON arguments text (`"{}"` when the model sent none). */
  arguments: string;
  /** The id of the `function_call` item in the events. */
  item_id: string;
}

/**
 * Why the model stopped. `tool_use`: function calls to run. `pause_turn`: Anthropic paused a long
 * server-tool turn (or the text protocol's block was cut off, ../../agent/textProtocol); send the history
 * back to let it continue. `max_tokens`: output cut by the token limit.
 */
export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'pause_turn' | 'refusal' | 'content_filter' | 'other';

export interface TurnResult {
  /** Every finished item of the turn, in order, with replay data. */
  items: ConversationItem[];
  functionCalls: FunctionCallRequest[];
  usage?: Usage;
  /** The provider's response id (OpenAI `resp_…`, Anthropic `msg_…`, Gemini `responseId`), or a generated one. */
  responseId: string;
  /** The sandbox container that the hosted code ran in, to reuse on the next turn. */
  containerId?: string | null;
  stopReason: StopReason;
  /** The provider's own stop/finish reason, unchanged. */
  rawStopReason?: string;
  /** Files the hosted code produced (code outputs and OpenAI `container_file_citation`s), deduplicated. */
  files: FileOutput[];
  /** The model version the provider reported, when it did. */
  model?: string;
}

export type EmitFn = (event: CodeActEvent) => void;

export interface ProviderCapabilities {
  /** Function tools (`execute_tool_code`…) can be offered. */
  functionTools: boolean;
  /** The provider has its own code sandbox (`hosted` mode). */
  hostedCode: boolean;
  /** `runtime` of hosted code items. */
  hostedRuntime?: RuntimeKind;
}

export interface DownloadedFile {
  bytes: Uint8Array;
  filename?: string;
  mimeType?: string;
}

export interface Provider {
  readonly id: ProviderId;
  readonly capabilities: ProviderCapabilities;
  streamTurn(request: TurnRequest, emit: EmitFn): Promise<TurnResult>;
  /** Whether `model` takes function tools; absent means it does (OpenAI-compatible models can be configured otherwise). */
  supportsTools?(model: string): boolean;
  /** The context window of `model` in tokens as the settings say (absent: the catalogue's). */
  contextWindow?(model: string): number | undefined;
  /** The context window the server reports for `model` (llama.cpp `/props`, Ollama `/api/show`), read once; undefined when it does not say. */
  servedContextWindow?(model: string, signal?: AbortSignal): Promise<number | undefined>;
  /** Whether `model` can see images (./catalog `modelSeesImages`); absent means it cannot. */
  seesImages?(model: string): boolean;
  /**
   * Downloads a file the hosted code produced (OpenAI container files, Anthropic Files API files).
   * Absent for providers without downloadable files.
   */
  downloadFile?(file: FileOutput, options?: { signal?: AbortSignal; maxBytes?: number }): Promise<DownloadedFile>;
}

/** Per-model settings of an OpenAI-compatible server. */
export interface CompatibleModelSettings {
  /** Whether the model accepts `tools` (function calling). Default: the provider-level `supportsTools`. */
  supportsTools?: boolean;
  /** Context window in tokens. Default: the provider-level `contextWindow`. */
  contextWindow?: number;
}

export interface ProviderConfig {
  provider: ProviderId;
  /** The API key. When absent it is read from `env` (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY). */
  apiKey?: string;
  /** Handed unchanged to the SDK: OpenAI/Anthropic `baseURL`, Gemini `httpOptions.baseUrl`. */
  baseURL?: string;
  /** Where keys are looked up when `apiKey` is absent. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string>;
  /** Per-request timeout of the SDK client, in milliseconds. */
  timeoutMs?: number;
  /**
   * A streamed turn's bounds, in milliseconds: from the request to the response, and the longest silence
   * while it streams (codeact.modelStream.firstByteTimeoutSeconds / idleTimeoutSeconds). Default
   * DEFAULT_STREAM_BOUNDS (./watchdog).
   */
  firstByteTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** OpenAI-compatible: whether models accept tools unless `models` says otherwise. Default true. */
  supportsTools?: boolean;
  /** OpenAI-compatible: context window in tokens (requests estimated larger fail with `context_overflow`). */
  contextWindow?: number;
  /** OpenAI-compatible: per-model settings. */
  models?: Record<string, CompatibleModelSettings>;
  /** OpenAI-compatible: ask for a usage chunk (`stream_options.include_usage`). Default true. */
  streamUsage?: boolean;
  /** OpenAI-compatible: the models that can see images (`"*"`: all). Default none (codeact.openaiCompatible.visionModels). */
  visionModels?: string[];
}
