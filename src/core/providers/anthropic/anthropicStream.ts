/**
 * The stream state machine of an Anthropic Messages turn: text with citations, thinking blocks (signature
 * kept for replay), client `tool_use` with `input_json_delta`, and `server_tool_use` blocks of the code
 * execution tools with their `*_tool_result` blocks. Code deltas are plain code text, unescaped from the
 * partial JSON as it streams. stdout, stderr and `return_code` stay apart (`exit_code` on the item); output
 * `file_id`s become file outputs; text-editor operations become `text_editor_call` items (with errors); the
 * container id is surfaced and reused.
 */
import type { CodeOutput, ExecutionError, FileOutput, TextEditorItem } from '../../../common/events';
import {
  FunctionCallStream,
  HostedCodeStream,
  TextStream,
  errorFromTraceback,
  publicItem,
  replayOnlyItem,
  tokenUsage,
  asNumber,
  asObject,
  asString,
  objectsOf,
  type JsonObject,
  type TurnItems,
} from '../shared/emit';
import { JsonStringFieldExtractor } from '../shared/partialJson';
import type { StreamMachine } from '../shared/runStream';
import type { EmitFn, StopReason } from '../shared/types';
import { parseObject } from './anthropicRequest';
import { newId } from '../../util/ids';

type BlockState =
  | { kind: 'text'; slot: number; text: TextStream; citations: unknown[] }
  | { kind: 'thinking'; slot: number; text: TextStream; signature: string }
  | { kind: 'tool_use'; slot: number; fc: FunctionCallStream; json: string; block: JsonObject }
  | { kind: 'code'; slot: number; code: HostedCodeStream; json: string; extractor: JsonStringFieldExtractor; block: JsonObject; input?: JsonObject }
  | { kind: 'editor'; slot: number; json: string; block: JsonObject; input?: JsonObject }
  | { kind: 'server_other'; slot: number; json: string; block: JsonObject; input?: JsonObject }
  | { kind: 'other'; slot: number; block: JsonObject };

export class AnthropicState implements StreamMachine<unknown> {
  responseId: string | undefined;
  private model?: string;
  private containerId?: string;
  private stopReason?: string;
  complete = false;
  private inputTokens = 0;
  private outputTokens = 0;
  private cachedTokens = 0;
  private readonly blocks = new Map<number, BlockState>();
  /** server_tool_use blocks waiting for their result, by tool_use_id. */
  private readonly pending = new Map<string, { index: number; state: BlockState }>();

  constructor(
    private readonly emit: EmitFn,
    private readonly turn: TurnItems,
  ) {}

  outcome() {
    // The container id arrives in message_delta, after the code items finished: fill it in the result.
    for (const item of this.turn.items) {
      if (item.type === 'code_interpreter_call' && !item.container_id && this.containerId) item.container_id = this.containerId;
    }
    const raw = this.stopReason;
    const stopReason: StopReason =
      raw === 'pause_turn'
        ? 'pause_turn'
        : raw === 'end_turn' || raw === 'stop_sequence'
          ? 'end_turn'
          : raw === 'max_tokens'
            ? 'max_tokens'
            : raw === 'refusal'
              ? 'refusal'
              : raw === 'tool_use'
                ? 'tool_use'
                : 'other';
    return {
      stopReason,
      rawStopReason: raw,
      usage: tokenUsage(this.inputTokens, this.outputTokens, undefined, this.cachedTokens),
      containerId: this.containerId ?? null,
      model: this.model,
    };
  }

