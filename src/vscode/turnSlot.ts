/**
 * The one turn that runs at a time in the extension (a prompt, a run of code): its label, its abort signal
 * (Stop, and VS Code's cancellation of the request that started it), and when it has ended.
 */
import type { CancellationToken } from './controller.apis';

export class TurnSlot {
  private current?: { abort: AbortController; label: string; done: Promise<void>; finish(): void; cancel?: { dispose(): void } };

  get busy(): boolean {
    return !!this.current;
  }

  get label(): string | undefined {
    return this.current?.label;
  }

  /** Settles when the running turn has ended (undefined: none runs). */
  get done(): Promise<void> | undefined {
    return this.current?.done;
  }

  /** A turn starts; another one running refuses it. The signal aborts on abort() and on the token's cancellation. */
  begin(label: string, token?: CancellationToken): AbortSignal {
    if (this.current) throw new Error(`CodeAct is already running "${this.current.label}". Stop it first (CodeAct: Stop).`);
    const abort = new AbortController();
    let finish = () => {};
    const done = new Promise<void>((resolve) => (finish = resolve));
    this.current = { abort, label, done, finish, cancel: token?.onCancellationRequested(() => abort.abort()) };
    return abort.signal;
  }

  end(): void {
    this.current?.cancel?.dispose();
    this.current?.finish();
    this.current = undefined;
  }

  abort(): void {
    this.current?.abort.abort();
  }
}
