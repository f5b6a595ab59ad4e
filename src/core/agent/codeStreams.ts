/**
 * The code cards of one streamed response, filled in while the model writes the code: the JSON arguments of
 * an `execute_tool_code` or `execute_code` call are unescaped on the fly into code deltas (the text protocol
 * registers its ```python block here too). Each card is settled once: its code runs, or it is closed as not run
 * (so it never stays "writing").
 */
import type { CodeActEvent, RuntimeKind } from '../../common/events';
import { JsonStringFieldExtractor } from '../providers/shared/partialJson';
import { notRunItem } from '../runtime/execution';
import { EXECUTE_CODE, EXECUTE_TOOL_CODE } from '../tools/modelTools';
import { newId } from '../util/ids';

/** What is kept per streamed code card. */
export interface CodeStreamEntry {
  extractor: { readonly value: string };
  execId: string;
  settled?: boolean;
}

export class CodeStreams {
  /** By our function-call item id (never the provider's call id: servers repeat those). */
  private entries = new Map<string, CodeStreamEntry>();

  constructor(private readonly o: { runtime: RuntimeKind; emit: (e: CodeActEvent) => void }) {}

  /** A new response (each attempt of a turn): it starts with no cards. */
  reset(): void {
    this.entries = new Map();
  }

  /** Keys a card by its function-call item id (the text protocol's block). */
  readonly register = (itemId: string, entry: CodeStreamEntry): void => {
    this.entries.set(itemId, entry);
  };

  /**
   * After a provider event is passed on: a code tool's call opens its card (unless registered: the text
   * protocol opens its own), and its argument deltas become code deltas.
   */
  observe(e: CodeActEvent): void {
    if (
      e.type === 'response.output_item.added' &&
      e.item.type === 'function_call' &&
      e.item.id &&
      !this.entries.has(e.item.id) &&
      (e.item.name === EXECUTE_TOOL_CODE || e.item.name === EXECUTE_CODE)
    ) {
      // The code card of this call: an execution item of its own, with an id of ours.
      const execId = newId('exec');
      this.entries.set(e.item.id, { extractor: new JsonStringFieldExtractor(['code']), execId });
      this.o.emit({ type: 'response.code_interpreter_call.in_progress', item_id: execId, runtime: this.o.runtime });
    } else if (e.type === 'response.function_call_arguments.delta') {
      const s = this.entries.get(e.item_id);
      if (!s) return;
      const delta = (s.extractor as JsonStringFieldExtractor).push(e.delta);
      if (delta) this.o.emit({ type: 'response.code_interpreter_call_code.delta', item_id: s.execId, delta });
    }
  }

  /**
   * The card of a call whose code runs now, settled: its execution item id, and whether the card was opened
   * (`announced`). The code the stream missed is sent first, so the streamed code equals the code that runs
   * (a provider may send arguments whole).
   */
  claim(itemId: string, code: string): { execId: string; announced: boolean } {
    const s = this.entries.get(itemId);
    if (!s) return { execId: newId('exec'), announced: false };
    s.settled = true;
    const streamed = s.extractor.value;
    if (code.startsWith(streamed) && code.length > streamed.length) {
      this.o.emit({ type: 'response.code_interpreter_call_code.delta', item_id: s.execId, delta: code.slice(streamed.length) });
    }
    return { execId: s.execId, announced: true };
  }

  /** The call's code was shown while the model wrote it, but it will not run: its card closes (once). */
  notRun(itemId: string, message: string): void {
    const s = this.entries.get(itemId);
    if (s) this.settle(s, 'NotRun', message);
  }

  /** Closes every card of the response still open: the response failed, so none of them will run. */
  abandonAll(type: string, message: string): void {
    for (const s of new Set(this.entries.values())) this.settle(s, type, message);
  }

  private settle(s: CodeStreamEntry, type: string, message: string): void {
    if (s.settled) return;
    s.settled = true;
    notRunItem(this.o.emit, { itemId: s.execId, code: s.extractor.value, runtime: this.o.runtime, error: { type, message } });
  }
}