  onEvent(event: unknown): void {
    const ev = asObject(event) ?? {};
    // Anthropic numbers every block; a missing index is one key, as the events of one block share it.
    const index = asNumber(ev.index) ?? -1;
    switch (ev.type) {
      case 'message_start': {
        const m = asObject(ev.message) ?? {};
        this.responseId = asString(m.id) ?? this.responseId;
        this.model = asString(m.model) ?? this.model;
        this.addUsage(asObject(m.usage));
        const containerId = asString(asObject(m.container)?.id);
        if (containerId) this.containerId = containerId;
        return;
      }
      case 'content_block_start':
        this.start(index, asObject(ev.content_block) ?? {});
        return;
      case 'content_block_delta':
        this.delta(index, asObject(ev.delta) ?? {});
        return;
      case 'content_block_stop':
        this.stop(index);
        return;
      case 'message_delta': {
        const d = asObject(ev.delta);
        const stop = asString(d?.stop_reason);
        if (stop) this.stopReason = stop;
        const containerId = asString(asObject(d?.container)?.id);
        if (containerId) this.containerId = containerId;
        this.addUsage(asObject(ev.usage));
        return;
      }
      case 'message_stop':
        this.complete = true;
        return;
      default:
        return;
    }
  }

  private addUsage(u: JsonObject | undefined): void {
    if (!u) return;
    const cacheRead = asNumber(u.cache_read_input_tokens);
    const input = (asNumber(u.input_tokens) ?? 0) + (asNumber(u.cache_creation_input_tokens) ?? 0) + (cacheRead ?? 0);
    if (input > this.inputTokens) this.inputTokens = input;
    if (cacheRead !== undefined && cacheRead > this.cachedTokens) this.cachedTokens = cacheRead;
    const output = asNumber(u.output_tokens);
    if (output !== undefined) this.outputTokens = output;
  }

