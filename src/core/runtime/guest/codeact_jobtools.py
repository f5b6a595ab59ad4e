"""CodeAct local guest: call_tool from a background job (docs/design/backgroundJobs.md).

A job is a fork of the session and cannot speak on the session's channel (fd 3). Each job gets a socket
pair when it starts: the job's end carries its calls, the session's end is read by the job's watch
thread (codeact_jobs), which forwards each call to the host as a "tool_call" frame carrying "job": n.
The host answers with a "tool_result" frame carrying the same "job"; the session's main thread reads
it (between runs, or while a run awaits a tool) and hands it to the job's writer thread, so the main
thread never blocks on a job that does not read. While a foreground run executes plain (not awaiting)
code, a job's answers wait in the channel until it awaits or ends.

On the job's socket (one JSON object a line):
  job -> session   {"t":"tool_call","id":int,"name":str,"args":object}
  session -> job   {"t":"tool_result","id":int,"ok":true,"value":any} | {...,"ok":false,"error":str}
Bounds: calls in flight per job (max_concurrency: more are refused here, unsent), a line's size
(max_frame: past it the job is killed, as only code that bypasses call_tool can write one).
"""
import os
import threading
import time

import codeact_lib as lib

lib.own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)


class JobProtocolError(Exception):
    """A job wrote what call_tool never writes: it is killed."""


class _End:
    """One end of a job's socket: its fd, the job, the bounds, and what was read that is not a line yet."""

    def __init__(self, fd, number, max_concurrency, max_frame):
        self.fd = fd
        self.number = number
        self.max_concurrency = max(1, max_concurrency)
        self.max_frame = max_frame
        self.buf = bytearray()

    def lines(self):
        """The whole lines read so far (at most 10,000 at a time)."""
        for _ in range(10_000):
            nl = self.buf.find(b"\n")
            if nl < 0:
                return
            line = bytes(self.buf[:nl])
            del self.buf[:nl + 1]
            yield line


