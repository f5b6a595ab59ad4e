/**
 * Starts the programs of `command` tools, stdio MCP servers and the package installer (pip, uv) through a
 * tiny launcher, so that nothing
 * of theirs outlives the host even when the host is killed (SIGKILL, a crash, an OOM kill), and a call's
 * timeout holds even when the host cannot act on it (frozen, or its event loop blocked).
 *
 * Node cannot call prctl, so the launcher is `python3 -I -S -c`: it asks the kernel for a signal when the
 * host dies (PR_SET_PDEATHSIG), checks the host is still its parent, becomes the subreaper of what the
 * program starts (so `setsid` and double forks stay in its tree), forks the program in its own process
 * group with the exact argv and environment it was given, and waits. When the host dies, or the deadline
 * passes (it waits with sigtimedwait, not a signal handler), it freezes and kills the whole tree, its group included. When the program exits, what it left
 * running is killed and the launcher exits with the program's status (or dies of the program's signal).
 *
 * The launcher is used only when the program resolves, as the host's spawn would, to an executable file,
 * and python3 is found: otherwise the program is spawned directly, so "command not found", "permission
 * denied" and the other spawn errors are Node's own, exactly as before.
 */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams, type SpawnOptionsWithoutStdio } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import * as path from 'node:path';
import type { Writable } from 'node:stream';

/**
 * The launcher. argv: host pid, deadline in seconds (0: none). On fd 3: the program's file, then its
 * argv, each ended by a NUL (so the launcher's own command line does not repeat the program's).
 *
 * It runs on every call, so it imports only built-in modules (posix, _signal, _ctypes: no `os`, `signal`
 * or `ctypes`, whose imports cost more than the interpreter's start), and it scans /proc for what the
 * program left only when it has children (its own `children` file says so). `npm run bench -- --only
 * launcher` measures it against the program started directly.
 */
const LAUNCHER = String.raw`import posix as os, sys, _signal as signal
host, limit = int(sys.argv[1]), float(sys.argv[2])
spec = b''
while True:
    chunk = os.read(3, 65536)
    if not chunk:
        break
    spec += chunk
os.close(3)
exe, *argv = spec.split(b'\0')[:-1]
try:
    import _ctypes
    class Int(_ctypes._SimpleCData):
        _type_ = 'i'
    class Fn(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = Int
    prctl = Fn(_ctypes.dlsym(_ctypes.dlopen(None), 'prctl'))
except Exception:
    import ctypes
    prctl = ctypes.CDLL(None, use_errno=True).prctl
me = os.getpid()
def tree():
    try:
        if not open('/proc/self/task/%d/children' % me, 'rb').read().strip():
            return []
    except OSError:
        pass
    kids = {}
    for e in os.listdir('/proc'):
        if e.isdigit():
            try:
                s = open('/proc/' + e + '/stat', 'rb').read()
                kids.setdefault(int(s[s.rindex(b')') + 2:].split()[1]), []).append(int(e))
            except Exception:
                pass
    out, stack = [], [me]
    while stack:
        for c in kids.get(stack.pop(), ()):
            out.append(c)
            stack.append(c)
    return out
def kill_tree():
    seen = set()
    for _ in range(20):
        fresh = [p for p in tree() if p not in seen]
        if not fresh:
            break
        for p in fresh:
            seen.add(p)
            try:
                os.kill(p, signal.SIGSTOP)
            except OSError:
                pass
    for p in seen:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
def end(*_):
    kill_tree()
    if os.getpgrp() == me:
        os.killpg(me, signal.SIGKILL)
    os._exit(137)
signal.signal(signal.SIGTERM, end)
prctl(36, 1, 0, 0, 0)
prctl(1, signal.SIGTERM, 0, 0, 0)
if os.getppid() != host:
    end()
env = {}
for kv in open('/proc/self/environ', 'rb').read().split(b'\0'):
    if b'=' in kv:
        k, v = kv.split(b'=', 1)
        env.setdefault(k, v)
pid = os.fork()
if pid == 0:
    try:
        for s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGALRM, signal.SIGINT):
            signal.signal(s, signal.SIG_DFL)
        prctl(1, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != me:
            os._exit(137)
        os.execve(exe, argv, env)
    except OSError as e:
        os.write(2, b'codeact: could not start ' + argv[0] + b': ' + (e.strerror or '').encode() + b'\n')
    os._exit(127)
# The wait takes its signals itself (blocked, then sigtimedwait): the deadline and the host's death never depend
# on a Python handler running at the right moment.
import time
deadline = time.monotonic() + limit
waited = (signal.SIGCHLD, signal.SIGTERM)
signal.pthread_sigmask(signal.SIG_BLOCK, waited)
while True:
    w, status = os.waitpid(-1, os.WNOHANG)
    if w == pid:
        break
    if w:
        continue
    if limit > 0:
        left = deadline - time.monotonic()
        if left <= 0:
            end()
        got = signal.sigtimedwait(waited, left)
    else:
        got = signal.sigwaitinfo(waited)
    if got is not None and got.si_signo == signal.SIGTERM:
        end()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
kill_tree()
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (sig,))
    except (OSError, ValueError):
        pass
    os.kill(me, sig)
    os._exit(128 + sig)
os._exit(os.WEXITSTATUS(status))
`;

