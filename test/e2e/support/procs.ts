/** Processes on this machine, from /proc (Linux): the e2e tests check that Stop really ends them. */
import { readFileSync, readdirSync } from 'node:fs';

export interface Proc {
  pid: number;
  cmdline: string;
}

/** Live processes whose command line contains `marker` (zombies, which have no command line, excluded). */
export function processesWith(marker: string): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      if (cmdline.includes(marker)) out.push({ pid, cmdline });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** Polls until `check` returns true, or throws `message` after `timeoutMs`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, message: () => string, intervalMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(message());
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
