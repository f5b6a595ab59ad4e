/**
 * What the sources that start programs (`command` tools, stdio MCP servers) share: the minimal
 * environment they run with, the stderr tail their errors carry, and the teardown that leaves nothing
 * of theirs running.
 */
import { statSync } from 'node:fs';
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

/**
 * Why a program could not be started, as a sentence for an error (after "could not start …: "), from the
 * error `spawn` threw or emitted. `field` names the setting to check ("command", "mcp.command").
 */
export function spawnFailure(program: string, cwd: string, e: unknown, field: string): string {
  const err = e as NodeJS.ErrnoException | undefined;
  const what = JSON.stringify(program);
  switch (err?.code) {
    case 'ENOENT':
      return existsDir(cwd)
        ? `command not found (${what} is not on PATH or does not exist). Check "${field}" in codeact.tools`
        : `its working folder ${JSON.stringify(cwd)} does not exist. Check "cwd" in codeact.tools, or create the folder`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${what} is not executable, or is a folder). Make it executable (chmod +x), or run it through its interpreter, for example ["python3", "tools/x.py"], in "${field}"`;
    case 'ENOTDIR':
      return `its working folder ${JSON.stringify(cwd)} is not a folder. Check "cwd" in codeact.tools`;
    case 'EMFILE':
    case 'ENFILE':
      return `the host has run out of file descriptors (${err.code}: too many open files). Nothing ran; try again when fewer files are open, or raise the limit (ulimit -n)`;
    case 'EAGAIN':
    case 'ENOMEM':
      return `the host could not start another process (${err.code}). Nothing ran; try again when fewer processes run`;
    case 'E2BIG':
      return `its arguments and environment are too large (E2BIG). Pass less in "${field}" or in its environment`;
    default:
      return `${err?.message ?? String(e)}. Check "${field}" in codeact.tools`;
  }
}

function existsDir(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
