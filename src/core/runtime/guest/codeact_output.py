"""CodeAct guest: stdout and stderr as the user's code sees them.

stdout is block-buffered and flushed by a thread, before tool calls, before child processes start and
at the end of a run; stderr is written through after stdout; nothing is written past a run's cap. After
each run the end token follows the output on both streams (see codeact_guest.py).
"""
import os
import sys

from codeact_values import own_builtins

own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

class _CappedRaw:
    """fd 1 or 2 under the output buffer: past the run's cap (plus a little, so the host sees the
    overflow and marks the truncation) nothing more is written, only counted."""

    def __init__(self, fd, cap):
        self.fd = fd
        self.cap = cap + 1024
        self.count = 0

    def write(self, b):
        n = len(b)
        room = self.cap - self.count
        self.count += n
        if room <= 0:
            return n
        view = memoryview(b)
        if n > room:
            view = view[:room]
        while view:
            try:
                view = view[os.write(self.fd, view):]
            except InterruptedError:
                continue
            except OSError:
                break
        return n


OUTPUT = None


class _Output:
    """stdout and stderr as the code sees them. stdout is block-buffered (64 KiB) and flushed at least
    every 10 ms by a thread, before each tool call and at the end of a run, so output is live without a
    write per line; stderr is written through, after flushing stdout, so the two interleave as printed."""

    def __init__(self, cap):
        import io
        import threading
        self.raw = [_CappedRaw(1, cap), _CappedRaw(2, cap)]
        self.stdout = io.TextIOWrapper(io.BufferedWriter(_RawAdapter(self.raw[0]), 65536), encoding="utf-8", errors="backslashreplace", line_buffering=False)
        self.stderr = _Stderr(io.TextIOWrapper(io.BufferedWriter(_RawAdapter(self.raw[1]), 8192), encoding="utf-8", errors="backslashreplace", write_through=True), self.stdout)
        sys.stdout = self.stdout
        sys.stderr = self.stderr
        # Held by the flusher while it flushes, and by a background job's fork (codeact_jobs).
        self.gate = threading.Lock()
        self._start_flusher()

    def _start_flusher(self):
        import threading
        threading.Thread(target=self._flush_loop, name="codeact-output", daemon=True).start()

    def _flush_loop(self):
        import time
        while True:
            time.sleep(0.01)
            try:
                with self.gate:
                    self.stdout.flush()
            except Exception:  # a closed or replaced stream: nothing to flush
                pass

    def after_fork(self):
        """In a background job's fork: no cap here (the session keeps the job's output, head and tail),
        a gate of its own, and a flusher thread again (threads do not survive a fork)."""
        import threading
        for r in self.raw:
            r.count = 0
            r.cap = 1 << 62
        self.gate = threading.Lock()
        self._start_flusher()

    def restart_flusher(self):
        """In a checkpoint that now serves the session (codeact_checkpoint): the flusher did not survive the fork."""
        import threading
        self.gate = threading.Lock()
        self._start_flusher()

    def new_run(self):
        for r in self.raw:
            r.count = 0

    def flush(self):
        for s in (self.stdout, self.stderr):
            try:
                s.flush()
            except Exception:
                pass


def _raw_adapter():
    import io

    class RawAdapter(io.RawIOBase):
        def __init__(self, capped):
            self.capped = capped

        def writable(self):
            return True

        def fileno(self):
            return self.capped.fd

        def write(self, b):
            return self.capped.write(b)

    return RawAdapter


def _RawAdapter(capped):
    global _RAW_ADAPTER
    if _RAW_ADAPTER is None:
        _RAW_ADAPTER = _raw_adapter()
    return _RAW_ADAPTER(capped)


_RAW_ADAPTER = None


class _Stderr:
    """stderr that flushes stdout first (a TextIOWrapper cannot be subclassed from C cheaply)."""

    def __init__(self, stream, stdout):
        self._stream = stream
        self._stdout = stdout

    def write(self, text):
        try:
            self._stdout.flush()
        except Exception:
            pass
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


_CHILD_EVENTS = frozenset(("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"))


def _flush_before_children(event, _args):
    if event in _CHILD_EVENTS:
        flush_output()


def flush_output():
    if OUTPUT is not None:
        OUTPUT.flush()


def configure_output(cap):
    global OUTPUT
    OUTPUT = _Output(cap)
    # A child process writes straight to fd 1 and 2: flush what the code printed before it starts, so the
    # order on screen is the order of the code (subprocess, os.system, os.exec*, os.spawn*, os.fork).
    sys.addaudithook(_flush_before_children)



def _write_both(data):
    """Writes bytes straight to fd 1 and fd 2 (past the output cap); which of the two took them."""
    wrote = [False, False]
    for i in (0, 1):
        try:
            n = 0
            while n < len(data):
                n += os.write(1 + i, data[n:])
            wrote[i] = True
        except OSError:
            pass
    return wrote


def write_end(token):
    """Flushes the run's output, then writes the end token to stdout and stderr."""
    import codeact_lib
    codeact_lib.flush_std()
    flush_output()
    if not token:
        return [False, False]
    return _write_both(("\x00codeact-end:" + token + "\x00").encode("ascii"))


def write_display_marker(token, seq):
    """Flushes the output so far, then marks on stdout and stderr where display `seq` of the run goes, so
    the host puts it between the text before and after it (see codeact_guest.py)."""
    import codeact_lib
    codeact_lib.flush_std()
    flush_output()
    if not token:
        return [False, False]
    return _write_both(("\x00codeact-display:%s:%d\x00" % (token, seq)).encode("ascii"))
