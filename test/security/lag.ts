/**
 * Event-loop lag while an attack runs: a 5 ms ticker records the longest gap between its ticks, minus
 * the 5 ms it asked for. A synchronous stall of N ms shows as a gap of about N ms. The figure is printed
 * so it can be compared; no test passes or fails on it (a busy machine's clock must not decide an
 * outcome): the security tests prove their bounds by counting work (units charged, reads, caps named).
 */

export async function withLag<T>(label: string, attack: () => Promise<T>): Promise<{ value?: T; error?: Error; lagMs: number }> {
  let last = performance.now();
  let max = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - 5);
    last = now;
  }, 5);
  let value: T | undefined;
  let error: Error | undefined;
  try {
    value = await attack();
  } catch (e) {
    error = e as Error;
  }
  // Let the ticker run once more, so a stall at the very end is measured too.
  await new Promise((r) => setTimeout(r, 10));
  clearInterval(tick);
  max = Math.max(max, performance.now() - last - 5);
  const lagMs = Math.round(max * 10) / 10;
  console.log(`      event-loop lag during ${label}: ${lagMs} ms`);
  return { value, error, lagMs };
}
