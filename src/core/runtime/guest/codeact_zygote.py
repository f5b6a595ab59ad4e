"""CodeAct warm zygote: imports the preload modules once, inside the sandbox, then forks a clean guest
for each new session or run, so neither pays Python's start-up nor the imports again.

The zygote never runs user code. It speaks to the host on fd 3 (frames as in codeact_guest.py):

  host -> zygote  {"t":"fork","token":str,"socket":path,"ns":bool,"workdir":str,"tmp_size":int,"seccomp":base64|null,
                   "keep":[path],"env":{...}}          (keep: mounts under /tmp to carry over the guest's own /tmp)
                  {"t":"signal","pid":int,"sig":int}      (only to a child of ours: SIGINT interrupts a run)
                  {"t":"kill","pid":int}                  (a child and everything it started)
  zygote -> host  {"t":"ready","pid":int,"failed":[{module,error}],"threads":int}
                  {"t":"forked","token":str,"pid":int,"ns":bool} | {"t":"fork_failed","token":str,"error":str}
                  (with namespaces the guest is PID 1 of its own)
                  {"t":"exited","pid":int,"status":int}

A forked guest connects back to the host's socket three times (protocol, stdout, stderr), each
connection opening with {"token":…, "stream":…}; from then on it is an ordinary guest.

Fork safety: the zygote refuses to fork while it runs a Python thread other than its own; each child
re-seeds `random` (Python does it at fork) and numpy's global generator, closes every descriptor it
inherited, and is used once. Where the zygote may (CAP_SYS_ADMIN inside the sandbox's user
namespace), each guest also gets its own PID namespace (it is PID 1 there: when it dies, everything
it started dies with it), its own mount namespace with a private /proc, /tmp, /dev/shm and working
directory (each a size-capped tmpfs), and then drops every capability, sets no_new_privs, installs
the strict seccomp filter the host sent (the zygote's own filter lets unshare and mount through; the
strict one refuses ptrace and process_vm_readv/writev) and makes itself non-dumpable before any user
code runs. A guest that cannot do all of that exits instead of running code (in the sandbox: the host
then starts code cold, each guest in a sandbox of its own), so guests never share a /proc.
"""
import os
import sys

from codeact_proc import load_libc

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
PR_SET_DUMPABLE = 4


def main(chan, init, guest):
    import json
    import signal
    import socket  # noqa: F401 - loaded here, once, for every child
    failed = []
    for name in list(init.get("preload") or [])[:64]:
        if not isinstance(name, str) or not name:
            continue
        try:
            __import__(name)
        except BaseException as exc:  # a module that fails to import is reported, not fatal
            failed.append({"module": name, "error": f"{type(exc).__name__}: {exc}"[:500]})
    # Everything imported so far moves to the permanent generation: a child's garbage collections then
    # never touch (and so never copy) the pages the preloaded modules share with the zygote.
    import gc
    gc.collect()
    gc.freeze()
    threads = 1
    if "threading" in sys.modules:
        threads = sys.modules["threading"].active_count()
    try:
        load_libc().prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of dead guests come here
        load_libc().prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the host
        load_libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no guest may ptrace the zygote (it speaks for them all)
    except Exception:
        pass
    chan.send({"t": "ready", "pid": os.getpid(), "failed": failed, "threads": threads})

    rfd, wfd = os.pipe()
    os.set_blocking(rfd, False)
    os.set_blocking(wfd, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wfd)
    children = set()
    import select
    while True:
        _reap(chan, children)
        try:
            ready, _, _ = select.select([chan.fd, rfd], [], [], 5.0)
        except InterruptedError:
            continue
        if rfd in ready:
            try:
                while os.read(rfd, 512):
                    pass
            except (BlockingIOError, InterruptedError):
                pass
        if chan.fd not in ready:
            continue
        try:
            chunk = os.read(chan.fd, 65536)
        except (BlockingIOError, InterruptedError):
            continue
        if not chunk:
            break
        chan.buf += chunk
        for _ in range(1000):
            line = chan.pop()
            if line is None:
                break
            frame = json.loads(line)
            kind = frame.get("t")
            if kind == "fork":
                _fork(chan, frame, children, guest, (rfd, wfd))
            elif kind == "signal":
                pid = frame.get("pid")
                if pid in children:
                    try:
                        os.kill(pid, int(frame.get("sig") or signal.SIGINT))
                    except OSError:
                        pass
            elif kind == "kill":
                pid = frame.get("pid")
                if pid in children:
                    _kill_tree(pid)
    for pid in list(children):
        _kill_tree(pid)
    return 0


def _reap(chan, children):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return
        if pid in children:
            children.discard(pid)
            chan.send({"t": "exited", "pid": pid, "status": os.waitstatus_to_exitcode(status)})
            # Whatever that guest left behind (re-parented here after it died) goes too.
            _kill_orphans(children)


