/**
 * OpenAI Responses API adapter (`client.responses.create({stream: true})`): function tools, hosted
 * `code_interpreter` (container `auto` with `memory_limit`/`file_ids`, or a reused container id),
 * `include: ["code_interpreter_call.outputs"]`, logs/image outputs, `container_file_citation` files,
 * reasoning summaries as thinking text. Container files are downloaded with
 * `client.containers.files.content.retrieve`.
 */
import type OpenAI from 'openai';
import type { AttachedImage, CodeOutput, FileOutput, MessageItem } from '../../../common/events';
import {
  FunctionCallStream,
  HostedCodeStream,
  TextStream,
  asNumber,
  asObject,
  asString,
  at,
  objectsOf,
  replayOnlyItem,
  tokenUsage,
  type JsonObject,
  type TurnItems,
} from '../shared/emit';
import { ProviderError, readHostedFile, toProviderError, type ErrorContext } from '../shared/errors';
import { FirstPartyProvider } from '../shared/firstPartyProvider';
import { imageDataUrl, requestImages, writeHistory } from '../shared/history';
import type { StreamMachine } from '../shared/runStream';
import type { DownloadedFile, EmitFn, StopReason, TurnRequest, TurnResult } from '../shared/types';
import { newId } from '../../util/ids';

export class OpenAIResponsesProvider extends FirstPartyProvider<OpenAI> {
  readonly id = 'openai' as const;

  buildRequest(req: TurnRequest): JsonObject {
    const tools: JsonObject[] = req.tools.map((t) => ({
      type: 'function',
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      strict: false,
    }));
    const include: string[] = [];
    if (req.hosted?.enabled) {
      const h = req.hosted;
      const container: string | JsonObject = h.containerId
        ? h.containerId
        : {
            type: 'auto',
            ...(h.memoryLimit ? { memory_limit: h.memoryLimit } : {}),
            ...(h.fileIds && h.fileIds.length > 0 ? { file_ids: h.fileIds } : {}),
          };
      tools.push({ type: 'code_interpreter', container });
      include.push('code_interpreter_call.outputs');
    }
    const body: JsonObject = { model: req.model, input: toResponsesInput(req), stream: true };
    if (req.system) body.instructions = req.system;
    if (tools.length > 0) {
      body.tools = tools;
      body.tool_choice = req.toolChoice ?? 'auto';
      body.parallel_tool_calls = true;
    }
    if (include.length > 0) body.include = include;
    if (req.maxOutputTokens) body.max_output_tokens = req.maxOutputTokens;
    return body;
  }

  async streamTurn(req: TurnRequest, emit: EmitFn): Promise<TurnResult> {
    // The body is built untyped (replayed items pass through as the API sent them); the stream is the SDK's.
    const open = async (signal: AbortSignal): Promise<AsyncIterable<OpenAI.Responses.ResponseStreamEvent>> =>
      await this.client.responses.create(this.buildRequest(req) as unknown as OpenAI.Responses.ResponseCreateParamsStreaming, { signal });
    return this.stream('resp', req, emit, open, (turn, ctx) => new ResponsesState(emit, turn, ctx));
  }

  async downloadFile(file: FileOutput, options: { signal?: AbortSignal; maxBytes?: number } = {}): Promise<DownloadedFile> {
    if (!file.file_id || !file.container_id) {
      throw new ProviderError({
        code: 'bad_request',
        provider: 'openai',
        message: 'This file has no container id and file id, so it cannot be downloaded from OpenAI.',
      });
    }
    try {
      return await downloadOpenAIContainerFile(this.client, file.container_id, file.file_id, options, file.filename);
    } catch (err) {
      throw toProviderError(err, { provider: this.id, errors: this.errors, baseURL: this.baseURL, signal: options.signal });
    }
  }
}

