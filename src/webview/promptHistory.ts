/**
 * The prompts sent from the composer, browsed with ↑ and ↓ the way a shell's history is: ↑ from a line
 * being typed keeps it as a draft, ↓ past the newest prompt brings the draft back, and typing ends the
 * browsing.
 */
export class PromptHistory {
  /** Where ↑/↓ are in `items`; -1 while not browsing. */
  private index = -1;
  private draft = '';

  constructor(
    /** Oldest first; the panel saves it with its state. */
    readonly items: string[],
    private readonly max: number,
  ) {}

  /** A prompt was sent: kept (once, if it repeats the last), the oldest dropped past `max`. */
  add(text: string): void {
    if (this.items[this.items.length - 1] !== text) this.items.push(text);
    if (this.items.length > this.max) this.items.splice(0, this.items.length - this.max);
    this.index = -1;
  }

  /** The user typed: no longer browsing. */
  reset(): void {
    this.index = -1;
  }

  /** ↑: the prompt before the one shown (`current` is kept as the draft when browsing starts); undefined at the oldest. */
  older(current: string): string | undefined {
    if (!this.items.length) return undefined;
    if (this.index === -1) {
      this.draft = current;
      this.index = this.items.length;
    }
    if (this.index === 0) return undefined;
    return this.items[--this.index];
  }

  /** ↓: the prompt after the one shown, the draft after the newest; undefined when not browsing. */
  newer(): string | undefined {
    if (this.index === -1) return undefined;
    if (++this.index < this.items.length) return this.items[this.index];
    this.index = -1;
    return this.draft;
  }
}