def _kill_orphans(children):
    import signal
    me = os.getpid()
    for pid in _children_of(me):
        if pid not in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _children_of(parent):
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            if int(stat[stat.rfind(b")") + 2:].split()[1]) == parent:
                out.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _kill_tree(root):
    """Freezes the tree under root (again and again, to catch forks in flight), then kills it."""
    import signal
    seen = {root}
    try:
        os.kill(root, signal.SIGSTOP)
    except OSError:
        pass
    for _ in range(50):
        fresh = []
        stack = [root]
        while stack:
            for c in _children_of(stack.pop()):
                if c not in seen:
                    seen.add(c)
                    fresh.append(c)
                stack.append(c)
        if not fresh:
            break
        for pid in fresh:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
    for pid in seen:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _fork(chan, req, children, guest, wake):
    import threading
    token = str(req.get("token") or "")
    if threading.active_count() > 1:
        chan.send({"t": "fork_failed", "token": token, "error": f"the zygote runs {threading.active_count()} threads; forking would copy them half-way"})
        return
    guest.lib.flush_std()
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(r)
        os.close(w)
        chan.send({"t": "fork_failed", "token": token, "error": f"fork failed: {exc}"})
        return
    if pid == 0:
        code = 70
        try:
            os.close(r)
            _stage1(req, w, guest, wake)
        except BaseException as exc:
            try:
                os.write(2, f"codeact: the guest could not start: {type(exc).__name__}: {exc}\n".encode())
            except OSError:
                pass
        os._exit(code)
    os.close(w)
    data = b""
    try:
        while True:
            chunk = os.read(r, 64)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(r)
    # Lines: "PID ns|plain" from the first stage and, from the guest, "error: …" if its isolation failed, in
    # either order (two processes write them). The guest holds the pipe until its mounts, credentials and
    # filter are in place, so the reason comes here, and not on the shared stderr, which the host may read
    # only after the guest's exit.
    lines = data.decode("utf-8", "replace").splitlines()
    error = next((l[6:].strip() for l in lines if l.startswith("error:")), None)
    started = next((l.split() for l in lines if len(l.split()) == 2 and l.split()[0].isdigit()), None)
    parts = started or []
    if error is not None:
        chan.send({"t": "fork_failed", "token": token, "error": error[:300]})
    elif len(parts) == 2 and parts[0].isdigit():
        guest_pid = int(parts[0])
        children.add(guest_pid)
        chan.send({"t": "forked", "token": token, "pid": guest_pid, "ns": parts[1] == "ns"})
    else:
        chan.send({"t": "fork_failed", "token": token, "error": "the guest did not start"})
    if not (len(parts) == 2 and parts[0] == str(pid)):
        # The first stage forked the guest into a PID namespace of its own and exited: reap it.
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _stage1(req, w, guest, wake):
    """In the first child: a PID and mount namespace of its own for the guest, where allowed."""
    for fd in wake:
        try:
            os.close(fd)
        except OSError:
            pass
    import signal
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    ns = False
    if req.get("ns"):
        import ctypes
        if load_libc().unshare(CLONE_NEWPID | CLONE_NEWNS) != 0:
            # Fail closed: in the sandbox's shared PID namespace, guests could reach each other.
            err = ctypes.get_errno()
            raise OSError(err, f"a PID and mount namespace of its own was refused ({os.strerror(err)})")
        ns = True
    if ns:
        pid = os.fork()
        if pid > 0:
            os.write(w, f"{pid} ns\n".encode())
            os._exit(0)
        _stage2(req, w, guest, True)
    else:
        os.write(w, f"{os.getpid()} plain\n".encode())
        _stage2(req, w, guest, False)


def _stage2(req, w, guest, ns):
    """In the guest: its own mounts, no privileges, its three connections to the host."""
    try:
        _isolate(req, ns)
    except BaseException as exc:
        try:
            # One line, in one write (atomic on a pipe), so it cannot mix with the first stage's line,
            # which may come before or after it.
            line = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            os.write(w, f"error: {line}\n".encode("utf-8", "replace"))
        except OSError:
            pass
        raise
    os.close(w)
    workdir = req.get("workdir") or "/tmp"
    # With a namespace of its own, the guest's parent is the first stage, which exits at once (a death
    # signal would fire then): it dies with the sandbox's PID namespace instead. (The first stage cannot
    # be skipped: setns back to the zygote's own PID namespace is refused inside the sandbox.)
    os.environ.clear()
    for k, v in (req.get("env") or {}).items():
        os.environ[str(k)] = str(v)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    os.chdir(workdir)
    _reseed()
    sock_path = req["socket"]
    token = str(req.get("token") or "")
    import json
    import socket
    conns = []
    for stream in ("proto", "stdout", "stderr"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock_path)
        s.sendall((json.dumps({"token": token, "stream": stream}) + "\n").encode())
        conns.append(s)
    os.dup2(conns[0].fileno(), 3)
    os.dup2(conns[1].fileno(), 1)
    os.dup2(conns[2].fileno(), 2)
    for s in conns:
        s.close()
    fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    guest.proc.close_inherited_fds({3})
    os.set_inheritable(3, False)
    guest._MAIN_PID = os.getpid()
    guest.json = json
    signal_default()
    code = 0
    try:
        code = guest.serve(guest.Channel(3))
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code or 0)


