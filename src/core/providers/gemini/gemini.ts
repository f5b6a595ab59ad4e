/**
 * Gemini adapter (`@google/genai` `models.generateContentStream`): `functionDeclarations` with
 * `parametersJsonSchema`, `functionCall` -> `functionResponse` (echoing the model's parts, with their
 * `thoughtSignature`s, verbatim), hosted `codeExecution` (`executableCode` + `codeExecutionResult`,
 * `outcome` mapped to status/exit code, `inlineData` images after a result attached to it), `thought`
 * parts as thinking text. A `finishReason` mid-stream does not end the turn: the end of the body does,
 * and a body whose last candidate chunk has no `finishReason` was cut, not finished.
 * Each model part arrives whole; code is emitted as one delta.
 */
import type { GenerateContentParameters, GenerateContentResponse, GoogleGenAI } from '@google/genai';
import type { AttachedImage, CodeCallStatus, CodeInterpreterCallItem, CodeOutput, ExecutionError } from '../../../common/events';
import {
  FunctionCallStream,
  HostedCodeStream,
  TextStream,
  asNumber,
  asObject,
  asString,
  at,
  errorFromTraceback,
  objectsOf,
  replayOnlyItem,
  tokenUsage,
  type JsonObject,
  type TurnItems,
} from '../shared/emit';
import { FirstPartyProvider } from '../shared/firstPartyProvider';
import { requestImages, writeHistory } from '../shared/history';
import type { StreamMachine } from '../shared/runStream';
import type { ConversationItem, EmitFn, ReplayPart, StopReason, TurnRequest, TurnResult } from '../shared/types';
import { newId } from '../../util/ids';
import { isImage } from '../../../common/mimeTypes';

/** This family's provider id: the one name its replay data and its adapter carry. */
const GEMINI = 'gemini' as const;

export class GeminiProvider extends FirstPartyProvider<GoogleGenAI> {
  readonly id = GEMINI;

  buildRequest(req: TurnRequest): { model: string; contents: GeminiContent[]; config: JsonObject } {
    const tools: JsonObject[] = [];
    if (req.tools.length > 0) {
      tools.push({ functionDeclarations: req.tools.map((t) => ({ name: t.name, description: t.description, parametersJsonSchema: t.parameters })) });
    }
    if (req.hosted?.enabled) tools.push({ codeExecution: {} });
    const config: JsonObject = {
      automaticFunctionCalling: { disable: true },
      automaticContinuation: false,
    };
    if (req.system) config.systemInstruction = req.system;
    if (tools.length > 0) config.tools = tools;
    if (req.tools.length > 0 && req.toolChoice && req.toolChoice !== 'auto') {
      config.toolConfig = { functionCallingConfig: { mode: req.toolChoice === 'required' ? 'ANY' : 'NONE' } };
    }
    if (req.maxOutputTokens) config.maxOutputTokens = req.maxOutputTokens;
    return { model: req.model, contents: toGeminiContents(req), config };
  }

  async streamTurn(req: TurnRequest, emit: EmitFn): Promise<TurnResult> {
    const open = async (signal: AbortSignal) => {
      const params = this.buildRequest(req);
      params.config.abortSignal = signal;
      // The request is built untyped (replayed parts pass through as the API sent them); the stream is the SDK's.
      const stream: AsyncIterable<GenerateContentResponse> = await this.client.models.generateContentStream(params as unknown as GenerateContentParameters);
      return stream;
    };
    return this.stream('gemini', req, emit, open, (turn) => new GeminiState(emit, turn));
  }
}

interface OpenText {
  stream: TextStream;
  slot: number;
  thought: boolean;
  parts: ReplayPart[];
}

interface OpenCode {
  stream: HostedCodeStream;
  slot: number;
  parts: ReplayPart[];
  outputs: CodeOutput[];
  status: CodeCallStatus;
  exit: number | null;
  error: ExecutionError | null;
  thought: boolean;
  /** Set when this is a non-thought repeat of an earlier thought-phase execution: parts only, no events. */
  duplicateOf?: ConversationItem;
}