/** Downloads a file from a code-interpreter container (`GET /containers/{id}/files/{file_id}/content`). */
async function downloadOpenAIContainerFile(
  client: OpenAI,
  containerId: string,
  fileId: string,
  options: { signal?: AbortSignal; maxBytes?: number },
  filename?: string,
): Promise<DownloadedFile> {
  const res = await client.containers.files.content.retrieve(fileId, { container_id: containerId }, { signal: options.signal });
  const bytes = await readHostedFile(res, 'openai', filename ?? fileId, options.maxBytes);
  const mime = res.headers.get('content-type') ?? undefined;
  return { bytes, filename, mimeType: mime && mime !== 'application/octet-stream' && mime !== 'application/binary' ? mime : undefined };
}

interface SlotState {
  kind: 'message' | 'reasoning' | 'function_call' | 'code' | 'other';
  slot: number;
  /** The provider's item id, which its events name (our item ids are minted by the emitters). */
  providerId: string | undefined;
  text?: TextStream;
  fc?: FunctionCallStream;
  code?: HostedCodeStream;
  summaryParts?: number;
  annotations?: unknown[];
}

/** The stream state machine of one Responses turn: output items by index, hosted code, the final response. */
class ResponsesState implements StreamMachine<unknown> {
  responseId: string | undefined;
  private model?: string;
  private usage?: TurnResult['usage'];
  private containerId?: string;
  complete = false;
  private stopReason: StopReason = 'end_turn';
  private rawStop?: string;
  private readonly byIndex = new Map<number, SlotState>();

  constructor(
    private readonly emit: EmitFn,
    private readonly turn: TurnItems,
    private readonly ctx: ErrorContext,
  ) {}

  outcome() {
    return { stopReason: this.stopReason, rawStopReason: this.rawStop, usage: this.usage, containerId: this.containerId ?? null, model: this.model };
  }

  private state(ev: JsonObject): SlotState | undefined {
    if (typeof ev.output_index === 'number') {
      const s = this.byIndex.get(ev.output_index);
      if (s) return s;
    }
    if (typeof ev.item_id === 'string') {
      for (const s of this.byIndex.values()) if (s.providerId === ev.item_id) return s;
    }
    return undefined;
  }

