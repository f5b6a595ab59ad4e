/**
 * Anthropic Messages adapter (`client.messages.create` / `client.beta.messages.create`, streamed):
 * client tools with `input_json_delta`, thinking blocks (thinking text, signature kept for replay),
 * and hosted code execution in every tool version:
 *   - `code_execution_20250522` (beta `code-execution-2025-05-22`): `server_tool_use` `code_execution`
 *     with input `{code}`, result `code_execution_tool_result`;
 *   - `code_execution_20250825` (beta `code-execution-2025-08-25`), `code_execution_20260120` and
 *     `code_execution_20260521` (no beta header): `bash_code_execution` with `{command}` and
 *     `text_editor_code_execution` with `{command, path, …}`.
 * Code deltas are plain code text, unescaped from the partial JSON as it streams. stdout, stderr and
 * `return_code` stay apart (`exit_code` on the item); output `file_id`s become file outputs; text-editor
 * operations become `text_editor_call` items (with errors); the container id is surfaced and reused.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { CodeOutput, ExecutionError, FileOutput, TextEditorItem } from '../../../common/events';
import {
  FunctionCallStream,
  HostedCodeStream,
  TextStream,
  TurnItems,
  errorFromTraceback,
  foreignItemText,
  isLocalRuntimeItem,
  publicItem,
  segmentHistory,
  type Json,
} from '../shared/emit';
import { ProviderError, toProviderError, type ErrorContext } from '../shared/errors';
import { runStream } from '../shared/runStream';
import { JsonStringFieldExtractor } from '../shared/partialJson';
import type { DownloadedFile, EmitFn, Provider, ProviderCapabilities, StopReason, TurnRequest, TurnResult } from '../shared/types';
import { newId } from '../../util/ids';

export const DEFAULT_ANTHROPIC_CODE_TOOL = 'code_execution_20250825';
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 8192;
const FILES_BETA = 'files-api-2025-04-14';

/** The `anthropic-beta` value each code execution tool version needs (none for the newer ones). */
export const ANTHROPIC_CODE_TOOL_BETAS: Record<string, string | undefined> = {
  code_execution_20250522: 'code-execution-2025-05-22',
  code_execution_20250825: 'code-execution-2025-08-25',
  code_execution_20260120: undefined,
  code_execution_20260521: undefined,
};

export class AnthropicProvider implements Provider {
  readonly id = 'anthropic' as const;
  readonly capabilities: ProviderCapabilities = { functionTools: true, hostedCode: true, hostedRuntime: 'anthropic' };

  constructor(readonly client: Anthropic, private readonly baseURL?: string) {}

  /** The request body and the betas it needs (`beta` true: sent to `/v1/messages?beta=true`). */
  buildRequest(req: TurnRequest): { body: Json; betas: string[]; beta: boolean } {
    const tools: Json[] = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
    const betas: string[] = [];
    let beta = false;
    if (req.hosted?.enabled) {
      const version = req.hosted.toolVersion ?? DEFAULT_ANTHROPIC_CODE_TOOL;
      if (!/^code_execution_\d{8}$/.test(version)) {
        throw new ProviderError({
          code: 'bad_request',
          provider: 'anthropic',
          message: `Unknown Anthropic code execution tool version "${version}". Use one of: ${Object.keys(ANTHROPIC_CODE_TOOL_BETAS).join(', ')}.`,
        });
      }
      tools.push({ type: version, name: 'code_execution' });
      const b = ANTHROPIC_CODE_TOOL_BETAS[version];
      if (b) betas.push(b);
      if (req.hosted.fileIds && req.hosted.fileIds.length > 0) betas.push(FILES_BETA);
      beta = true;
    }
    const messages = toAnthropicMessages(req);
    if (!beta && messages.some((m) => Array.isArray(m.content) && m.content.some((b: Json) => b.type === 'server_tool_use' || b.type === 'container_upload'))) {
      beta = true;
    }
    const body: Json = { model: req.model, max_tokens: req.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS, messages, stream: true };
    if (req.system) body.system = req.system;
    if (tools.length > 0) {
      body.tools = tools;
      const choice = req.toolChoice ?? 'auto';
      body.tool_choice = { type: choice === 'required' ? 'any' : choice };
    }
    if (req.hosted?.enabled && req.hosted.containerId) body.container = req.hosted.containerId;
    return { body, betas, beta };
  }

