/**
 * Byte and duration formatting: limits in messages ("truncated after 4 MiB", "timed out after 5 min") and
 * measured durations ("7 ms", "1.23 s"), shared by the engine, both hosts and the panel; and the one way a
 * text is cut short for showing (`clip`).
 */

/** `text` in at most `max` characters: when cut, its beginning and "…". */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** 4194304 -> "4 MiB", 2048 -> "2 KiB", 1000 -> "1000 bytes": exact, because a limit must read exactly. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/** "more than 1 MiB (1,048,576 bytes)": a cap that a remote body passed, with its exact count of bytes. */
export function overCap(cap: number): string {
  const bytes = `${cap.toLocaleString('en-US')} bytes`;
  const size = formatBytes(cap);
  return size.endsWith(' bytes') ? `more than ${bytes}` : `more than ${size} (${bytes})`;
}

/** 300000 -> "5 min", 30000 -> "30 s", 1500 -> "1.5 s": a configured limit. */
export function formatDuration(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * 7.4 -> "7 ms", 1234 -> "1.23 s", 12345 -> "12.3 s", 75000 -> "1 min 15 s": a measured duration, as the panel,
 * the inline result and its hover show it (a warm session runs a cell in a few ms, which "0.00 s" would hide).
 */
export function formatElapsed(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${m} min ${s} s`;
}

/** An integer with thousands separators: `5,210`. */
export function formatCount(n: number): string {
  const s = String(Math.trunc(Math.abs(n)));
  let out = '';
  for (let i = s.length; i > 0; i -= 3) out = s.slice(Math.max(0, i - 3), i) + (out ? ',' + out : '');
  return (n < 0 ? '-' : '') + out;
}

/** When something happened, as a person says it: "just now", "5 min ago", "3 h ago", "2 d ago", else the date. */
export function relativeTime(ms: number, now = Date.now()): string {
  const d = Math.max(0, now - ms);
  if (d < 60_000) return 'just now';
  if (d < 3_600_000) return `${Math.floor(d / 60_000)} min ago`;
  if (d < 86_400_000) return `${Math.floor(d / 3_600_000)} h ago`;
  const days = Math.floor(d / 86_400_000);
  if (days < 7) return `${days} d ago`;
  return new Date(ms).toLocaleDateString();
}
