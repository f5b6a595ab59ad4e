"""CodeAct local guest: runs user code for the host and talks to it over a private channel (fd 3).

The host starts this file as a process of its own (a cold start), or a warm zygote started from this
same file forks it (see `zygote`). Either way the guest then serves one of two ways:

- one-shot: one execution (its run frame says "last"), then the process ends, and every process the
  code started ends with it;
- session: executions one after another in one namespace, so variables, imports, functions and open
  files live on from one to the next, until the host closes the session.

A guest is started ahead of need: it applies its limits when the init frame comes and says it is
ready, then waits for its first run.

Protocol: newline-delimited JSON frames on fd 3 (never stdout). The user's stdin is /dev/null; stdout
and stderr are plain text the host captures live. Frames (field "t" is the type):

  host -> guest   {"t":"init","subreaper":bool,"limits":{...},"max_frame":int,"max_value":int,"max_concurrency":int}
                  {"t":"run","run":int,"code":str,"tools":bool,"end":str,"last":bool}
                  {"t":"tool_result","id":int,"ok":true,"value":any} | {"t":"tool_result","id":int,"ok":false,"error":str}
                  {"t":"vars"}                       (between runs: the variables view)
  guest -> host   {"t":"ready","pid":int}            (after init; the pid in the guest's own namespace)
                  {"t":"tool_call","run":int,"id":int,"name":str,"args":object}
                  {"t":"complete","run":int,"ok":true,"value":json-text|null,"end":[bool,bool]}
                  {"t":"complete","run":int,"ok":false,"error":{type,message,traceback,line},"end":[bool,bool]}
                  {"t":"vars","variables":[...],"total":int}

After each run the guest writes the run's `end` token to stdout and to stderr (flushed first), so the
host knows that all the run's output has arrived before it reports the result; `end` in "complete"
says which of the two it could write.

The compile step, execution, tracebacks, values and call_tool checks are in codeact_lib.py, shared
with the Jupyter runtime. Start-up cost matters for a cold run: only cheap modules load up front.
"""
import os
import sys

PROTO_FD = 3
_MAIN_PID = os.getpid()
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
import codeact_lib as lib  # noqa: E402

lib.own_file(__file__)
lib.own_file(os.path.abspath(__file__))
json = None  # loaded after the first frame (it is needed then anyway)


def _get_running_loop():
    import asyncio
    return asyncio.get_running_loop()


def _close_inherited_fds(keep):
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