  async streamTurn(req: TurnRequest, emit: EmitFn): Promise<TurnResult> {
    const ctx: ErrorContext = { provider: 'anthropic', model: req.model, baseURL: this.baseURL, signal: req.signal };
    const turn = new TurnItems('anthropic', newId('turn'));
    const st = new AnthropicState(emit, turn);
    return runStream<Json>({
      req,
      ctx,
      turn,
      emit,
      idPrefix: 'msg',
      open: async () => {
        const { body, betas, beta } = this.buildRequest(req);
        return (beta
          ? await this.client.beta.messages.create({ ...body, ...(betas.length > 0 ? { betas } : {}) } as any, { signal: req.signal })
          : await this.client.messages.create(body as any, { signal: req.signal })) as unknown as AsyncIterable<Json>;
      },
      machine: {
        onEvent: (ev) => st.handle(ev),
        cutReason: () => (st.finished ? undefined : 'The stream ended'),
        finish: () => st.finishPending(),
        get responseId() {
          return st.responseId;
        },
        outcome: () => {
          // The container id arrives in message_delta, after the code items finished: fill it in the result.
          for (const item of turn.items) {
            if (item.type === 'code_interpreter_call' && !item.container_id && st.containerId) item.container_id = st.containerId;
          }
          const raw = st.stopReason;
          const stopReason: StopReason =
            raw === 'pause_turn' ? 'pause_turn' : raw === 'end_turn' || raw === 'stop_sequence' ? 'end_turn' : raw === 'max_tokens' ? 'max_tokens' : raw === 'refusal' ? 'refusal' : raw === 'tool_use' ? 'tool_use' : 'other';
          return { stopReason, rawStopReason: raw, usage: st.usage(), containerId: st.containerId ?? null, model: st.model };
        },
      },
    });
  }


  /** Downloads an output file through the Files API (`GET /v1/files/{id}/content`). */
  async downloadFile(file: FileOutput, options: { signal?: AbortSignal } = {}): Promise<DownloadedFile> {
    if (!file.file_id) throw new ProviderError({ code: 'bad_request', provider: 'anthropic', message: 'This file has no file id, so it cannot be downloaded from Anthropic.' });
    try {
      let filename = file.filename;
      let mimeType = file.mime_type;
      try {
        const meta = (await this.client.beta.files.retrieveMetadata(file.file_id, { betas: [FILES_BETA] } as any, { signal: options.signal })) as unknown as Json;
        filename ??= meta.filename;
        mimeType ??= meta.mime_type;
      } catch (err) {
        if (options.signal?.aborted) throw err;
      }
      const res = (await this.client.beta.files.download(file.file_id, { betas: [FILES_BETA] } as any, { signal: options.signal })) as unknown as Response;
      return { bytes: new Uint8Array(await res.arrayBuffer()), filename, mimeType };
    } catch (err) {
      throw toProviderError(err, { provider: 'anthropic', baseURL: this.baseURL, signal: options.signal });
    }
  }
}

type BlockState =
  | { kind: 'text'; slot: number; text: TextStream; citations: unknown[] }
  | { kind: 'thinking'; slot: number; text: TextStream; signature: string }
  | { kind: 'tool_use'; slot: number; fc: FunctionCallStream; json: string; block: Json }
  | { kind: 'code'; slot: number; code: HostedCodeStream; json: string; extractor: JsonStringFieldExtractor; block: Json; input?: Json }
  | { kind: 'editor'; slot: number; json: string; block: Json; input?: Json }
  | { kind: 'server_other'; slot: number; json: string; block: Json; input?: Json }
  | { kind: 'other'; slot: number; block: Json };

class AnthropicState {
  responseId?: string;
  model?: string;
  containerId?: string;
  stopReason?: string;
  finished = false;
  private inputTokens = 0;
  private outputTokens = 0;
  private readonly blocks = new Map<number, BlockState>();
  /** server_tool_use blocks waiting for their result, by tool_use_id. */
  private readonly pending = new Map<string, { index: number; state: BlockState }>();

  constructor(private readonly emit: EmitFn, private readonly turn: TurnItems) {}

  usage(): { input_tokens: number; output_tokens: number; total_tokens: number } {
    return { input_tokens: this.inputTokens, output_tokens: this.outputTokens, total_tokens: this.inputTokens + this.outputTokens };
  }

  private itemId(index: number): string {
    return `${this.responseId ?? 'msg'}_${index}`;
  }

