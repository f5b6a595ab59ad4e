/**
 * One streamed response of the text protocol (./textProtocol): the model's text, with its ```python block
 * recognised while it streams in (./codeFence), rewritten into the events and items of a function call of
 * the code tool. The block is shown as a code card exactly as a streamed `execute_tool_code` call (it is
 * registered with the agent loop's CodeStreams), its prose as the assistant's message; ids are minted here
 * (providers and local servers repeat theirs).
 */
import type { CodeActEvent, FunctionCallItem, FunctionCallOutputItem, MessageItem, RuntimeKind } from '../../common/events';
import { notRunItem } from '../runtime/execution';
import { ProviderError } from '../providers/shared/errors';
import type { ConversationItem, FunctionCallRequest, ModelTool, TurnResult } from '../providers/shared/types';
import { EXECUTE_TOOL_CODE } from '../tools/modelTools';
import { CodeFenceScanner, type FenceSegment } from './codeFence';
import type { CodeStreamEntry } from './codeStreams';
import { randomToken } from '../util/ids';

interface TextTurnOptions {
  runtime: RuntimeKind;
  /** The code tool the model would have been offered (`execute_tool_code` or `execute_code`). */
  codeTool: ModelTool | undefined;
  /** Where this response's events go. */
  emit: (e: CodeActEvent) => void;
  /** Keys the block's code card by its function-call item id (CodeStreams.register). */
  register: (itemId: string, entry: CodeStreamEntry) => void;
}

function hex(): string {
  return randomToken(8);
}

/** One streamed response in text form: rewrites its events and, at the end, its items. */
export class TextTurn {
  private readonly scanner = new CodeFenceScanner();
  /** Provider item id -> our id (providers and local servers repeat ids across responses). */
  private readonly ids = new Map<string, string>();
  /** Our item id -> the prose shown for it. */
  private readonly prose = new Map<string, string>();
  private readonly finished = new Set<string>();
  private current?: string;
  private blockItem?: string;
  private readonly callId = `call_${hex()}`;
  private readonly fcId = `fc_${hex()}`;
  readonly execId = `exec_${hex()}`;
  private readonly entry: CodeStreamEntry;
  private callDone = false;

  constructor(private readonly o: TextTurnOptions) {
    const scanner = this.scanner;
    this.entry = {
      extractor: {
        get value() {
          return scanner.code;
        },
      },
      execId: this.execId,
    };
    this.register = () => o.register(this.fcId, this.entry);
  }

  private readonly register: () => void;

  private get toolName(): string {
    return this.o.codeTool?.name ?? EXECUTE_TOOL_CODE;
  }

  private ours(id: string): string {
    let mine = this.ids.get(id);
    if (!mine) {
      mine = `msg_${hex()}`;
      this.ids.set(id, mine);
    }
    return mine;
  }

  /** Handles a provider event; returns false for events it leaves to the caller (function calls). */
  handle(e: CodeActEvent): boolean {
    const emit = this.o.emit;
    switch (e.type) {
      case 'response.reasoning_text.delta':
      case 'response.reasoning_text.done':
        emit({ ...e, item_id: this.ours(e.item_id) });
        return true;
      case 'response.output_text.delta':
        this.text(this.ours(e.item_id), e.delta);
        return true;
      case 'response.output_text.done':
        this.textDone(this.ours(e.item_id));
        return true;
      case 'response.output_item.added':
      case 'response.output_item.done': {
        if (e.item.type === 'reasoning') {
          emit({ ...e, item: { ...e.item, id: this.ours(e.item.id) } });
          return true;
        }
        if (e.item.type !== 'message') return false;
        const id = this.ours(e.item.id);
        if (e.item.thinking) emit({ ...e, item: { ...e.item, id } });
        else if (e.type === 'response.output_item.done') {
          this.textDone(id);
          const text = this.prose.get(id);
          if (text) emit({ type: 'response.output_item.done', item: { ...e.item, id, text } });
        }
        return true;
      }
      default:
        return false;
    }
  }

  private text(id: string, delta: string): void {
    if (this.current !== id) {
      const out: FenceSegment[] = [];
      if (this.current) this.scanner.boundary(out);
      this.apply(out);
      this.current = id;
    }
    const out: FenceSegment[] = [];
    this.scanner.push(delta, out);
    this.apply(out);
  }

  private textDone(id: string): void {
    if (this.finished.has(id)) return;
    this.finished.add(id);
    if (this.current === id) {
      const out: FenceSegment[] = [];
      this.scanner.boundary(out);
      this.apply(out);
      this.current = undefined;
    }
    const text = this.prose.get(id);
    if (text) this.o.emit({ type: 'response.output_text.done', item_id: id, text });
  }

