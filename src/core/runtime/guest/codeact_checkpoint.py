"""CodeAct guest: checkpoints of a session's Python state (issue 35, rewind), as paused forks.

  host -> guest   {"t":"checkpoint","id":str,"measure"?:true}   between runs: keep the state as it is now (measure:
                                                     read every checkpoint's memory; else each is -1, not read)
                  {"t":"drop","id":str}              forget one (the paused fork exits)
                  {"t":"restore","id":str,"keep":str|null}   go back to one; keep: a checkpoint of the state now first (redo)
  guest -> host   {"t":"checkpointed","id":str,"ok":bool,"error"?:str,"ms":num,"held":[[id,uss],...]}
                  {"t":"restored","id":str,"ok":true,"pid":int}   (from the process that now serves the session)
                  {"t":"restored","id":str,"ok":false,"error":str}

A checkpoint is a copy-on-write fork of the session, paused in recvmsg() on a socket pair whose other end
only the live session holds: when the session ends, for whatever reason, every checkpoint reads end of file
and exits. A paused fork holds none of the host's channels (fd 3, 1 and 2 point at /dev/null), so the host
still sees the session's streams end with it.

Restore hands the live session's channels (fd 3, 1, 2) and the other checkpoints' sockets to the chosen
fork with SCM_RIGHTS; it wakes, puts them in place, remakes what a fork does not copy (the output
flusher thread, the event loop) and says "restored" with its pid. The old session then ends. The first
time, the old session is the process the host started (bubblewrap's child, or PID 1 of a zygote guest's
namespace), whose end would take the sandbox with it: it execs `codeact_keeper.py` instead, which
keeps the pid, forwards SIGINT to whichever process serves the session, reaps, and ends with it.

Refused, with the reason on the card: while a background job runs (a job is a process of its own, not in
the fork), and while threads the code started are alive (a fork copies only the calling thread; a lock one
of them held would stay taken in the copy).
"""
import json
import os
import socket
import sys
import time

_OWN_THREADS = ("codeact-output", "MainThread")