  handle(ev: Json): void {
    switch (ev.type) {
      case 'message_start': {
        const m = ev.message ?? {};
        this.responseId = m.id ?? this.responseId;
        this.model = m.model ?? this.model;
        this.addUsage(m.usage);
        if (m.container?.id) this.containerId = m.container.id;
        return;
      }
      case 'content_block_start':
        this.start(ev.index, ev.content_block ?? {});
        return;
      case 'content_block_delta':
        this.delta(ev.index, ev.delta ?? {});
        return;
      case 'content_block_stop':
        this.stop(ev.index);
        return;
      case 'message_delta': {
        if (ev.delta?.stop_reason) this.stopReason = ev.delta.stop_reason;
        const c = ev.delta?.container;
        if (c && typeof c === 'object' && c.id) this.containerId = c.id;
        this.addUsage(ev.usage);
        return;
      }
      case 'message_stop':
        this.finished = true;
        return;
      default:
        return;
    }
  }

  private addUsage(u: Json | undefined): void {
    if (!u) return;
    const input = (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
    if (input > this.inputTokens) this.inputTokens = input;
    if (typeof u.output_tokens === 'number') this.outputTokens = u.output_tokens;
  }

  private start(index: number, block: Json): void {
    const type: string = block.type ?? '';
    if (type.endsWith('_tool_result') && typeof block.tool_use_id === 'string') {
      this.result(index, block);
      return;
    }
    let st: BlockState | undefined;
    const slot = this.turn.reserve(() => (st && (st.kind === 'text' || st.kind === 'thinking') ? st.text.snapshot() : undefined));
    switch (type) {
      case 'text': {
        st = { kind: 'text', slot, text: new TextStream(this.emit, this.itemId(index)), citations: [...(block.citations ?? [])] };
        if (block.text) st.text.delta(block.text);
        break;
      }
      case 'thinking': {
        st = { kind: 'thinking', slot, text: new TextStream(this.emit, this.itemId(index), true), signature: block.signature ?? '' };
        if (block.thinking) st.text.delta(block.thinking);
        break;
      }
      case 'tool_use': {
        const id = block.id ?? newId('toolu');
        st = { kind: 'tool_use', slot, fc: new FunctionCallStream(this.emit, id, id, block.name ?? ''), json: '', block };
        st.fc.start();
        break;
      }
      case 'server_tool_use': {
        const id = block.id ?? newId('srvtoolu');
        const name: string = block.name ?? '';
        const hasInput = block.input && typeof block.input === 'object' && Object.keys(block.input).length > 0;
        if (name === 'code_execution' || name === 'bash_code_execution') {
          const field = name === 'code_execution' ? 'code' : 'command';
          st = { kind: 'code', slot, code: new HostedCodeStream(this.emit, id, 'anthropic', name), json: '', extractor: new JsonStringFieldExtractor([field, 'code', 'command']), block };
          st.code.start();
          if (hasInput) {
            st.input = block.input;
            const v = block.input[field] ?? block.input.code ?? block.input.command;
            if (typeof v === 'string') st.code.delta(v);
          }
        } else if (name === 'text_editor_code_execution') {
          st = { kind: 'editor', slot, json: '', block, input: hasInput ? block.input : undefined };
        } else {
          st = { kind: 'server_other', slot, json: '', block, input: hasInput ? block.input : undefined };
        }
        this.pending.set(id, { index, state: st });
        break;
      }
      default:
        st = { kind: 'other', slot, block };
        break;
    }
    this.blocks.set(index, st);
  }

  private delta(index: number, d: Json): void {
    const st = this.blocks.get(index);
    if (!st) return;
    switch (d.type) {
      case 'text_delta':
        if (st.kind === 'text') st.text.delta(String(d.text ?? ''));
        return;
      case 'citations_delta':
        if (st.kind === 'text' && d.citation) st.citations.push(d.citation);
        return;
      case 'thinking_delta':
        if (st.kind === 'thinking') st.text.delta(String(d.thinking ?? ''));
        return;
      case 'signature_delta':
        if (st.kind === 'thinking') st.signature += String(d.signature ?? '');
        return;
      case 'input_json_delta': {
        const part = String(d.partial_json ?? '');
        if (st.kind === 'tool_use') {
          st.json += part;
          st.fc.delta(part);
        } else if (st.kind === 'code') {
          st.json += part;
          st.code.delta(st.extractor.push(part));
        } else if (st.kind === 'editor' || st.kind === 'server_other') {
          st.json += part;
        }
        return;
      }
      default:
        return;
    }
  }

  private stop(index: number): void {
    const st = this.blocks.get(index);
    if (!st) return;
    switch (st.kind) {
      case 'text': {
        const msg = st.text.finish({ annotations: st.citations });
        const block: Json = { type: 'text', text: msg.text };
        if (st.citations.length > 0) block.citations = st.citations;
        this.turn.fill(st.slot, { ...msg, replay: this.turn.replay([{ index, data: block }]) });
        return;
      }
      case 'thinking': {
        const msg = st.text.finish();
        this.turn.fill(st.slot, { ...msg, replay: this.turn.replay([{ index, data: { type: 'thinking', thinking: msg.text, signature: st.signature } }]) });
        return;
      }
      case 'tool_use': {
        const item = st.fc.finish(st.json || (st.block.input && Object.keys(st.block.input).length > 0 ? JSON.stringify(st.block.input) : '{}'));
        const block: Json = { type: 'tool_use', id: st.fc.id, name: st.fc.name, input: parseObject(item.arguments ?? '{}') };
        if (st.block.caller) block.caller = st.block.caller;
        this.turn.functionCalls.push(st.fc.request());
        this.turn.fill(st.slot, { ...item, replay: this.turn.replay([{ index, data: block }]) });
        return;
      }
      case 'code': {
        st.input = st.json ? parseObject(st.json) : (st.input ?? {});
        const v = st.input.code ?? st.input.command;
        st.code.codeDone(typeof v === 'string' ? v : st.extractor.value);
        st.code.interpreting();
        return;
      }
      case 'editor':
      case 'server_other':
        st.input = st.json ? parseObject(st.json) : (st.input ?? {});
        return;
      case 'other':
        // Blocks this adapter does not interpret (redacted thinking, web search results…): replay only.
        this.turn.fill(st.slot, {
          type: 'message',
          id: this.itemId(index),
          role: 'assistant',
          text: '',
          thinking: true,
          replay: this.turn.replay([{ index, data: st.block }]),
        });
        return;
    }
  }

  private useBlock(index: number, st: BlockState): { index: number; data: Json } {
    const b = (st as { block: Json }).block;
    const block: Json = { type: 'server_tool_use', id: b.id, name: b.name, input: (st as { input?: Json }).input ?? {} };
    if (b.caller) block.caller = b.caller;
    return { index, data: block };
  }

  /** A `*_tool_result` block: finishes the server tool call it answers. */
  private result(index: number, block: Json): void {
    const p = this.pending.get(block.tool_use_id);
    if (p) this.pending.delete(block.tool_use_id);
    const content: Json = block.content ?? {};
    if (!p) {
      // A result whose call came in an earlier response (after pause_turn).
      if (/code_execution/.test(block.type)) {
        const code = new HostedCodeStream(this.emit, block.tool_use_id, 'anthropic', block.type.replace(/_tool_result$/, ''));
        const item = code.finish({ ...this.codeResult(content), container_id: this.containerId });
        this.turn.add({ ...item, replay: this.turn.replay([{ index, data: block }]) });
      } else {
        this.turn.add({ type: 'message', id: this.itemId(index), role: 'assistant', text: '', thinking: true, replay: this.turn.replay([{ index, data: block }]) });
      }
      return;
    }
    const st = p.state;
    const replay = this.turn.replay([this.useBlock(p.index, st), { index, data: block }]);
    if (st.kind === 'code') {
      const item = st.code.finish({ ...this.codeResult(content), container_id: this.containerId });
      this.turn.fill(st.slot, { ...item, replay });
    } else if (st.kind === 'editor') {
      const item = this.editorItem(block.tool_use_id, st.input ?? {}, content);
      this.emit({ type: 'response.output_item.done', item: publicItem(item) });
      this.turn.fill(st.slot, { ...item, replay });
    } else {
      this.turn.fill(st.slot, { type: 'message', id: block.tool_use_id, role: 'assistant', text: '', thinking: true, replay });
    }
  }

  private codeResult(c: Json): { status: 'completed' | 'failed'; outputs: CodeOutput[]; exit_code: number | null; error: ExecutionError | null } {
    const outputs: CodeOutput[] = [];
    const type: string = c.type ?? '';
    if (type.endsWith('_tool_result_error')) {
      const code = String(c.error_code ?? 'error');
      return { status: 'failed', outputs, exit_code: null, error: { type: code, message: c.error_message ?? describeToolError(code) } };
    }
    const stdout = typeof c.stdout === 'string' ? c.stdout : '';
    const stderr = typeof c.stderr === 'string' ? c.stderr : '';
    if (stdout) outputs.push({ type: 'logs', logs: stdout });
    if (stderr) outputs.push({ type: 'logs', logs: stderr, stream: 'stderr' });
    for (const f of (Array.isArray(c.content) ? c.content : []) as Json[]) {
      if (typeof f.file_id === 'string') {
        const file: FileOutput = { type: 'file', file_id: f.file_id };
        outputs.push(file);
        this.turn.addFile(file);
      }
    }
    const rc = typeof c.return_code === 'number' ? c.return_code : null;
    const failed = rc !== null && rc !== 0;
    let error: ExecutionError | null = null;
    if (failed) {
      const last = stderr.trim().split(/\r?\n/).pop() ?? '';
      error = errorFromTraceback(stderr) ?? { type: 'ExitCode', message: `exited with code ${rc}${last ? `: ${last}` : ''}` };
    }
    return { status: failed ? 'failed' : 'completed', outputs, exit_code: rc, error };
  }

  private editorItem(id: string, input: Json, c: Json): TextEditorItem {
    const type: string = c.type ?? '';
    const item: TextEditorItem = {
      type: 'text_editor_call',
      id,
      status: 'completed',
      runtime: 'anthropic',
      command: String(input.command ?? ''),
      input,
      error: null,
    };
    if (typeof input.path === 'string') item.path = input.path;
    if (type.endsWith('_tool_result_error')) {
      item.status = 'failed';
      item.error = { code: String(c.error_code ?? 'error'), message: c.error_message ?? describeToolError(String(c.error_code ?? '')) };
    } else {
      item.result = c;
    }
    return item;
  }

  /** Server tool calls left without a result (the response paused or ended): finished as incomplete. */
  finishPending(): void {
    for (const [id, p] of this.pending) {
      const st = p.state;
      const replay = this.turn.replay([this.useBlock(p.index, st)]);
      if (st.kind === 'code') {
        const item = st.code.finish({ status: 'incomplete', outputs: [], container_id: this.containerId, exit_code: null });
        this.turn.fill(st.slot, { ...item, replay });
      } else {
        this.turn.fill(st.slot, { type: 'message', id, role: 'assistant', text: '', thinking: true, replay });
      }
    }
    this.pending.clear();
  }
}

function describeToolError(code: string): string {
  switch (code) {
    case 'execution_time_exceeded':
      return 'The code ran longer than the sandbox allows.';
    case 'unavailable':
      return 'The code execution tool is unavailable right now.';
    case 'too_many_requests':
      return 'Too many code execution requests.';
    case 'invalid_tool_input':
      return 'The tool input was invalid.';
    case 'output_file_too_large':
      return 'An output file was too large.';
    case 'file_not_found':
      return 'The file was not found.';
    case 'container_expired':
      return 'The container expired.';
    case 'string_not_found':
      return 'The text to replace was not found.';
    default:
      return code;
  }
}

function parseObject(json: string): Json {
  try {
    const v = JSON.parse(json);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : { value: v };
  } catch {
    return {};
  }
}

/** The history as Anthropic messages (same-role neighbours merged, tool results in user turns). */
export function toAnthropicMessages(req: TurnRequest): Json[] {
  const messages: Json[] = [];
  const push = (role: 'user' | 'assistant', all: Json[]): void => {
    // The API rejects empty text blocks.
    const blocks = all.filter((b) => !(b.type === 'text' && !b.text));
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: [...blocks] });
  };
  for (const seg of segmentHistory(req.history, 'anthropic')) {
    if (seg.kind === 'replay') {
      push('assistant', seg.parts as Json[]);
      continue;
    }
    const item = seg.item;
    switch (item.type) {
      case 'message':
        if (item.role === 'user') push('user', [{ type: 'text', text: item.text }]);
        else if (!item.thinking && item.text) push('assistant', [{ type: 'text', text: item.text }]);
        break;
      case 'function_call':
        push('assistant', [{ type: 'tool_use', id: item.call_id, name: item.name, input: parseObject(item.arguments ?? '{}') }]);
        break;
      case 'function_call_output': {
        const block: Json = { type: 'tool_result', tool_use_id: item.call_id, content: item.output };
        if (item.is_error) block.is_error = true;
        push('user', [block]);
        break;
      }
      default: {
        if (isLocalRuntimeItem(item)) break;
        const t = foreignItemText(item);
        if (t) push('assistant', [{ type: 'text', text: t }]);
      }
    }
  }
  // Tool results first in a user turn, as the API requires.
  for (const m of messages) {
    if (m.role === 'user') m.content.sort((a: Json, b: Json) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  }
  const fileIds = req.hosted?.enabled ? req.hosted.fileIds ?? [] : [];
  if (fileIds.length > 0) {
    const firstUser = messages.find((m) => m.role === 'user');
    if (firstUser) {
      const present = new Set(firstUser.content.filter((b: Json) => b.type === 'container_upload').map((b: Json) => b.file_id));
      for (const id of fileIds) if (!present.has(id)) firstUser.content.push({ type: 'container_upload', file_id: id });
    }
  }
  return messages;
}