def write_all(fd, data):
    """Writes all of `data` (blocking); raises OSError when the other end is gone."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except InterruptedError:
            continue


class Relay(_End):
    """The session's end of one job's socket: calls in (forwarded to the host), answers out."""

    def __init__(self, chan, number, fd, max_concurrency, max_frame):
        super().__init__(fd, number, max_concurrency, max_frame)
        self.chan = chan
        self.in_flight = set()
        self.out = []
        self.cond = threading.Condition()
        self.writer = None
        self.closed = False
        self.eof = False  # the job closed its end

    def on_readable(self):
        """Reads what the job wrote and forwards its calls; False once the job closed its end."""
        try:
            chunk = os.read(self.fd, 65536)
        except InterruptedError:
            return True
        except OSError:
            return False
        if not chunk:
            return False
        self.buf += chunk
        for line in self.lines():
            self._forward(line)
        if len(self.buf) > self.max_frame:
            raise JobProtocolError(f"a line of {len(self.buf):,} bytes on its tool channel (the limit is {self.max_frame:,})")
        return True

    def _forward(self, line):
        try:
            frame = lib.loads(line.decode("utf-8", "surrogatepass"))
        except Exception:
            raise JobProtocolError("a malformed frame on its tool channel") from None
        call_id = frame.get("id") if isinstance(frame, dict) else None
        if not isinstance(frame, dict) or frame.get("t") != "tool_call" or type(call_id) is not int or call_id in self.in_flight:
            raise JobProtocolError("a malformed tool call on its tool channel")
        if len(self.in_flight) >= self.max_concurrency:
            self._queue({"t": "tool_result", "id": call_id, "ok": False,
                         "error": f"too many tool calls in flight in background job {self.number}: at most {self.max_concurrency} at once"})
            return
        self.in_flight.add(call_id)
        self.chan.send({"t": "tool_call", "job": self.number, "id": call_id, "name": frame.get("name"), "args": frame.get("args", {})})

    def reply(self, frame):
        """The host's answer (from the session's main thread): queued for the writer, never blocking."""
        call_id = frame.get("id")
        if call_id not in self.in_flight:
            return
        self.in_flight.discard(call_id)
        frame.pop("job", None)
        self._queue(frame)

    def _queue(self, frame):
        data = (lib.compact_json(frame) + "\n").encode("utf-8", "surrogatepass")
        with self.cond:
            if self.closed:
                return
            self.out.append(data)
            if self.writer is None:
                self.writer = threading.Thread(target=self._write_loop, name=f"codeact-job-{self.number}-tools", daemon=True)
                self.writer.start()
            self.cond.notify()

    def _write_loop(self):
        try:
            while True:
                with self.cond:
                    while not self.out and not self.closed:
                        self.cond.wait()
                    if self.closed:
                        return
                    data = self.out.pop(0)
                try:
                    write_all(self.fd, data)
                except OSError:  # the job is gone
                    return
        finally:
            self._close_fd()

    def close(self):
        """The job ended: answers still queued are dropped. The fd is closed by whoever uses it last (a writer
        blocked on a job that stopped reading returns once the job's process is gone)."""
        with self.cond:
            self.closed = True
            self.out.clear()
            self.cond.notify()
            writer = self.writer
        if writer is None:
            self._close_fd()

    def _close_fd(self):
        with self.cond:
            fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


class JobCalls(_End):
    """call_tool in the job: each call gets an id and a future, answers come back in any order."""

    def __init__(self, fd, number, enabled, max_concurrency, max_frame):
        super().__init__(fd, number, max_concurrency, max_frame)
        self.enabled = enabled
        self.pending = {}
        self.next_id = 0
        self.loop = self.sem = None
        self.gone = None

    async def call(self, name, arguments, kwargs):
        import asyncio
        name, _args, encoded = lib.prepare_call(name, arguments, kwargs, self.max_frame, self.enabled)
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            if self.loop is not None and not self.loop.is_closed():
                self.loop.remove_reader(self.fd)
            loop.add_reader(self.fd, self._on_readable)
            self.loop, self.sem = loop, asyncio.Semaphore(self.max_concurrency)
        async with self.sem:
            if self.gone:
                raise RuntimeError(self.gone)
            self.next_id += 1
            call_id = self.next_id
            fut = loop.create_future()
            self.pending[call_id] = fut
            data = ('{"t":"tool_call","id":%d,"name":%s,"args":%s}\n' % (call_id, lib.compact_json(name), encoded)).encode("utf-8", "surrogatepass")
            try:
                write_all(self.fd, data)
                return await fut
            except OSError:
                raise RuntimeError(f"call_tool: background job {self.number} lost its channel to the session") from None
            finally:
                self.pending.pop(call_id, None)

    def _on_readable(self):
        try:
            chunk = os.read(self.fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.gone = f"call_tool: background job {self.number} lost its channel to the session (the session is ending)"
            self.loop.remove_reader(self.fd)
            for fut in self.pending.values():
                if not fut.done():
                    fut.set_exception(RuntimeError(self.gone))
            return
        self.buf += chunk
        for line in self.lines():
            frame = lib.loads(line.decode("utf-8", "surrogatepass"))
            fut = self.pending.pop(frame.get("id"), None) if isinstance(frame, dict) else None
            if fut is None or fut.done():
                continue
            if frame.get("ok"):
                fut.set_result(frame.get("value"))
            else:
                fut.set_exception(RuntimeError(frame.get("error") or "call_tool failed"))


def open_pair():
    """A job's socket pair: (the session's end, the job's end), as file descriptors."""
    import socket
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return a.detach(), b.detach()


def in_child(guest, number, fd, others):
    """In the forked job: call_tool goes over the job's own socket; the other jobs' sockets are closed."""
    for other in others:
        try:
            os.close(other)
        except OSError:
            pass
    bridge = guest.bridge
    bridge.call = JobCalls(fd, number, bridge.enabled, bridge.max_concurrency, bridge.max_frame).call


class Waker:
    """A pipe the jobs' watch threads write a byte to when a job ends, so wait_job's select wakes at once. Made on
    first use in the guest, never in the zygote: a pipe made there would be shared by every guest forked from it."""

    def __init__(self):
        self.r = self.w = None

    def ensure(self):
        if self.w is None:
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            self.r, self.w = r, w

    def wake(self):
        if self.w is None:  # no wait_job yet: it checks `done` before it waits
            return
        try:
            os.write(self.w, b"x")
        except OSError:  # full: a wake is pending anyway
            pass

    def drain(self):
        try:
            while os.read(self.r, 4096):
                pass
        except OSError:
            pass


def wait_routing(chan, jobs, done, timeout, waker):
    """wait_job on the session's main thread: waits up to `timeout` seconds for `done`, and meanwhile hands the
    host's answers to jobs' tool calls to their jobs (nothing else reads the channel while code runs, so a job
    waiting on a tool would never end). Any other frame stops the routing; it stays first in the channel."""
    import select
    deadline = time.monotonic() + max(0.0, timeout)
    if threading.current_thread() is not threading.main_thread() or chan is None:
        return done.wait(max(0.0, timeout))
    waker.ensure()
    while not done.is_set():
        if not _route_buffered(chan, jobs):
            return done.wait(max(0.0, deadline - time.monotonic()))
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            ready, _, _ = select.select([chan.fd, waker.r], [], [], left)
        except InterruptedError:
            continue
        except (OSError, ValueError):
            return done.wait(max(0.0, deadline - time.monotonic()))
        if waker.r in ready:
            waker.drain()
        if chan.fd not in ready:
            continue
        try:
            chunk = os.read(chan.fd, 65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            chunk = b""
        if not chunk:  # the host is gone
            return done.wait(max(0.0, deadline - time.monotonic()))
        chan.buf += chunk
    return True


def _route_buffered(chan, jobs):
    """Hands the jobs' answers the channel holds to their jobs; False at the first other frame (left first)."""
    while True:
        line = chan.pop()
        if line is None:
            return True
        frame = lib.loads(line.decode("utf-8", "surrogatepass"))
        if isinstance(frame, dict) and frame.get("t") == "tool_result" and "job" in frame:
            jobs.reply(frame)
            continue
        chan.buf[:0] = line + b"\n"
        chan.scanned = 0
        return False
