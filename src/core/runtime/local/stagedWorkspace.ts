/**
 * Review mode (`codeact.sandbox.reviewWrites`, issue 35): the code's writes to a `readwrite` workspace are
 * staged in an overlay and reach the workspace only when the person keeps them.
 *
 * A helper process (the system's python3 -I -S, nothing the guest can write) makes a user and a mount
 * namespace with the caller's uid and gid mapped to themselves, and mounts the kernel's overlayfs over the
 * workspace's own path: the workspace as the lower layer, the upper layer and overlay's work folder in a
 * private folder of the user's cache (`~/.cache/codeact/stage/<host>/codeact-stage-…`). Every sandbox of the
 * runtime starts inside those namespaces (`nsenter -U -m --preserve-credentials -- bwrap …`, bwrap's own
 * options unchanged), so the code sees the merged view at the workspace's path and writes only the upper
 * layer. The host reads and writes that view through `/proc/<helper>/root/<workspace>` (the changesets of
 * ../rewind/workspaceChanges; Keep copies from it into the workspace, Discard puts the workspace's bytes back
 * into it).
 *
 * Measured (bench/experiments/rewind/overlay_helper.py, docs/design/rewind.md): the helper starts in 58–87 ms
 * once per runtime, entering it adds 3–5 ms to a sandbox's start, nothing to an execution; a staging copy of
 * the workspace costs its size on every copy.
 *
 * When the helper ends (killed, the runtime disposed), nothing is entered again: a launch then fails, saying so.
 * What was staged and not kept stays in the stage folder (named in the log), never removed on its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { ownTempDir } from './tempFolders';
import { cacheFolder } from '../rewind/storeRoot';
import type { HostRunFile } from './workspaceMount';

/** The helper: argv workspace, upper, work, host pid. Prints "ready" once the overlay is mounted, then waits for its stdin to close. */
const HELPER = String.raw`import os, sys, ctypes
ws, upper, work, host = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
def fail(what):
    e = ctypes.get_errno()
    sys.stdout.write('error %s: %s\n' % (what, os.strerror(e) if e else 'failed'))
    sys.stdout.flush()
    os._exit(1)
libc.prctl(1, 9, 0, 0, 0)
if os.getppid() != host:
    os._exit(1)
uid, gid = os.getuid(), os.getgid()
if libc.unshare(0x10000000 | 0x00020000) != 0:
    fail('a user and mount namespace')
for name, text in (('setgroups', 'deny'), ('uid_map', '%d %d 1' % (uid, uid)), ('gid_map', '%d %d 1' % (gid, gid))):
    try:
        with open('/proc/self/' + name, 'w') as f:
            f.write(text)
    except OSError as e:
        sys.stdout.write('error the namespace\'s %s: %s\n' % (name, e.strerror))
        sys.stdout.flush()
        os._exit(1)
if libc.mount(b'none', b'/', None, 0x4000 | 0x40000, None) != 0:
    fail('private mounts')
opts = 'lowerdir=%s,upperdir=%s,workdir=%s,userxattr' % (ws, upper, work)
if libc.mount(b'overlay', ws.encode(), b'overlay', 0, opts.encode()) != 0:
    fail('an overlay over the workspace')
sys.stdout.write('ready\n')
sys.stdout.flush()
while os.read(0, 4096):
    pass
`;

/** Said when the helper has ended: nothing may run on the workspace itself in its place. */
export const STAGE_GONE =
  "Review mode (codeact.sandbox.reviewWrites) stages the code's writes in a helper process that has ended, so no code runs here any more: the writes would reach the workspace unreviewed. To start a new one, end the session host (`codeact sessions end --all` in a terminal), or reload the window when codeact.session.host is off. Writes it staged and nobody kept stay in ~/.cache/codeact/stage (CodeAct's log names the folder).";

/** Said when review mode is on and the sandbox cannot run: nothing runs. */
export const STAGE_NEEDS_SANDBOX =
  "Review mode (codeact.sandbox.reviewWrites) stages the code's writes inside the bubblewrap sandbox, which cannot run here, so no code runs: turn review mode off, or make bubblewrap work.";

/** The system's python3 (never one on PATH, which a workspace could steer) and nsenter. */
const SYSTEM_PYTHON = ['/usr/bin/python3', '/bin/python3'];
const NSENTER = ['/usr/bin/nsenter', '/bin/nsenter'];

/**
 * The workspace paths (relative, forward slashes) review mode never keeps from the code's view: what declared tools
 * run on the host, with the folder of a program and the first folder of a missing one (those that exist are
 * read-only to the code anyway; a missing one gets no placeholder in review mode, ./workspaceMount).
 */
export function neverKept(workspace: string, hostRun: readonly HostRunFile[] = []): string[] {
  const out: string[] = [];
  for (const f of hostRun) {
    const rel = path.relative(workspace, f.path);
    if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) continue;
    const parts = rel.split(path.sep);
    out.push((f.placeholder ? parts.slice(0, 1) : f.program && parts.length > 1 ? parts.slice(0, -1) : parts).join('/'));
  }
  return out;
}