  private start(index: number, block: JsonObject): void {
    const type = asString(block.type) ?? '';
    if (type.endsWith('_tool_result') && typeof block.tool_use_id === 'string') {
      this.result(index, block, type, block.tool_use_id);
      return;
    }
    let st: BlockState | undefined;
    const slot = this.turn.reserve(() => (st && (st.kind === 'text' || st.kind === 'thinking') ? st.text.snapshot() : undefined));
    switch (type) {
      case 'text': {
        st = { kind: 'text', slot, text: new TextStream(this.emit), citations: Array.isArray(block.citations) ? [...(block.citations as unknown[])] : [] };
        const text = asString(block.text);
        if (text) st.text.delta(text);
        break;
      }
      case 'thinking': {
        st = { kind: 'thinking', slot, text: new TextStream(this.emit, true), signature: asString(block.signature) ?? '' };
        const thinking = asString(block.thinking);
        if (thinking) st.text.delta(thinking);
        break;
      }
      case 'tool_use': {
        const id = asString(block.id) ?? newId('toolu');
        st = { kind: 'tool_use', slot, fc: new FunctionCallStream(this.emit, id, asString(block.name) ?? ''), json: '', block };
        st.fc.start();
        break;
      }
      case 'server_tool_use': {
        const id = asString(block.id) ?? newId('srvtoolu');
        const name = asString(block.name) ?? '';
        const given = asObject(block.input);
        const input = given && Object.keys(given).length > 0 ? given : undefined;
        if (name === 'code_execution' || name === 'bash_code_execution') {
          const field = name === 'code_execution' ? 'code' : 'command';
          st = {
            kind: 'code',
            slot,
            code: new HostedCodeStream(this.emit, 'anthropic', name),
            json: '',
            extractor: new JsonStringFieldExtractor([field, 'code', 'command']),
            block,
          };
          st.code.start();
          if (input) {
            st.input = input;
            const v = input[field] ?? input.code ?? input.command;
            if (typeof v === 'string') st.code.delta(v);
          }
        } else if (name === 'text_editor_code_execution') {
          st = { kind: 'editor', slot, json: '', block, input };
        } else {
          st = { kind: 'server_other', slot, json: '', block, input };
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

  private delta(index: number, d: JsonObject): void {
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
        const block: JsonObject = { type: 'text', text: msg.text };
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
        const input = asObject(st.block.input);
        const item = st.fc.finish(st.json || (input && Object.keys(input).length > 0 ? JSON.stringify(input) : '{}'));
        const block: JsonObject = { type: 'tool_use', id: st.fc.callId, name: st.fc.name, input: parseObject(item.arguments ?? '{}') };
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
        this.turn.fill(st.slot, replayOnlyItem(this.turn.replay([{ index, data: st.block }])));
        return;
    }
  }

  private useBlock(index: number, st: BlockState): { index: number; data: JsonObject } {
    const b = (st as { block: JsonObject }).block;
    const block: JsonObject = { type: 'server_tool_use', id: b.id, name: b.name, input: (st as { input?: JsonObject }).input ?? {} };
    if (b.caller) block.caller = b.caller;
    return { index, data: block };
  }

  /** A `*_tool_result` block: finishes the server tool call it answers. */
  private result(index: number, block: JsonObject, type: string, toolUseId: string): void {
    const p = this.pending.get(toolUseId);
    if (p) this.pending.delete(toolUseId);
    const content = asObject(block.content) ?? {};
    if (!p) {
      // A result whose call came in an earlier response (after pause_turn).
      if (/code_execution/.test(type)) {
        const code = new HostedCodeStream(this.emit, 'anthropic', type.replace(/_tool_result$/, ''));
        const item = code.finish({ ...this.codeResult(content), container_id: this.containerId });
        this.turn.add({ ...item, replay: this.turn.replay([{ index, data: block }]) });
      } else {
        this.turn.add(replayOnlyItem(this.turn.replay([{ index, data: block }])));
      }
      return;
    }
    const st = p.state;
    const replay = this.turn.replay([this.useBlock(p.index, st), { index, data: block }]);
    if (st.kind === 'code') {
      const item = st.code.finish({ ...this.codeResult(content), container_id: this.containerId });
      this.turn.fill(st.slot, { ...item, replay });
    } else if (st.kind === 'editor') {
      const item = this.editorItem(st.input ?? {}, content);
      this.emit({ type: 'response.output_item.done', item: publicItem(item) });
      this.turn.fill(st.slot, { ...item, replay });
    } else {
      this.turn.fill(st.slot, replayOnlyItem(replay));
    }
  }

  private codeResult(c: JsonObject): { status: 'completed' | 'failed'; outputs: CodeOutput[]; exit_code: number | null; error: ExecutionError | null } {
    const outputs: CodeOutput[] = [];
    const type = asString(c.type) ?? '';
    if (type.endsWith('_tool_result_error')) {
      const code = String(c.error_code ?? 'error');
      return { status: 'failed', outputs, exit_code: null, error: { type: code, message: asString(c.error_message) ?? describeToolError(code) } };
    }
    const stdout = typeof c.stdout === 'string' ? c.stdout : '';
    const stderr = typeof c.stderr === 'string' ? c.stderr : '';
    if (stdout) outputs.push({ type: 'logs', logs: stdout });
    if (stderr) outputs.push({ type: 'logs', logs: stderr, stream: 'stderr' });
    for (const f of objectsOf(c.content)) {
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

  private editorItem(input: JsonObject, c: JsonObject): TextEditorItem {
    const type = asString(c.type) ?? '';
    const item: TextEditorItem = {
      type: 'text_editor_call',
      id: newId('edit'),
      status: 'completed',
      runtime: 'anthropic',
      command: String(input.command ?? ''),
      input,
      error: null,
    };
    if (typeof input.path === 'string') item.path = input.path;
    if (type.endsWith('_tool_result_error')) {
      item.status = 'failed';
      item.error = { code: String(c.error_code ?? 'error'), message: asString(c.error_message) ?? describeToolError(String(c.error_code ?? '')) };
    } else {
      item.result = c;
    }
    return item;
  }

  /** Server tool calls left without a result (the response paused or ended): finished as incomplete. */
  finish(): void {
    for (const p of this.pending.values()) {
      const st = p.state;
      const replay = this.turn.replay([this.useBlock(p.index, st)]);
      if (st.kind === 'code') {
        const item = st.code.finish({ status: 'incomplete', outputs: [], container_id: this.containerId, exit_code: null });
        this.turn.fill(st.slot, { ...item, replay });
      } else {
        this.turn.fill(st.slot, replayOnlyItem(replay));
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
