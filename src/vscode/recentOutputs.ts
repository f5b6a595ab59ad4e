/**
 * Full outputs of recent executions, for "open full output" (the panel keeps only each output's tail): the
 * last 200 finished items as they streamed, else the one saved in the open conversation.
 */
import type { CodeInterpreterCallItem } from '../common/events';
import type { TranscriptEvent } from '../common/transcript';

const MAX_KEPT = 200;

export class RecentOutputs {
  private readonly items = new Map<string, CodeInterpreterCallItem>();

  /** Keeps the item of a finished execution. */
  note(e: TranscriptEvent): void {
    if (e.type !== 'response.output_item.done' || e.item.type !== 'code_interpreter_call') return;
    this.items.set(e.item.id, e.item);
    if (this.items.size > MAX_KEPT) this.items.delete(this.items.keys().next().value!);
  }

  find(itemId: string, saved: readonly TranscriptEvent[] = []): CodeInterpreterCallItem | undefined {
    const kept = this.items.get(itemId);
    if (kept) return kept;
    for (const e of saved) if (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' && e.item.id === itemId) return e.item;
    return undefined;
  }
}