class Checkpoints:
    def __init__(self, guest):
        self.guest = guest
        self.held = {}  # id -> (socket, pid), oldest first
        self.keeper_w = None  # set once a keeper runs: the pipe that tells it which process serves the session

    def pids(self):
        return {pid for _s, pid in self.held.values()}

    def forget_in_child(self):
        """In a process forked from the session (a background job): the checkpoints' sockets are not its own."""
        for sock, _pid in self.held.values():
            sock.close()
        self.held = {}

    def refusal(self):
        if self.guest.jobs.running():
            return "a background job was running (a job is a process of its own, which a checkpoint cannot hold)"
        import threading
        others = [t.name for t in threading.enumerate() if t.is_alive() and t.name not in _OWN_THREADS and not t.name.startswith("codeact-")]
        if others:
            names = ", ".join(others[:3]) + (" …" if len(others) > 3 else "")
            return f"the code left {len(others)} thread(s) running ({names}); a copy of the process would hold only one of them"
        return None

    def handle(self, frame):
        kind = frame.get("t")
        cid = str(frame.get("id") or "")
        if kind == "checkpoint":
            self._take(cid, frame.get("measure") is True)
        elif kind == "drop":
            self._drop(cid)
        elif kind == "restore":
            self._restore(cid, frame.get("keep"))

    # -- taking one ------------------------------------------------------------------------------

    def _take(self, cid, measure):
        t0 = time.perf_counter()
        why = self.refusal() if cid and cid not in self.held else ("no id" if not cid else "the id is taken")
        if why is None:
            try:
                if self._fork(cid):
                    return  # woken: this copy serves the session now (it said "restored")
            except OSError as exc:
                why = f"the fork failed ({exc.strerror or exc})"
        ms = round((time.perf_counter() - t0) * 1000, 3)
        frame = {"t": "checkpointed", "id": cid, "ok": why is None, "ms": ms, "held": self._usage() if measure else [[c, -1] for c in self.held]}
        if why is not None:
            frame["error"] = why
        self.guest.chan.send(frame)

    def _fork(self, cid):
        """A paused copy of this process, kept as `cid`. True in the copy once it is woken."""
        import contextlib
        import codeact_output as output
        live, paused = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out = output.OUTPUT
        try:
            # The flusher thread and the jobs' watchers are held off: a fork must not copy a lock one of them holds.
            with (out.gate if out is not None else contextlib.nullcontext()), self.guest.chan.lock, self.guest.jobs.lock:
                output_flush()
                output.flush_output()
                pid = os.fork()
        except BaseException:
            live.close()
            paused.close()
            raise
        if pid == 0:
            live.close()
            self._pause(paused)  # returns only when woken
            return True
        paused.close()
        self.held[cid] = (live, pid)
        return False

    def _pause(self, sock):
        """In the fork: let go of everything the host watches, then wait to be woken or dropped."""
        import signal
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Stop meant for the session is not this copy's
        for other, _pid in self.held.values():
            other.close()
        self.held = {}
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        try:
            os.close(self.guest.chan.fd)
        except OSError:
            pass
        if self.keeper_w is not None:
            os.close(self.keeper_w)
            self.keeper_w = None
        while True:
            try:
                msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 64)  # 4 channels + at most 50 checkpoints + the redo point
            except InterruptedError:
                continue
            except BaseException:
                os._exit(0)
            if not msg:
                os._exit(0)  # dropped, or the session ended
            if msg == b"uss":
                try:
                    sock.sendall(str(_uss()).encode())
                except OSError:
                    os._exit(0)
                continue
            try:
                self._wake(sock, msg, fds)
            except BaseException:
                os._exit(1)  # never a half-woken copy on the session's channel: the live session goes on
            return

    def _usage(self):
        """Each checkpoint's unshared memory, asked of the paused fork itself (its /proc is its own to read). One
        that does not answer within 2 s is dropped."""
        out = []
        for cid, (s, _pid) in list(self.held.items()):
            try:
                s.sendall(b"uss")
                s.settimeout(2.0)
                n = int(s.recv(64))
                s.settimeout(None)
            except (OSError, ValueError):
                self._drop(cid)
                continue
            out.append([cid, n])
        return out

    def _drop(self, cid):
        held = self.held.pop(cid, None)
        if held is None:
            return
        held[0].close()
        # Killed, not waited for: a process the code forked may hold a copy of the socket, so the paused fork would
        # never read its end. A child of this process is reaped here; one re-parented to the keeper, there.
        _kill(held[1])

    # -- restoring -------------------------------------------------------------------------------

    def _restore(self, cid, keep):
        target = self.held.get(cid)
        if target is None:
            self.guest.chan.send({"t": "restored", "id": cid, "ok": False, "error": "that checkpoint is no longer kept"})
            return
        why = self.guest.jobs.running() and "a background job is running: stop it or wait for it, then rewind"
        if why:
            self.guest.chan.send({"t": "restored", "id": cid, "ok": False, "error": why})
            return
        kept = None
        if isinstance(keep, str) and keep and keep not in self.held and self.refusal() is None:
            try:
                if self._fork(keep):
                    return  # the redo point, woken later: it serves the session from here
                kept = keep
            except OSError:
                pass
        sock, target_pid = self.held.pop(cid)
        first = self.keeper_w is None
        keeper_r = keeper_w = None
        if first:
            keeper_r, keeper_w = os.pipe()
        ids = list(self.held)
        fds = [self.guest.chan.fd, 1, 2, keeper_w if first else self.keeper_w] + [self.held[i][0].fileno() for i in ids]
        pids = [self.held[i][1] for i in ids]
        chan = self.guest.chan
        msg = json.dumps({"id": cid, "kept": kept, "ids": ids, "pids": pids, "buf": bytes(chan.buf).decode("latin1")}).encode()
        output_flush()
        woken = 0
        # No other thread of this process writes on the channel from here: the woken fork owns it once it answers.
        self.guest.chan.lock.acquire()
        try:
            socket.send_fds(sock, [msg], fds)
            sock.settimeout(30.0)
            woken = int(sock.recv(64) or b"0")  # the woken fork's pid, once it has the channels
        except (OSError, ValueError):
            pass
        if not woken:
            self.guest.chan.lock.release()
            # It did not take over: it must never (two processes on one channel), and this process goes on serving.
            _kill(target_pid)
            sock.close()
            if first:
                os.close(keeper_r)
                os.close(keeper_w)
            if kept:
                self._drop(kept)
            self.guest.chan.send({"t": "restored", "id": cid, "ok": False, "error": "the checkpoint did not wake (it exited, or did not answer within 30 s)"})
            return
        if first:
            self.keeper_w = keeper_w
        # From here on the woken fork serves the session; this process goes.
        os.write(self.keeper_w, f"{woken}\n".encode())
        if first:
            _become_keeper(keeper_r, woken)
        os._exit(0)

    def _wake(self, sock, msg, fds):
        """In the fork being woken: the live session's channels become ours."""
        info = json.loads(msg.decode())
        chan_fd, out_fd, err_fd, keeper_w, *others = fds
        os.dup2(chan_fd, self.guest.chan.fd)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in (chan_fd, out_fd, err_fd):
            if fd not in (self.guest.chan.fd, 1, 2):
                os.close(fd)
        os.set_inheritable(self.guest.chan.fd, False)
        # Never passed on to a program the code runs (recvmsg gives inheritable descriptors).
        for fd in (keeper_w, *others):
            os.set_inheritable(fd, False)
        self.keeper_w = keeper_w
        self.held = {}
        for cid, fd, pid in zip(info.get("ids") or [], others, info.get("pids") or []):
            self.held[str(cid)] = (socket.socket(fileno=fd), int(pid))
        self.guest.chan.buf = bytearray(str(info.get("buf") or "").encode("latin1"))
        self.guest.chan.scanned = 0
        import signal
        signal.signal(signal.SIGINT, self.guest.interrupt.handler)
        self.guest.after_restore()
        sock.sendall(str(os.getpid()).encode())
        sock.close()
        frame = {"t": "restored", "id": str(info.get("id") or ""), "ok": True, "pid": os.getpid(), "held": self._usage()}
        if info.get("kept"):
            frame["kept"] = str(info["kept"])
        self.guest.chan.send(frame)