class Channel:
    """Frames on the protocol fd: blocking reads between runs, event-loop reads during a run."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = bytearray()
        self.scanned = 0

    def pop(self):
        nl = self.buf.find(b"\n", self.scanned)
        if nl < 0:
            self.scanned = len(self.buf)
            return None
        line = bytes(self.buf[:nl])
        del self.buf[:nl + 1]
        self.scanned = 0
        return line

    def read_blocking(self):
        """The next frame, or None at end of file."""
        while True:
            line = self.pop()
            if line is not None:
                return json.loads(line)
            try:
                chunk = os.read(self.fd, 65536)
            except InterruptedError:
                continue
            if not chunk:
                return None
            self.buf += chunk

    def write(self, data):
        try:
            n = os.write(self.fd, data)
        except (BlockingIOError, InterruptedError):
            n = 0
        if n == len(data):
            return
        view = memoryview(data)[n:]
        while view:
            try:
                n = os.write(self.fd, view)
                view = view[n:]
            except BlockingIOError:
                import select
                select.select([], [self.fd], [], 1.0)
            except InterruptedError:
                continue

    def send(self, frame):
        self.write((lib.compact_json(frame) + "\n").encode("utf-8", "surrogatepass"))

    def send_result(self, result):
        """A "complete" frame; an ok value is already JSON text and goes in as it is."""
        value = result.pop("value", None) if result.get("ok") else None
        text = lib.compact_json(result)
        if value is not None:
            text = text[:-1] + ',"value":' + value + "}"
        self.write((text + "\n").encode("utf-8", "surrogatepass"))


class ToolBridge:
    """call_tool: each call gets an id and a future; results come back in any order, so calls under
    asyncio.gather really run concurrently on the host (bounded by max_concurrency)."""

    def __init__(self, chan, max_concurrency, max_frame):
        self.chan = chan
        self.max_concurrency = max_concurrency
        self.max_frame = max_frame
        self.next_id = 0
        self.pending = {}
        self.loop = None
        self.sem = None
        self.run_id = None
        self.enabled = True

    def attach(self, loop):
        if self.loop is loop:
            return
        self.detach()
        import asyncio
        os.set_blocking(self.chan.fd, False)
        loop.add_reader(self.chan.fd, self._on_readable)
        self.loop = loop
        self.sem = asyncio.Semaphore(self.max_concurrency)

    def detach(self):
        loop, self.loop = self.loop, None
        if loop is not None and not loop.is_closed():
            try:
                loop.remove_reader(self.chan.fd)
            except Exception:  # noqa: BLE001
                pass
        os.set_blocking(self.chan.fd, True)

    def end_run(self):
        self.run_id = None
        for fut in self.pending.values():
            if not fut.done():
                fut.cancel()
        self.pending.clear()
        self.detach()

    def _on_readable(self):
        try:
            chunk = os.read(self.chan.fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        if not chunk:
            self.detach()
            for fut in self.pending.values():
                if not fut.done():
                    fut.set_exception(RuntimeError("call_tool: the host closed the connection"))
            self.pending.clear()
            return
        self.chan.buf += chunk
        for _ in range(10_000):
            line = self.chan.pop()
            if line is None:
                break
            frame = json.loads(line)
            if frame.get("t") != "tool_result":
                continue
            fut = self.pending.pop(frame.get("id"), None)
            if fut is None or fut.done():
                continue
            if frame.get("ok"):
                fut.set_result(frame.get("value"))
            else:
                fut.set_exception(RuntimeError(frame.get("error") or "call_tool failed"))

    async def call(self, name, arguments, kwargs):
        if os.getpid() != _MAIN_PID:
            raise RuntimeError("call_tool is not available in a forked child process; call it from the main process")
        name, _args, encoded = lib.prepare_call(name, arguments, kwargs, self.max_frame, self.enabled)
        run_id = self.run_id
        if run_id is None:
            raise RuntimeError("call_tool only works while CodeAct is running code (not from a task left over from an earlier run)")
        loop = _get_running_loop()
        if self.loop is not loop:
            self.attach(loop)
        if len(self.pending) < self.max_concurrency and not self.sem.locked():
            # The common case: a free slot, no waiting (the semaphore's bookkeeping costs more than the call).
            return await self._send(loop, run_id, name, encoded)
        async with self.sem:
            return await self._send(loop, run_id, name, encoded)

    async def _send(self, loop, run_id, name, encoded):
        # What the code printed before the call comes before the call.
        flush_output()
        if self.run_id != run_id:
            raise RuntimeError("call_tool: the run this call belongs to has ended")
        self.next_id += 1
        call_id = self.next_id
        fut = loop.create_future()
        self.pending[call_id] = fut
        self.chan.write(('{"t":"tool_call","run":%d,"id":%d,"name":%s,"args":%s}\n' % (run_id, call_id, lib.compact_json(name), encoded)).encode("utf-8", "surrogatepass"))
        try:
            return await fut
        finally:
            self.pending.pop(call_id, None)


class Guest:
    def __init__(self, chan, init):
        self.chan = chan
        self.last = False
        self.max_frame = int(init.get("max_frame") or (16 << 20))
        self.max_value = int(init.get("max_value") or (self.max_frame - 1024))
        self.bridge = ToolBridge(chan, int(init.get("max_concurrency") or 8), self.max_frame)
        self.interrupt = lib.Interrupt()
        self.cells = 0
        self.loop = None
        self.namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        bridge = self.bridge

        async def call_tool(name, _arguments=None, /, **kwargs):
            """Calls a managed tool on the host: `result = await call_tool("name", arg=value)`.

            The host checks the allowlist, the argument and result schemas and the approval policy;
            a refusal or a tool failure raises RuntimeError with the host's message."""
            return await bridge.call(name, _arguments, kwargs)

        self.namespace["call_tool"] = call_tool
        self.hidden = {"call_tool"}

    def serve(self):
        import signal
        signal.signal(signal.SIGINT, self.interrupt.handler)
        while True:
            frame = self.chan.read_blocking()
            if frame is None:
                return
            kind = frame.get("t")
            if kind == "run":
                self.last = frame.get("last") is True
                if not self.last and not _SUBREAPER_SET:
                    # A session: Stop kills what a stopped run started, orphans included.
                    _set_subreaper(_SUBREAPER)
                self.chan.send_result(self.run(frame))
                if self.last:
                    return
            elif kind == "vars":
                summary = lib.variables(self.namespace, self.hidden)
                self.chan.send({"t": "vars", **summary})

    def run(self, frame):
        run_id = int(frame.get("run") or 0)
        if _OUTPUT is not None:
            _OUTPUT.new_run()
        self.cells += 1
        filename = f"{lib.CELL_PREFIX}{self.cells}>"
        self.bridge.enabled = frame.get("tools", True) is not False
        result = None
        display = None
        try:
            try:
                compiled = lib.compile_cell(frame.get("code") or "", filename)
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                error = lib.format_error(exc, filename, compiling=True)
                if not isinstance(exc, SyntaxError):
                    error["type"] = "SyntaxError"
                result = {"ok": False, "error": error}
            else:
                self.bridge.run_id = run_id
                if self.bridge.enabled and lib.may_use_discovery(compiled.source):
                    self._install_discovery(compiled.source)
                fn = lib.exec_cell(compiled, self.namespace)
                with lib.no_input():
                    if compiled.is_async:
                        value = lib.run_in_loop(fn, self._loop(), self.interrupt)
                    else:
                        value = lib.run_sync(fn, self.interrupt)
                kind, payload = lib.encode_value(value, compiled.implicit, self.max_value)
                if kind == "ok":
                    result = {"ok": True, "value": payload}
                elif kind == "display":
                    display = payload
                    result = {"ok": True, "value": None}
                else:
                    result = {"ok": False, "error": payload}
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt and CancelledError are reported too
            if os.getpid() != _MAIN_PID:
                _forked_child_exit(exc)
            if isinstance(exc, SystemExit) and lib.exit_result(exc):
                result = {"ok": True, "value": None}
            else:
                result = {"ok": False, "error": lib.format_error(exc, filename)}
        finally:
            self.bridge.end_run()
        if os.getpid() != _MAIN_PID:
            # A child the code forked returned through here: it never speaks for the run.
            _forked_child_exit(None)
        if display is not None:
            try:
                print(lib.display_text(display))
            except Exception:  # noqa: BLE001
                pass
        if (self.last and _SUBREAPER) or self.interrupt.requested:
            # A one-shot run ends with everything it started; so does a run that was stopped (Stop, the
            # timeout), whose session keeps its variables but not the processes the code started.
            _kill_descendants()
            self.interrupt.requested = False
        result["t"] = "complete"
        result["run"] = run_id
        result["end"] = _write_end(frame.get("end"))
        return result

    def _install_discovery(self, source):
        """search_tools, describe_tool and the `tools` module, from the host's catalogue (fetched per
        run that names them, so a changed tool set is seen at once)."""
        import codeact_discovery
        if not codeact_discovery.wants_discovery(source):
            return
        call_tool = self.namespace.get("call_tool")
        if call_tool is None:
            return
        lib.run_in_loop(lambda: codeact_discovery.fetch_and_install(self.namespace, call_tool), self._loop(), self.interrupt)
        self.hidden.update(lib.DISCOVERY_NAMES)

    def _loop(self):
        if self.loop is None or self.loop.is_closed():
            import asyncio
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
        return self.loop


