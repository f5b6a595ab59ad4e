/**
 * What the sources that start programs (`command` tools, stdio MCP servers) share: the minimal
 * environment they run with, the stderr tail their errors carry, and the teardown that leaves nothing
 * of theirs running.
 */
import { killMarked, killTree, waitGone } from '../../util/processTree';

/** A minimal environment plus the host variables `names` lists (those that are set). */
export function commandEnv(names: string[] | undefined, hostEnv: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {
    PATH: hostEnv.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
    ...(hostEnv.HOME ? { HOME: hostEnv.HOME } : {}),
    ...(hostEnv.SYSTEMROOT ? { SYSTEMROOT: hostEnv.SYSTEMROOT } : {}),
  };
  for (const name of names ?? []) {
    const v = hostEnv[name];
    if (v !== undefined) env[name] = v;
  }
  return env;
}

/** The last `lines` lines of a program's stderr, at most `chars` characters. */
export function tail(text: string, lines = 20, chars = 2000): string {
  const t = text.trim().split('\n').slice(-lines).join('\n');
  return t.length > chars ? '…' + t.slice(-chars) : t;
}

/**
 * Kills the tree of a program that was started with the environment variable `markerName=marker`, and
 * waits (up to 2 s) until it is gone: its process group and descendants, the `strays` (processes seen in
 * its tree earlier, which may have left it since), and every process that still carries the marker.
 */
export async function reapProcesses(pid: number | undefined, rootExited: boolean, markerName: string, marker: string, strays: number[] = []): Promise<void> {
  const doomed: number[] = [];
  if (pid) {
    if (!rootExited) doomed.push(pid);
    killTree(pid, !rootExited);
  }
  for (const p of strays) {
    doomed.push(p);
    try {
      process.kill(p, 'SIGKILL');
    } catch {}
  }
  doomed.push(...(await killMarked(markerName, marker)));
  // SIGKILL is asynchronous: resolve once they are really gone, so "after close, nothing runs" holds.
  await waitGone([...new Set(doomed)], 2000);
}