  onEvent(event: unknown): void {
    const ctx = this.ctx;
    const ev = asObject(event) ?? {};
    switch (ev.type) {
      case 'response.created':
      case 'response.in_progress':
      case 'response.queued': {
        const response = asObject(ev.response);
        this.responseId = asString(response?.id) ?? this.responseId;
        this.model = asString(response?.model) ?? this.model;
        return;
      }
      case 'response.output_item.added':
        this.added(asNumber(ev.output_index), asObject(ev.item));
        return;
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        const s = this.state(ev);
        if (s?.kind === 'message') s.text?.delta(String(ev.delta ?? ''));
        return;
      }
      case 'response.output_text.annotation.added': {
        const s = this.state(ev);
        if (s) (s.annotations ??= []).push(ev.annotation);
        const annotation = asObject(ev.annotation);
        if (annotation) this.fileFromAnnotation(annotation);
        return;
      }
      case 'response.reasoning_summary_text.delta': {
        const s = this.state(ev);
        if (!s || s.kind !== 'reasoning') return;
        s.text ??= new TextStream(this.emit, true);
        s.text.delta(String(ev.delta ?? ''));
        return;
      }
      case 'response.reasoning_summary_part.added': {
        const s = this.state(ev);
        if (!s || s.kind !== 'reasoning') return;
        s.summaryParts = (s.summaryParts ?? 0) + 1;
        if (s.summaryParts > 1 && s.text) s.text.delta('\n\n');
        return;
      }
      case 'response.function_call_arguments.delta': {
        const s = this.state(ev);
        s?.fc?.delta(String(ev.delta ?? ''));
        return;
      }
      case 'response.function_call_arguments.done': {
        // Finished at output_item.done, with the final arguments.
        return;
      }
      case 'response.code_interpreter_call.in_progress':
        this.state(ev)?.code?.start();
        return;
      case 'response.code_interpreter_call_code.delta':
        this.state(ev)?.code?.delta(String(ev.delta ?? ''));
        return;
      case 'response.code_interpreter_call_code.done':
        this.state(ev)?.code?.codeDone(typeof ev.code === 'string' ? ev.code : undefined);
        return;
      case 'response.code_interpreter_call.interpreting':
        this.state(ev)?.code?.interpreting();
        return;
      case 'response.code_interpreter_call.completed':
        this.state(ev)?.code?.completed();
        return;
      case 'response.output_item.done':
        this.done(asNumber(ev.output_index), asObject(ev.item));
        return;
      case 'response.completed':
      case 'response.incomplete':
        this.completed(asObject(ev.response));
        return;
      case 'response.failed': {
        const e = at(ev, 'response', 'error') ?? {};
        throw toProviderError({ error: { type: e.code ?? 'server_error', message: e.message ?? 'The response failed.' } }, ctx);
      }
      case 'error':
        throw toProviderError({ status: numericCode(ev.code), error: { type: ev.code ?? 'server_error', message: ev.message ?? 'Stream error.' } }, ctx);
      default:
        return;
    }
  }

  private added(index: number | undefined, item: JsonObject | undefined): void {
    if (!item || index === undefined) return;
    const s: SlotState = { kind: 'other', slot: -1, providerId: typeof item.id === 'string' ? item.id : undefined };
    s.slot = this.turn.reserve(() => s.text?.snapshot());
    switch (item.type) {
      case 'message':
        s.kind = 'message';
        s.text = new TextStream(this.emit);
        break;
      case 'reasoning':
        s.kind = 'reasoning';
        break;
      case 'function_call':
        s.kind = 'function_call';
        s.fc = new FunctionCallStream(this.emit, asString(item.call_id) ?? asString(item.id) ?? newId('call'), asString(item.name) ?? '');
        s.fc.start();
        if (item.arguments) s.fc.delta(String(item.arguments));
        break;
      case 'code_interpreter_call':
        s.kind = 'code';
        s.code = new HostedCodeStream(this.emit, 'openai');
        if (asString(item.container_id)) this.containerId = asString(item.container_id);
        break;
      default:
        break;
    }
    this.byIndex.set(index, s);
  }

  private done(index: number | undefined, item: JsonObject | undefined): void {
    if (!item || index === undefined) return;
    if (!this.byIndex.has(index)) this.added(index, item);
    const s = this.byIndex.get(index) as SlotState;
    const replay = this.turn.replay([{ index, data: item }]);
    switch (s.kind) {
      case 'message': {
        const content = objectsOf(item.content);
        const text = content.map((c) => (c.type === 'output_text' ? (c.text ?? '') : c.type === 'refusal' ? (c.refusal ?? '') : '')).join('');
        const annotations = content.flatMap((c): unknown[] => (Array.isArray(c.annotations) ? c.annotations : []));
        for (const a of annotations) {
          const annotation = asObject(a);
          if (annotation) this.fileFromAnnotation(annotation);
        }
        const msg: MessageItem = (s.text as TextStream).finish({ finalText: text, annotations: annotations.length ? annotations : s.annotations });
        this.turn.fill(s.slot, { ...msg, replay });
        return;
      }
      case 'reasoning': {
        const text = objectsOf(item.summary)
          .map((p) => p.text ?? '')
          .join('\n\n');
        if (!s.text && !text) {
          this.turn.fill(s.slot, replayOnlyItem(replay));
          return;
        }
        s.text ??= new TextStream(this.emit, true);
        this.turn.fill(s.slot, { ...s.text.finish({ finalText: text || s.text.text }), replay });
        return;
      }
      case 'function_call': {
        const fc = s.fc as FunctionCallStream;
        const fcItem = fc.finish(typeof item.arguments === 'string' ? item.arguments : undefined);
        this.turn.functionCalls.push(fc.request());
        this.turn.fill(s.slot, { ...fcItem, replay });
        return;
      }
      case 'code': {
        const code = s.code as HostedCodeStream;
        if (typeof item.code === 'string') code.codeDone(item.code);
        const outputs: CodeOutput[] = [];
        const containerId = asString(item.container_id);
        for (const o of objectsOf(item.outputs)) {
          if (o.type === 'logs') outputs.push({ type: 'logs', logs: String(o.logs ?? '') });
          else if (o.type === 'image') outputs.push({ type: 'image', url: String(o.url ?? '') });
          else if (o.type === 'files') {
            for (const f of objectsOf(o.files)) {
              const file: FileOutput = { type: 'file', file_id: asString(f.file_id), container_id: containerId, mime_type: asString(f.mime_type) };
              outputs.push(file);
              this.turn.addFile(file);
            }
          }
        }
        if (containerId) this.containerId = containerId;
        const status = item.status === 'failed' ? 'failed' : item.status === 'incomplete' ? 'incomplete' : 'completed';
        const ci = code.finish({ status, outputs, container_id: containerId ?? null, exit_code: null });
        this.turn.fill(s.slot, { ...ci, replay });
        return;
      }
      default:
        // Other item types (web search, MCP…) are kept for replay only, as an empty assistant message.
        this.turn.fill(s.slot, replayOnlyItem(replay));
        return;
    }
  }

  private fileFromAnnotation(a: JsonObject): void {
    if (a.type !== 'container_file_citation' && a.type !== 'file_citation' && a.type !== 'file_path') return;
    this.turn.addFile({
      type: 'file',
      file_id: asString(a.file_id),
      filename: asString(a.filename),
      container_id: asString(a.container_id),
    });
  }

  private completed(response: JsonObject | undefined): void {
    this.complete = true;
    if (!response) return;
    this.responseId = asString(response.id) ?? this.responseId;
    this.model = asString(response.model) ?? this.model;
    const u = asObject(response.usage);
    if (u) {
      this.usage = tokenUsage(
        asNumber(u.input_tokens) ?? 0,
        asNumber(u.output_tokens) ?? 0,
        asNumber(u.total_tokens),
        at(u, 'input_tokens_details')?.cached_tokens,
      );
    }
    if (response.status === 'incomplete') {
      const reason = asString(at(response, 'incomplete_details')?.reason);
      this.rawStop = reason ?? 'incomplete';
      this.stopReason = reason === 'max_output_tokens' ? 'max_tokens' : reason === 'content_filter' ? 'content_filter' : 'other';
    } else {
      this.rawStop = asString(response.status);
    }
  }
}

