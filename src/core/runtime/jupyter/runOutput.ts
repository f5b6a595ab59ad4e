/**
 * What a Jupyter run shows: stdout and stderr under the output cap, and every display (display_data,
 * execute_result, update_display_data) with all its MIME types, in the order the kernel sent them, under
 * the same display caps as the local guest; and whether anything was dropped (here, or by the server's
 * IOPub rate limits).
 */
import type { CodeActEvent, CodeOutput, FileOutput, StreamName } from '../../../common/events';
import { DisplayBudget } from '../displays';
import { OutputCapture } from '../execution';
import type { RuntimeLimits } from '../types';

export class RunOutput {
  private readonly output: OutputCapture;
  private readonly budget: DisplayBudget;
  private serverDropped = false;
  private closed = false;

  constructor(
    private readonly itemId: string,
    limits: RuntimeLimits,
    private readonly emit: (event: CodeActEvent) => void,
  ) {
    this.output = new OutputCapture(limits.maxOutputBytes);
    this.budget = new DisplayBudget(limits);
  }

  /** A `stream` message of the kernel. */
  onStream(name: unknown, text: string): void {
    // Jupyter Server drops output over its IOPub rate limits and says so in a stream message.
    if (/^IOPub (data|message) rate exceeded\./.test(text)) this.serverDropped = true;
    this.onText(name === 'stderr' ? 'stderr' : 'stdout', text);
  }

  /** A display_data, execute_result or update_display_data message's content. */
  onDisplay(kind: 'display_data' | 'execute_result' | 'update_display_data', content: Record<string, unknown>): void {
    const update = kind === 'update_display_data';
    const transient = content.transient as { display_id?: unknown } | undefined;
    const taken = this.budget.take(
      { data: content.data, metadata: content.metadata, display_id: transient?.display_id, ...(kind === 'execute_result' ? { result: true } : {}) },
      update,
    );
    if (!taken.ok) {
      if (taken.note) this.onText('stderr', taken.note);
      return;
    }
    const d = taken.display;
    // An update of a display this run did not show (an earlier cell's) is shown where the run stands.
    const replaced = this.output.pushDisplay(d, update);
    if (!replaced) this.output.pushDisplay(d);
    this.emit({ type: 'codeact.output.display', item_id: this.itemId, output: d, ...(update && replaced ? { update: true } : {}) });
  }

  onText(stream: StreamName, text: string): void {
    const part = this.output.pushText(stream, text);
    if (part) this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream, delta: part });
  }

  addFile(file: FileOutput): void {
    this.output.pushFile(file);
  }

  /** The closing note of the caps, once. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const note = this.budget.summary();
    if (note) this.onText('stderr', note);
  }

  outputs(): CodeOutput[] {
    return this.output.outputs();
  }

  get truncated(): boolean {
    return this.output.truncated || this.serverDropped;
  }
}