/** The stream state machine of one Gemini turn: parts, each arriving whole, grouped into items. */
class GeminiState implements StreamMachine<unknown> {
  responseId: string | undefined;
  private model?: string;
  private usage?: TurnResult['usage'];
  private finishReason?: string;
  private blocked?: string;
  private chunks = 0;
  /** Whether the last chunk with a candidate had a finishReason (the final chunk has; a usage-only chunk may follow it). */
  private finished = false;
  private seq = 0;
  private text?: OpenText;
  private code?: OpenCode;
  /** The replay parts of the most recent item, for stray parts (an empty text with a thoughtSignature). */
  private lastParts?: ReplayPart[];
  /** Thought-phase executions (Gemini 2.5 repeats them without `thought`), by code. */
  private readonly thoughtCode: { code: string; item: ConversationItem; claimed: boolean }[] = [];

  constructor(
    private readonly emit: EmitFn,
    private readonly turn: TurnItems,
  ) {}

  // A finishReason mid-stream does not end the turn (the end of the body does). A body without its final
  // chunk (the last candidate has no finishReason) is a cut, like no chunk at all; a blocked prompt has no candidate.
  get complete(): boolean {
    return this.chunks > 0 && (this.finished || this.blocked !== undefined);
  }

  get cutWhat(): string {
    return this.chunks === 0 ? 'The stream ended without any data' : 'The stream ended without its final chunk (no finishReason)';
  }

  outcome() {
    const fr = this.finishReason;
    const stopReason: StopReason = this.blocked
      ? 'content_filter'
      : fr === 'STOP' || fr === undefined
        ? 'end_turn'
        : fr === 'MAX_TOKENS'
          ? 'max_tokens'
          : /SAFETY|RECITATION|BLOCKLIST|PROHIBITED|SPII|IMAGE_SAFETY/.test(fr)
            ? 'content_filter'
            : 'other';
    return { stopReason, rawStopReason: fr ?? this.blocked, usage: this.usage, model: this.model };
  }

  onEvent(chunk: unknown): void {
    const c = asObject(chunk) ?? {};
    this.chunks++;
    this.responseId ??= asString(c.responseId);
    this.model ??= asString(c.modelVersion);
    const u = asObject(c.usageMetadata);
    if (u) {
      const count = (key: string): number => asNumber(u[key]) ?? 0;
      const input = count('promptTokenCount') + count('toolUsePromptTokenCount');
      const output = count('candidatesTokenCount') + count('thoughtsTokenCount');
      this.usage = tokenUsage(input, output, asNumber(u.totalTokenCount), u.cachedContentTokenCount);
    }
    const blockReason = asString(at(c, 'promptFeedback')?.blockReason);
    if (blockReason) this.blocked = blockReason;
    const cand = objectsOf(c.candidates).find((x) => (x.index ?? 0) === 0);
    if (!cand) return;
    const finishReason = asString(cand.finishReason);
    this.finished = !!finishReason;
    if (finishReason) this.finishReason = finishReason;
    for (const part of objectsOf(at(cand, 'content')?.parts)) this.part(part);
  }