  private apply(segments: FenceSegment[]): void {
    const emit = this.o.emit;
    for (const s of segments) {
      if (s.kind === 'prose') {
        const id = this.current!;
        const before = this.prose.get(id) ?? '';
        const text = before ? s.text : s.text.replace(/^\n+/, '');
        if (!text) continue;
        this.prose.set(id, before + text);
        emit({ type: 'response.output_text.delta', item_id: id, delta: text });
      } else if (s.kind === 'open') {
        this.blockItem = this.current;
        this.register();
        emit({
          type: 'response.output_item.added',
          item: { type: 'function_call', id: this.fcId, call_id: this.callId, name: this.toolName, arguments: '', status: 'in_progress' },
        });
        emit({ type: 'response.code_interpreter_call.in_progress', item_id: this.execId, runtime: this.o.runtime });
      } else if (s.kind === 'code') {
        emit({ type: 'response.code_interpreter_call_code.delta', item_id: this.execId, delta: s.text });
      } else {
        this.closeCall();
      }
    }
  }

  private callItem(): FunctionCallItem {
    return {
      type: 'function_call',
      id: this.fcId,
      call_id: this.callId,
      name: this.toolName,
      arguments: textCallArguments(this.scanner.code),
      status: 'completed',
    };
  }

  private closeCall(): void {
    if (this.callDone) return;
    this.callDone = true;
    const item = this.callItem();
    this.o.emit({ type: 'response.function_call_arguments.done', item_id: this.fcId, call_id: this.callId, name: item.name, arguments: item.arguments! });
    this.o.emit({ type: 'response.output_item.done', item });
  }

  /**
   * The error of a failed response, its partial items in stored form (prose only; an open code card is
   * closed by the caller). A response that had received items stays one that is not retried, even when
   * none of them is kept (a message that was only a code block).
   */
  failed(err: unknown): unknown {
    if (!(err instanceof ProviderError) || !err.partial?.items.length) return err;
    const items = this.rewrite(err.partial.items, false);
    if (items.length || !err.retryable) {
      err.partial = { ...err.partial, items };
      return err;
    }
    const kept = new ProviderError({
      code: err.code,
      provider: err.provider,
      status: err.status,
      retryable: false,
      retryAfterMs: err.retryAfterMs,
      retryLimit: err.retryLimit,
      detail: err.detail,
      cause: err.cause,
      message: err.message,
    });
    kept.partial = { ...err.partial, items };
    return kept;
  }

  private rewrite(items: ConversationItem[], withCall: boolean): ConversationItem[] {
    const out: ConversationItem[] = [];
    let placed = !withCall;
    for (const item of items) {
      if (item.type !== 'message' || item.role !== 'assistant') {
        out.push(stripReplay(item));
        continue;
      }
      const id = this.ours(item.id);
      if (item.thinking) out.push({ ...stripReplay(item), id } as MessageItem);
      else {
        const text = this.prose.get(id);
        if (text) out.push({ type: 'message', id, role: 'assistant', text });
      }
      if (!placed && id === this.blockItem) {
        out.push(this.callItem());
        placed = true;
      }
    }
    if (!placed) out.push(this.callItem());
    return out;
  }

  /**
   * The response's items in stored form, and the code call to run. A block the output token limit cut
   * off is not run: the model is told so in an observation, and `again` asks for another turn.
   */
  finish(result: TurnResult): { items: ConversationItem[]; calls: FunctionCallRequest[]; again: boolean } {
    for (const id of this.prose.keys()) this.textDone(id);
    const out: FenceSegment[] = [];
    this.scanner.finish(out);
    this.apply(out);
    if (!this.scanner.opened) return { items: this.rewrite(result.items, false), calls: result.functionCalls, again: false };
    this.closeCall();
    const items = this.rewrite(result.items, true);
    const call: FunctionCallRequest = { call_id: this.callId, name: this.toolName, arguments: textCallArguments(this.scanner.code), item_id: this.fcId };
    if (this.scanner.closed || result.stopReason !== 'max_tokens') return { items, calls: [call], again: false };
    const message = 'The code block was cut off by the output token limit before its closing ```, so it did not run. Write shorter code.';
    this.notRun(message);
    const output: FunctionCallOutputItem = {
      type: 'function_call_output',
      id: `out_${hex()}`,
      item_id: this.fcId,
      call_id: this.callId,
      name: this.toolName,
      output: JSON.stringify({ error: message }),
      is_error: true,
    };
    this.o.emit({ type: 'response.output_item.done', item: output });
    return { items: [...items, output], calls: [], again: true };
  }

  private notRun(message: string): void {
    this.entry.settled = true;
    notRunItem(this.o.emit, { itemId: this.execId, code: this.scanner.code, runtime: this.o.runtime, error: { type: 'NotRun', message } });
  }
}

function stripReplay(item: ConversationItem): ConversationItem {
  if (!('replay' in item)) return item;
  const { replay: _replay, ...rest } = item;
  return rest as ConversationItem;
}

/** The first line of a block that runs it as a background job, in the text form (the function form's `background`). */
export const TEXT_BACKGROUND_LINE = '# background';

/** A block's call arguments: its code, and `background` when its first line is {@link TEXT_BACKGROUND_LINE}. */
function textCallArguments(code: string): string {
  const first = code.split('\n', 1)[0].trim();
  return JSON.stringify(first === TEXT_BACKGROUND_LINE ? { code, background: true } : { code });
}