/** How long after a call's own timeout the launcher ends it, when the host has not (the host's message is the clearer). */
const LAUNCHER_GRACE_S = 2;

let python: string | null | undefined;

/**
 * The python3 the launcher runs with (found once per host process), or null: the system's, else the one
 * on PATH, by its real executable rather than a shim (pyenv's adds variables to the environment the
 * program would inherit). A failed probe is not remembered (it may be a passing shortage of descriptors).
 */
function launcherPython(): string | null {
  if (python !== undefined) return python;
  if (process.platform !== 'linux') return (python = null);
  for (const p of ['/usr/bin/python3', '/bin/python3']) if (isExecutableFile(p)) return (python = p);
  const found = executableOnPath('python3', process.cwd(), process.env.PATH ?? '');
  if (!found) return (python = null);
  try {
    const real = execFileSync(found, ['-I', '-S', '-c', 'import sys; print(sys.executable)'], {
      encoding: 'utf8',
      timeout: 10_000,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    }).trim();
    if (real && isExecutableFile(real)) python = real;
  } catch {
    // No usable python3 now: this program is spawned directly.
  }
  return python ?? null;
}

function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The file `execvp` would run for `program` (resolved from `cwd` with `envPath`), when it is an executable file. */
function executableOnPath(program: string, cwd: string, envPath: string): string | undefined {
  if (!program || program.includes('\0')) return undefined;
  if (program.includes('/')) {
    const p = path.resolve(cwd, program);
    return isExecutableFile(p) ? p : undefined;
  }
  for (const dir of envPath.split(path.delimiter).slice(0, 256)) {
    const p = path.resolve(cwd, dir || '.', program);
    if (isExecutableFile(p)) return p;
  }
  return undefined;
}

/**
 * `spawn(program, args, options)` with pipes for stdio, in its own process group, through the launcher
 * when it can be used (see the module's comment). `timeoutMs`: the call's timeout, which the launcher
 * enforces itself shortly after the host should have (omit it for a server that runs until closed).
 */
export function spawnGuarded(
  program: string,
  args: string[],
  options: SpawnOptionsWithoutStdio & { cwd: string; env: Record<string, string> },
  timeoutMs?: number,
): ChildProcessWithoutNullStreams {
  const opts = { ...options, stdio: ['pipe', 'pipe', 'pipe'] as ['pipe', 'pipe', 'pipe'], detached: process.platform !== 'win32' };
  const py = launcherPython();
  const exe = py && !args.some((a) => a.includes('\0')) ? executableOnPath(program, options.cwd, options.env.PATH ?? '') : undefined;
  if (!py || !exe) return spawn(program, args, opts);
  const limit = timeoutMs ? timeoutMs / 1000 + LAUNCHER_GRACE_S : 0;
  const child = spawn(py, ['-I', '-S', '-c', LAUNCHER, String(process.pid), String(limit)], { ...opts, stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
  const spec = child.stdio?.[3] as Writable | null | undefined;
  if (spec) {
    spec.on('error', () => {});
    spec.end([exe, program, ...args].map((a) => a + '\0').join(''));
  }
  return child as ChildProcessWithoutNullStreams;
}