  private part(part: JsonObject): void {
    const index = this.seq++;
    const rp: ReplayPart = { index, data: part };
    if (typeof part.text === 'string' && !part.functionCall && !part.executableCode && !part.codeExecutionResult && !part.inlineData) {
      if (part.text === '') {
        if (part.thoughtSignature) this.stray(rp);
        return;
      }
      const thought = part.thought === true;
      this.closeCode();
      if (this.text && this.text.thought !== thought) this.closeText();
      if (!this.text) {
        const stream = new TextStream(this.emit, thought);
        this.text = { stream, slot: this.turn.reserve(() => stream.snapshot()), thought, parts: [] };
        this.lastParts = this.text.parts;
      }
      this.text.parts.push(rp);
      this.text.stream.delta(part.text);
      return;
    }
    if (part.functionCall) {
      this.closeText();
      this.closeCode();
      const fc = asObject(part.functionCall) ?? {};
      const id = typeof fc.id === 'string' && fc.id ? fc.id : newId('call');
      const stream = new FunctionCallStream(this.emit, id, String(fc.name ?? ''));
      stream.start();
      stream.delta(JSON.stringify(fc.args ?? {}));
      const item = stream.finish();
      this.turn.functionCalls.push(stream.request());
      const parts = [rp];
      this.turn.add({ ...item, replay: this.turn.replay(parts) });
      this.lastParts = parts;
      return;
    }
    if (part.executableCode) {
      this.closeText();
      this.closeCode();
      const ec = asObject(part.executableCode) ?? {};
      const code = String(ec.code ?? '');
      const thought = part.thought === true;
      const parts = [rp];
      this.lastParts = parts;
      if (!thought) {
        const prior = this.thoughtCode.find((t) => !t.claimed && t.code === code);
        if (prior) {
          prior.claimed = true;
          this.code = {
            stream: undefined as unknown as HostedCodeStream,
            slot: -1,
            parts,
            outputs: [],
            status: 'completed',
            exit: null,
            error: null,
            thought,
            duplicateOf: prior.item,
          };
          return;
        }
      }
      const stream = new HostedCodeStream(this.emit, 'gemini', ec.language && ec.language !== 'PYTHON' ? String(ec.language).toLowerCase() : undefined);
      stream.start();
      stream.delta(code);
      stream.codeDone(code);
      stream.interpreting();
      this.code = { stream, slot: this.turn.reserve(), parts, outputs: [], status: 'completed', exit: null, error: null, thought };
      return;
    }
    if (part.codeExecutionResult) {
      this.closeText();
      const r = asObject(part.codeExecutionResult) ?? {};
      if (!this.code) {
        // A result without its code: an item of its own.
        const stream = new HostedCodeStream(this.emit, 'gemini');
        this.code = { stream, slot: this.turn.reserve(), parts: [], outputs: [], status: 'completed', exit: null, error: null, thought: part.thought === true };
        this.lastParts = this.code.parts;
      }
      const c = this.code;
      c.parts.push(rp);
      const output = typeof r.output === 'string' ? r.output : '';
      if (output) c.outputs.push({ type: 'logs', logs: output });
      switch (r.outcome) {
        case 'OUTCOME_OK':
          if (c.exit === null) c.exit = 0;
          break;
        case 'OUTCOME_DEADLINE_EXCEEDED':
          c.status = 'failed';
          c.exit = null;
          c.error = { type: 'Timeout', message: 'The code ran past the time limit of the Gemini sandbox.' };
          break;
        case 'OUTCOME_FAILED':
        default:
          c.status = 'failed';
          c.exit = 1;
          c.error = errorFromTraceback(output) ?? {
            type: 'ExecutionFailed',
            message: output.trim().split(/\r?\n/).pop() || `Code execution failed (${String(r.outcome ?? 'OUTCOME_UNSPECIFIED')}).`,
          };
          break;
      }
      return;
    }
    if (part.inlineData) {
      this.closeText();
      const d = asObject(part.inlineData) ?? {};
      const mime = String(d.mimeType ?? 'application/octet-stream');
      const url = `data:${mime};base64,${String(d.data ?? '')}`;
      if (this.code) {
        this.code.parts.push(rp);
        this.code.outputs.push(isImage(mime) ? { type: 'image', url } : { type: 'file', mime_type: mime, url });
        return;
      }
      this.stray(rp);
      return;
    }
    // Anything else (toolCall/toolResponse of server-side tools, fileData…): kept for replay.
    this.stray(rp);
  }

  /** A part that belongs to no item of its own: kept with the previous item's replay parts. */
  private stray(rp: ReplayPart): void {
    if (this.text) {
      this.text.parts.push(rp);
      return;
    }
    if (this.code) {
      this.code.parts.push(rp);
      return;
    }
    if (this.lastParts) {
      this.lastParts.push(rp);
      return;
    }
    const parts = [rp];
    this.turn.add(replayOnlyItem(this.turn.replay(parts)));
    this.lastParts = parts;
  }

  private closeText(): void {
    const t = this.text;
    if (!t) return;
    this.text = undefined;
    const msg = t.stream.finish();
    this.turn.fill(t.slot, { ...msg, replay: this.turn.replay(t.parts) });
  }

  private closeCode(): void {
    const c = this.code;
    if (!c) return;
    this.code = undefined;
    if (c.duplicateOf) {
      c.duplicateOf.replay?.parts.push(...c.parts);
      return;
    }
    const item: CodeInterpreterCallItem = c.stream.finish({ status: c.status, outputs: c.outputs, exit_code: c.exit, error: c.error, container_id: null });
    const conv: ConversationItem = { ...item, replay: this.turn.replay(c.parts) };
    this.turn.fill(c.slot, conv);
    if (c.thought) this.thoughtCode.push({ code: item.code, item: conv, claimed: false });
  }