def _isolate(req, ns):
    """The guest's own mounts, no privileges, its seccomp filter, non-dumpable: before any connection."""
    libc = load_libc()
    import ctypes
    workdir = req.get("workdir") or "/tmp"
    if ns:
        _mount(libc, b"none", b"/", None, MS_REC | MS_PRIVATE, None)
        # A /proc that shows only this guest's processes. Fail closed: through the sandbox's /proc a guest
        # would see the others' /proc/PID/root and /proc/PID/mem. Read-only, as the sandbox's: /proc/sys
        # checks only the uid, and a guest of root is the host's root.
        _mount(libc, b"proc", b"/proc", b"proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        if os.readlink("/proc/self") != "1":
            raise OSError(1, "the private /proc does not show the guest's own PID namespace")
        size = int(req.get("tmp_size") or (256 << 20))
        # Mounts the host asked to keep (a workspace under /tmp) are carried over the private tmpfs.
        keep = [k.rstrip("/") for k in (req.get("keep") or []) if isinstance(k, str) and k.startswith("/")]
        for target, mode in (("/tmp", "1777"), ("/dev/shm", "1777"), (workdir, "0700")):
            if target in keep:
                continue  # the workspace is this very folder: it stays as the sandbox shows it
            inner = [(k, _clone_mount(libc, k)) for k in keep if k.startswith(target + "/")]
            _mount(libc, b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode={mode}".encode())
            for path, fd in inner:
                os.makedirs(path, exist_ok=True)
                _move_mount(libc, fd, path)
    else:
        os.makedirs(workdir, mode=0o700, exist_ok=True)
    _drop_privileges(libc, ctypes)
    if req.get("seccomp"):
        import base64
        _install_seccomp(libc, ctypes, base64.b64decode(req["seccomp"]))
    os.setsid()
    if not ns:
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: its orphans stay in its tree
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG: dies with the zygote, its parent
    # Last, after every change of credentials (which resets it): no other process of this user may
    # ptrace this guest or open its /proc/PID/mem, environ or root (root needs CAP_SYS_PTRACE for that).
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def signal_default():
    import signal
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE):
        try:
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGPIPE else signal.SIG_IGN)
        except (OSError, ValueError):
            pass


def _drop_privileges(libc, ctypes):
    """No capability and no way to gain one before user code runs."""
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)
    data = (Data * 2)()
    libc.capset(ctypes.byref(header), ctypes.byref(data))
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS


def _mount(libc, source, target, fstype, flags, data):
    import ctypes
    if libc.mount(source, target, fstype, flags, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target.decode()}: {os.strerror(err)}")


SYS_OPEN_TREE = 428  # the same number on x86_64 and aarch64
SYS_MOVE_MOUNT = 429
OPEN_TREE_CLONE = 1
AT_RECURSIVE = 0x8000
AT_FDCWD = -100
MOVE_MOUNT_F_EMPTY_PATH = 4


def _clone_mount(libc, path):
    """A detached copy of the mount tree at path (read-only parts stay read-only)."""
    import ctypes
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(SYS_OPEN_TREE), ctypes.c_long(AT_FDCWD), ctypes.c_char_p(path.encode()),
                      ctypes.c_ulong(OPEN_TREE_CLONE | AT_RECURSIVE | os.O_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"open_tree {path}: {os.strerror(err)}")
    return fd


def _move_mount(libc, fd, path):
    import ctypes
    r = libc.syscall(ctypes.c_long(SYS_MOVE_MOUNT), ctypes.c_long(fd), ctypes.c_char_p(b""), ctypes.c_long(AT_FDCWD),
                     ctypes.c_char_p(path.encode()), ctypes.c_ulong(MOVE_MOUNT_F_EMPTY_PATH))
    os.close(fd)
    if r != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"move_mount {path}: {os.strerror(err)}")


def _install_seccomp(libc, ctypes, program):
    """Stacks the strict filter on this process (and everything it starts); no_new_privs is set already."""
    if not program or len(program) % 8:
        raise OSError(22, "the seccomp program from the host is malformed")
    buf = ctypes.create_string_buffer(program, len(program))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p).value)
    ul = ctypes.c_ulong
    if libc.prctl(38, ul(1), ul(0), ul(0), ul(0)) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(22, ul(2), ctypes.byref(fprog), ul(0), ul(0)) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        err = ctypes.get_errno()
        raise OSError(err, f"the seccomp filter could not be installed: {os.strerror(err)}")


def _reseed():
    import random
    random.seed()
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        try:
            np_random.seed()
        except Exception:
            pass