def _forked_child_exit(exc):
    try:
        if exc is not None and not isinstance(exc, SystemExit):
            import traceback
            traceback.print_exception(exc)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    code = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else (1 if exc is not None else 0)
    os._exit(code)


def _write_end(token):
    """Flushes the run's output, then writes the end token to stdout and stderr."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # noqa: BLE001 - a stream the code replaced or closed
            pass
    flush_output()
    wrote = [False, False]
    if not token:
        return wrote
    data = ("\x00codeact-end:" + token + "\x00").encode("ascii")
    for i in (0, 1):
        try:
            n = 0
            while n < len(data):
                n += os.write(1 + i, data[n:])
            wrote[i] = True
        except OSError:
            pass
    return wrote


_SUBREAPER = False


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


def _kill_descendants():
    """Every process the code started (orphans of setsid() or a double fork were re-parented here: this
    process is a child subreaper, or PID 1 of its namespace). Stop them all, then kill them."""
    import signal
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


def _libc():
    import ctypes
    return ctypes.CDLL(None, use_errno=True)


_SUBREAPER_SET = False


def _set_subreaper(kill_at_end):
    global _SUBREAPER, _SUBREAPER_SET
    _SUBREAPER_SET = True
    try:
        libc = _libc()
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        if kill_at_end:
            libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: die with the host
        _SUBREAPER = kill_at_end
    except Exception:  # noqa: BLE001
        pass


def _apply_limits(limits):
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


_OUTPUT = None


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
        t = threading.Thread(target=self._flush_loop, name="codeact-output", daemon=True)
        t.start()

    def _flush_loop(self):
        import time
        while True:
            time.sleep(0.01)
            try:
                self.stdout.flush()
            except Exception:  # noqa: BLE001 - a closed or replaced stream: nothing to flush
                pass

    def new_run(self):
        for r in self.raw:
            r.count = 0

    def flush(self):
        for s in (self.stdout, self.stderr):
            try:
                s.flush()
            except Exception:  # noqa: BLE001
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
        except Exception:  # noqa: BLE001
            pass
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


_CHILD_EVENTS = frozenset(("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"))


def _flush_before_children(event, _args):
    if event in _CHILD_EVENTS:
        flush_output()


def flush_output():
    if _OUTPUT is not None:
        _OUTPUT.flush()


def _configure_output(cap):
    global _OUTPUT
    _OUTPUT = _Output(cap)
    # A child process writes straight to fd 1 and 2: flush what the code printed before it starts, so the
    # order on screen is the order of the code (subprocess, os.system, os.exec*, os.spawn*, os.fork).
    sys.addaudithook(_flush_before_children)


def serve(chan, first=None):
    """Runs a guest on an open channel: init, then runs until the host is done with it."""
    global json
    if json is None:
        import json as _json
        json = _json
    init = first if first is not None else chan.read_blocking()
    if init is None:
        return 0
    if init.get("t") == "zygote":
        import codeact_zygote
        return codeact_zygote.main(chan, init, sys.modules[__name__])
    if init.get("subreaper"):
        # No PID namespace: the code's orphans (after setsid() or a double fork) must stay in this tree,
        # where they are killed at the end of a one-shot run.
        _set_subreaper(True)
    _apply_limits(init.get("limits"))
    _configure_output(int(init.get("max_output") or (1 << 20)))
    guest = Guest(chan, init)
    chan.send({"t": "ready", "pid": os.getpid()})
    guest.serve()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    if _SUBREAPER:
        _kill_descendants()
    return 0


def main():
    _close_inherited_fds({PROTO_FD})
    os.set_inheritable(PROTO_FD, False)
    return serve(Channel(PROTO_FD))


def run():
    """The entry point of a guest process (see the host's launch plan)."""
    code = 1
    try:
        code = main()
    finally:
        # Skip interpreter finalisation: the result is sent and the output flushed.
        os._exit(code)