  finish(): void {
    this.closeText();
    this.closeCode();
  }
}

/** The history as Gemini `contents` (model parts echoed verbatim, function results as functionResponse). */
function toGeminiContents(req: TurnRequest): GeminiContent[] {
  const contents: GeminiContent[] = [];
  const push = (role: 'user' | 'model', parts: JsonObject[]): void => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts: [...parts] });
  };
  // By our item id (provider call ids repeat); by call id too, for outputs saved before ids were ours.
  const calls = new Map<string, { name: string; id?: string }>();
  for (const item of req.history) {
    if (item.type !== 'function_call') continue;
    let id: string | undefined;
    if (item.replay?.provider === GEMINI) {
      const raw = objectsOf(item.replay.parts.map((p) => p.data)).find((d) => d.functionCall);
      id = asString(at(raw, 'functionCall')?.id);
    }
    calls.set(item.call_id, { name: item.name, id });
    if (item.id) calls.set(item.id, { name: item.name, id });
  }
  const inResponse = functionResponseTakesParts(req.model);
  writeHistory(
    req.history,
    {
      replay: { provider: GEMINI, write: (parts) => push('model', mergeParts(objectsOf(parts))) },
      user: (text, images) => push('user', [{ text }, ...inlineParts(images)]),
      assistant: (text) => push('model', [{ text }]),
      call: (item) => {
        let args: unknown = {};
        try {
          args = JSON.parse(item.arguments || '{}');
        } catch {}
        push('model', [{ functionCall: { name: item.name, args } }]);
      },
      output: (item) => {
        const call = (item.item_id ? calls.get(item.item_id) : undefined) ?? calls.get(item.call_id);
        const fr: JsonObject = { name: item.name ?? call?.name ?? 'unknown', response: item.is_error ? { error: item.output } : { output: item.output } };
        if (call?.id) fr.id = call.id;
        if (item.images?.length && inResponse) fr.parts = inlineParts(item.images);
        // Older models: the images as inline parts of the same user turn, after its function responses.
        push('user', [{ functionResponse: fr }, ...(inResponse ? [] : inlineParts(item.images))]);
      },
    },
    requestImages(req, 'gemini'),
  );
  if (!inResponse) {
    for (const c of contents) {
      if (c.role === 'user' && c.parts.some((p) => p.functionResponse)) c.parts.sort((a, b) => Number(!!b.functionResponse) - Number(!!a.functionResponse));
    }
  }
  return contents;
}

/** One turn of `contents`: its parts as they are sent (replayed ones as the API sent them). */
interface GeminiContent {
  role: 'user' | 'model';
  parts: JsonObject[];
}

/** Inline-data parts of images (`{inlineData: {mimeType, data}}`, the shape of Part and FunctionResponsePart alike). */
function inlineParts(images: AttachedImage[] | undefined): JsonObject[] {
  return (images ?? []).map((img) => ({ inlineData: { mimeType: img.mime_type, data: img.data } }));
}

/**
 * Gemini 3 and later take images inside a function response (`functionResponse.parts`, "multimodal function
 * responses"); earlier models get them as inline parts of the user turn that carries the responses.
 */
function functionResponseTakesParts(model: string): boolean {
  const m = /gemini-(\d+)/.exec(model.toLowerCase());
  return !!m && Number(m[1]) >= 3;
}

/** Merges neighbouring text parts (same `thought`, no signatures); drops thought summaries without signature. */
function mergeParts(parts: JsonObject[]): JsonObject[] {
  const out: JsonObject[] = [];
  for (const p of parts) {
    const isText = typeof p.text === 'string' && Object.keys(p).every((k) => k === 'text' || k === 'thought' || k === 'thoughtSignature');
    if (isText && p.thought === true && !p.thoughtSignature) continue;
    const last = out[out.length - 1];
    if (
      isText &&
      !p.thoughtSignature &&
      last &&
      typeof last.text === 'string' &&
      !last.thoughtSignature &&
      (last.thought === true) === (p.thought === true) &&
      Object.keys(last).every((k) => k === 'text' || k === 'thought')
    ) {
      out[out.length - 1] = { ...last, text: last.text + p.text };
      continue;
    }
    out.push({ ...p });
  }
  return out;
}