function numericCode(code: unknown): number | undefined {
  if (code === 'rate_limit_exceeded') return 429;
  if (code === 'server_error' || code === 'internal_error') return 500;
  return undefined;
}

/** The history as Responses `input` items. */
function toResponsesInput(req: TurnRequest): JsonObject[] {
  const input: JsonObject[] = [];
  writeHistory(
    req.history,
    {
      replay: { provider: 'openai', write: (parts) => objectsOf(parts).forEach((raw) => input.push(cleanReplayItem(raw))) },
      user: (text, images) => input.push({ role: 'user', content: images?.length ? [{ type: 'input_text', text }, ...inputImages(images)] : text }),
      assistant: (text) => input.push({ role: 'assistant', content: text }),
      call: (item) => input.push({ type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments ?? '{}' }),
      // With images, the output is a list of input parts: the text, then the images (ResponseFunctionCallOutputItemList).
      output: (item) =>
        input.push({
          type: 'function_call_output',
          call_id: item.call_id,
          output: item.images?.length ? [{ type: 'input_text', text: item.output }, ...inputImages(item.images)] : item.output,
        }),
    },
    requestImages(req, 'openai'),
  );
  return input;
}

/** Responses `input_image` parts, as data URLs. */
function inputImages(images: AttachedImage[]): JsonObject[] {
  return images.map((img) => ({ type: 'input_image', image_url: imageDataUrl(img), detail: 'auto' }));
}

/** Output items sent back as input: drop fields that are output-only. */
function cleanReplayItem(raw: JsonObject): JsonObject {
  const item: JsonObject = { ...raw };
  if (item.type === 'function_call' || item.type === 'reasoning') delete item.status;
  return item;
}
