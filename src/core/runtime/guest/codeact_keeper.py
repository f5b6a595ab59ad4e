"""CodeAct guest keeper: what the process the host started becomes after its session's first rewind.

The host (and bubblewrap, and a zygote guest's PID namespace) watch that process: when it ends, the
sandbox ends. After a rewind another process serves the session (a woken checkpoint, see
codeact_checkpoint.py), so the first one execs this small program, which keeps its pid and:
- forwards SIGINT (Stop) to whichever process serves the session now (told through the pipe on argv[1]);
- reaps whatever is re-parented here (it is a child subreaper, or PID 1 of the namespace);
- when the serving process ends, kills what is left (paused checkpoints, orphans) and ends the same way.

Run as `python3 -S -E -B codeact_keeper.py <pipe fd> <pid>`; never runs user code.
"""
import os
import signal
import sys


def _children():
    out = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children", "rb") as f:
                out += [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        pass
    return out


def _end(status):
    for _ in range(1000):
        kids = _children()
        if not kids:
            break
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            break
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if os.getpid() != 1:
            try:
                signal.signal(sig, signal.SIG_DFL)
                os.kill(os.getpid(), sig)
            except (OSError, ValueError):
                pass
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def main():
    pipe = int(sys.argv[1])
    active = [int(sys.argv[2])]

    def forward(sig, _frame):
        try:
            os.kill(active[0], sig)
        except OSError:
            pass

    # SIGINT came here blocked (codeact_checkpoint): one sent meanwhile is forwarded now.
    signal.signal(signal.SIGINT, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        import ctypes
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass
    os.set_blocking(pipe, False)
    buf = b""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        try:
            while True:
                chunk = os.read(pipe, 4096)
                if not chunk:
                    break
                buf += chunk
        except BlockingIOError:
            pass
        lines = buf.split(b"\n")
        buf = lines.pop()[-64:]
        for line in lines[-1:]:
            if line.strip().isdigit():
                active[0] = int(line)
        if pid == active[0]:
            _end(status)


if __name__ == "__main__":
    main()
