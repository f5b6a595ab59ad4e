/** For values that change only when an event says so: the host state's settings, keys, tools and interpreters. */

/** Values computed on first need and kept until {@link clear} (an event said they changed). Bounded: past `max` keys it starts over. */
export class ChangeCache<K, V> {
  private readonly values = new Map<K, V>();

  constructor(
    private readonly compute: (key: K) => V,
    private readonly max = 64,
  ) {}

  get(key: K): V {
    if (this.values.has(key)) return this.values.get(key) as V;
    const value = this.compute(key);
    if (this.values.size >= this.max) this.values.clear();
    this.values.set(key, value);
    return value;
  }

  delete(key: K): void {
    this.values.delete(key);
  }

  clear(): void {
    this.values.clear();
  }
}
