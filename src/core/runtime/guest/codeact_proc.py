"""CodeAct guest: the processes the user's code starts, and the guest's own limits.

The guest is a child subreaper (or PID 1 of its namespace), so orphans of setsid() or a double fork
come back to it; kill_descendants() finds and kills them all through /proc. Shared by the guest and
the zygote.
"""
import os

from codeact_values import own_builtins

own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

# Set when this guest is a child subreaper that kills its orphans at the end of a one-shot run.
SUBREAPER = False
SUBREAPER_SET = False


def _own_pid_in(proc_pid):
    """A process's PID in this process's own namespace, from /proc's (which may be an outer namespace's,
    when the kernel refused a private /proc): the last NSpid field."""
    try:
        with open(f"/proc/{proc_pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return proc_pid


def _has_children():
    """Whether this process has a child: orphans of the code are re-parented here, so none means no
    descendants at all. None when the kernel cannot say (no /proc/PID/task/TID/children)."""
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children", "rb") as f:
                if f.read().strip():
                    return True
        return False
    except OSError:
        return None


def kill_descendants(spare=(), only=None):
    """Every process the code started (orphans of setsid() or a double fork were re-parented here: this
    process is a child subreaper, or PID 1 of its namespace). Stop them all, then kill them.
    `spare`: pids of children whose trees are left alone (background jobs, when a foreground run is
    stopped); `only`: the pid of the one child whose tree alone is killed (a job that is stopped)."""
    import signal
    if _has_children() is False:
        # The common case, known without reading every process on the machine (hundreds on a desktop).
        return
    try:
        with open("/proc/self/stat", "rb") as f:
            me = int(f.read().split()[0])  # this process as /proc numbers it
    except (OSError, ValueError, IndexError):
        me = os.getpid()
    translate = me != os.getpid()
    seen = {}
    for _ in range(50):
        children = {}
        try:
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            return
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    stat = f.read()
                ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(pid)
        tree = []
        stack = [me]
        if spare or only is not None:
            stack = []
            for c in children.get(me, ()):
                own = _own_pid_in(c) if translate else c
                if own not in spare and (only is None or own == only):
                    tree.append(c)
                    stack.append(c)
        while stack:
            for c in children.get(stack.pop(), ()):
                tree.append(c)
                stack.append(c)
        new = [p for p in tree if p not in seen]
        if not new:
            break
        for pid in new:
            own = _own_pid_in(pid) if translate else pid
            seen[pid] = own
            try:
                os.kill(own, signal.SIGSTOP)
            except OSError:
                pass
    for own in seen.values():
        try:
            os.kill(own, signal.SIGKILL)
        except OSError:
            pass
    for own in seen.values():
        try:
            os.waitpid(own, 0)
        except OSError:
            pass


def close_inherited_fds(keep):
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        os.closerange(max(keep) + 1, 1024)
        return
    for name in names:
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def load_libc():
    import ctypes
    return ctypes.CDLL(None, use_errno=True)




def set_non_dumpable():
    """PR_SET_DUMPABLE 0: no ptrace and no /proc/PID/mem, environ or root for other processes of this
    user (root keeps them through CAP_SYS_PTRACE). Reset by execve, so a program the code runs is
    dumpable again. Only without a sandbox: a cold guest in the sandbox is alone in its PID namespace,
    and a forked one did this in the zygote (codeact_zygote.py)."""
    try:
        load_libc().prctl(4, 0, 0, 0, 0)
    except Exception:
        pass


def set_subreaper(kill_at_end):
    global SUBREAPER, SUBREAPER_SET
    SUBREAPER_SET = True
    try:
        libc = load_libc()
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        if kill_at_end:
            libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: die with the host
        SUBREAPER = kill_at_end
    except Exception:
        pass


def apply_limits(limits):
    if not limits:
        return
    import resource
    table = {
        "as": resource.RLIMIT_AS,
        "cpu": resource.RLIMIT_CPU,
        "fsize": resource.RLIMIT_FSIZE,
        "nofile": resource.RLIMIT_NOFILE,
        "nproc": resource.RLIMIT_NPROC,
        "core": resource.RLIMIT_CORE,
    }
    for key, value in limits.items():
        which = table.get(key)
        if which is None:
            continue
        try:
            if key == "cpu":
                resource.setrlimit(which, (int(value), int(value) + 1))
            else:
                resource.setrlimit(which, (int(value), int(value)))
        except (ValueError, OSError):
            pass
