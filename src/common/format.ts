/**
 * Byte and duration formatting for messages about limits ("truncated after 4 MiB", "timed out after
 * 5 min"), shared by the engine, both hosts and the panel.
 */

/** 4194304 -> "4 MiB", 2048 -> "2 KiB", 1000 -> "1000 bytes": exact, because a limit must read exactly. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/** 300000 -> "5 min", 30000 -> "30 s", 1500 -> "1.5 s": a configured limit. */
export function formatDuration(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