def _kill(pid):
    import signal
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def output_flush():
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass


def _uss():
    """This process's unshared memory (Private_Clean + Private_Dirty), in bytes."""
    total = 0
    try:
        with open("/proc/self/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith((b"Private_Clean:", b"Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return total


def _become_keeper(keeper_r, active):
    """The process the host started must outlive the session it served: it becomes a small keeper (./codeact_keeper.py)."""
    os.set_inheritable(keeper_r, True)
    # SIGINT (Stop) is held until the keeper can forward it: a blocked signal survives exec and waits (for PID 1 of a
    # namespace an unblocked one with no handler yet would be dropped; for any other process it would kill it).
    import signal
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    here = os.path.dirname(os.path.abspath(__file__))
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    try:
        os.execv(sys.executable, [sys.executable, "-S", "-E", "-B", os.path.join(here, "codeact_keeper.py"), str(keeper_r), str(active)])
    except OSError:
        # No exec: the same duty from here (more memory), holding nothing but the pipe.
        import codeact_proc
        codeact_proc.close_inherited_fds({keeper_r})
    import runpy
    sys.argv = ["codeact_keeper.py", str(keeper_r), str(active)]
    runpy.run_path(os.path.join(here, "codeact_keeper.py"), run_name="__main__")
    os._exit(0)
