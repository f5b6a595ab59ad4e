/**
 * Text that grows at the end (streamed code, a streamed message), shown as a frozen part rendered once
 * and a live tail rendered again on each update. Subclasses decide what freezes and how each part renders.
 */
export abstract class GrowingText {
  protected text = '';
  /** How much of `text` the frozen part shows. */
  protected frozenLen = 0;

  constructor(
    readonly root: HTMLElement,
    protected readonly frozen: HTMLElement,
    protected readonly live: HTMLElement,
  ) {
    root.append(frozen, live);
  }

  get value(): string {
    return this.text;
  }

  /** Shows `next`: grows what is shown when `next` extends the frozen part, else starts over. */
  update(next: string): void {
    if (next === this.text) return;
    if (!next.startsWith(this.text.slice(0, this.frozenLen))) {
      this.frozen.textContent = '';
      this.frozenLen = 0;
      this.restarted();
    }
    this.text = next;
    this.grow(next);
  }

  /** The frozen part was dropped (the text changed before its end). */
  protected restarted(): void {}

  /** Freezes what can no longer change and shows the rest live. */
  protected abstract grow(next: string): void;
}
