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

/** Whether `ancestor` is `pid` or above it. */
function descendsFrom(pid: number, ancestor: number): boolean {
  for (let p = pid; p > 1;) {
    if (p === ancestor) return true;
    const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
    p = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  return false;
}

/** The extension hosts of a code-server (its pid); other suites may run their own beside it. */
export function extensionHostsUnder(server: number): number[] {
  return processesWith('--type=extensionHost')
    .map((p) => p.pid)
    .filter((pid) => descendsFrom(pid, server));
}

/**
 * SIGKILLs every extension host of a code-server (its pid), as a crash would; returns how many. A window that
 * reloaded or reconnected on a busy machine may have its next host beside the one ending, so all of them go.
 */
export function killExtensionHosts(server: number): number {
  const hosts = extensionHostsUnder(server);
  if (!hosts.length) throw new Error(`no extension host runs under code-server ${server}`);
  for (const pid of hosts) process.kill(pid, 'SIGKILL');
  return hosts.length;
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