export class StagedWorkspace {
  /** The folder that holds the upper layer (the staged files) and overlay's work folder. */
  readonly folder: string;
  private readonly upper: string;
  private child: ChildProcess | undefined;
  private started: Promise<number> | undefined;
  private gone: string | undefined;

  constructor(
    /** The workspace folder on this machine (an absolute, real path). */
    readonly workspace: string,
    private readonly log?: (line: string) => void,
  ) {
    this.folder = ownTempDir('stage', cacheFolder('stage', workspace));
    this.upper = path.join(this.folder, 'upper');
  }

  /** Why review mode cannot work here (no python3, no nsenter, a path overlay cannot name), or undefined. */
  static unavailable(workspace: string): string | undefined {
    if (process.platform !== 'linux') return 'it needs Linux (overlayfs in a user namespace)';
    if (!SYSTEM_PYTHON.some(existsSync)) return 'it needs the system python3 (/usr/bin/python3)';
    if (!NSENTER.some(existsSync)) return 'it needs nsenter (util-linux)';
    if (/[,:\\\n]/.test(workspace)) return 'overlayfs cannot stage a folder whose path has a comma, a colon or a backslash';
    return undefined;
  }

  /** The helper's pid once the overlay is mounted (started on the first call); rejects with why not, or once it has ended. */
  pid(): Promise<number> {
    if (this.gone) return Promise.reject(new Error(this.gone));
    return (this.started ??= this.start());
  }

  private async start(): Promise<number> {
    const why = StagedWorkspace.unavailable(this.workspace);
    if (why) throw new Error(`Review mode (codeact.sandbox.reviewWrites) cannot stage the code's writes here: ${why}. Turn it off to run code.`);
    const work = path.join(this.folder, 'work');
    mkdirSync(this.upper, { mode: 0o700 });
    mkdirSync(work, { mode: 0o700 });
    const python = SYSTEM_PYTHON.find(existsSync)!;
    const t = performance.now();
    return new Promise<number>((resolve, reject) => {
      const child = spawn(python, ['-I', '-S', '-c', HELPER, this.workspace, this.upper, work, String(process.pid)], {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
      });
      this.child = child;
      let out = '';
      let err = '';
      let ready = false;
      // Said once: a helper that could not mount the overlay says why on every later launch too.
      const failed = (why: string) => {
        if (ready || this.gone) return;
        this.gone = `Review mode (codeact.sandbox.reviewWrites) cannot stage the code's writes here: ${why}. It needs overlayfs in a user namespace (Linux 5.11 or later, unprivileged user namespaces on). Turn review mode off to run code.`;
        reject(new Error(this.gone));
      };
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (d: string) => {
        out = (out + d).slice(0, 4096);
        if (!ready && out.startsWith('ready\n')) {
          ready = true;
          this.log?.(`review mode: the workspace's writes are staged in ${this.folder} (overlay ready in ${Math.round(performance.now() - t)} ms)`);
          resolve(child.pid!);
        } else if (out.includes('\n')) {
          failed(
            `the helper could not make ${out
              .trim()
              .replace(/^error /, '')
              .slice(0, 300)}`,
          );
        }
      });
      child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString('utf8')).slice(-2000)));
      child.stdin!.on('error', () => {});
      child.on('error', (e) => failed(`the helper did not start (${e.message})`));
      child.on('exit', (code, signal) => {
        failed(`the helper ended (${signal ?? `exit code ${code}`}${err.trim() ? `: ${err.trim().split('\n').pop()}` : ''})`);
        // Whatever runs inside keeps its mounts until it ends; nothing new may enter the namespaces of a dead helper.
        if (ready) {
          this.gone = STAGE_GONE;
          this.log?.(`review mode: the staging helper ended (${signal ?? `exit code ${code}`})`);
        }
      });
    });
  }

  /** The command prefix that runs a program inside the helper's namespaces (bwrap follows it). */
  enter(pid: number): string[] {
    return [NSENTER.find(existsSync) ?? 'nsenter', '-t', String(pid), '-U', '-m', '--preserve-credentials', '--'];
  }

  /** The code's view of the workspace, as the host reaches it. */
  merged(pid: number): string {
    return path.join(`/proc/${pid}/root`, this.workspace);
  }

  /** Ends the helper. Staged writes not kept stay in the stage folder (logged); an empty one is removed. */
  dispose(): void {
    this.gone ??= STAGE_GONE;
    try {
      this.child?.stdin?.end();
      this.child?.kill('SIGKILL');
    } catch {
      // Already gone.
    }
    let left = 0;
    try {
      left = readdirSync(this.upper).length;
    } catch {
      // Never made.
    }
    if (left) this.log?.(`review mode: writes that were not kept are left in ${this.upper}`);
    else rmSync(this.folder, { recursive: true, force: true });
  }
}
