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
import codeact_display as display  # noqa: E402
import codeact_files as files  # noqa: E402
import codeact_output as output  # noqa: E402
import codeact_proc as proc  # noqa: E402

for _f in (__file__, output.__file__, proc.__file__, files.__file__):
    lib.own_file(_f)
    lib.own_file(os.path.abspath(_f))
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


_SCAN = None


def _decode(line):
    """One frame (a line of JSON from the host). The scanner alone is about three times as fast as
    json.loads on bytes; a line with anything after its value goes through json.loads, which says why."""
    global _SCAN
    if _SCAN is None:
        _SCAN = json.JSONDecoder().scan_once
    text = line.decode("utf-8", "surrogatepass")
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        end = -1
    if end != len(text):
        return json.loads(text)
    return value


class Channel:
    """Frames on the protocol fd: blocking reads between runs, event-loop reads during a run."""

    def __init__(self, fd):
        import _thread
        self.fd = fd
        self.buf = bytearray()
        self.scanned = 0
        # Displays may come from other threads than the run's: one frame at a time on the channel.
        self.lock = _thread.allocate_lock()

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
                return _decode(line)
            try:
                chunk = os.read(self.fd, 65536)
            except InterruptedError:
                continue
            if not chunk:
                return None
            self.buf += chunk

    def write(self, data):
        with self.lock:
            self._write(data)

    def _write(self, data):
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


# How long a lone call_tool may wait for its answer without yielding to the event loop (only when
# nothing else is ready to run and no timer is due sooner).
_QUICK_WAIT_MS = 2


def _loop_idle(loop):
    """True when no other callback is ready and no timer falls due within the quick wait. Reads the
    event loop's internals where they exist (CPython's BaseEventLoop); any other loop counts as busy."""
    ready = getattr(loop, "_ready", None)
    scheduled = getattr(loop, "_scheduled", None)
    if ready is None or scheduled is None or ready:
        return False
    return not scheduled or scheduled[0].when() - loop.time() > _QUICK_WAIT_MS / 1000


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
        self.poller = None

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

    def _wait_briefly(self):
        poller = self.poller
        if poller is None:
            import select
            poller = self.poller = select.poll()
            poller.register(self.chan.fd, select.POLLIN)
        try:
            if poller.poll(_QUICK_WAIT_MS):
                self._on_readable()
        except (OSError, ValueError):
            pass

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
            frame = _decode(line)
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
        output.flush_output()
        if self.run_id != run_id:
            raise RuntimeError("call_tool: the run this call belongs to has ended")
        self.next_id += 1
        call_id = self.next_id
        fut = loop.create_future()
        self.pending[call_id] = fut
        self.chan.write(('{"t":"tool_call","run":%d,"id":%d,"name":%s,"args":%s}\n' % (run_id, call_id, lib.compact_json(name), encoded)).encode("utf-8", "surrogatepass"))
        if len(self.pending) == 1 and _loop_idle(loop):
            # Nothing else could run meanwhile: wait for the answer right here, briefly, instead of a trip
            # through the event loop (a quick tool answers within microseconds; a slow one is awaited).
            self._wait_briefly()
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
        self.root = os.getcwd()
        self.run_id = None
        self.end_token = None
        self.seq = 0
        self.namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        bridge = self.bridge

        async def call_tool(name, _arguments=None, /, **kwargs):
            """Calls a managed tool on the host: `result = await call_tool("name", arg=value)`.

            The host checks the allowlist, the argument and result schemas and the approval policy;
            a refusal or a tool failure raises RuntimeError with the host's message."""
            return await bridge.call(name, _arguments, kwargs)

        self.namespace["call_tool"] = call_tool
        self.namespace["display"] = display.display
        self.hidden = {"call_tool", "display"}
        display.configure(self._send_display, _note, _print_text, frame_limit=self.max_frame - 4096)

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
                if not self.last and not proc.SUBREAPER_SET:
                    # A session: Stop kills what a stopped run started, orphans included.
                    proc.set_subreaper(proc.SUBREAPER)
                self.chan.send_result(self.run(frame))
                if self.last:
                    return
            elif kind == "vars":
                summary = lib.variables(self.namespace, self.hidden)
                self.chan.send({"t": "vars", **summary})

    def run(self, frame):
        run_id = int(frame.get("run") or 0)
        if output.OUTPUT is not None:
            output.OUTPUT.new_run()
        self.cells += 1
        filename = f"{lib.CELL_PREFIX}{self.cells}>"
        self.bridge.enabled = frame.get("tools", True) is not False
        self.run_id, self.end_token, self.seq = run_id, frame.get("end"), 0
        display.begin_run(frame.get("display"))
        file_caps = files.caps(frame.get("files"))
        before = files.snapshot(self.root)
        result = None
        shown = None
        try:
            compiled, error = lib.compile_checked(frame.get("code") or "", filename)
            if error is not None:
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
                    shown = payload
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
        self._end_displays(shown)
        if (self.last and proc.SUBREAPER) or self.interrupt.requested:
            # A one-shot run ends with everything it started; so does a run that was stopped (Stop, the
            # timeout), whose session keeps its variables but not the processes the code started.
            proc.kill_descendants()
            self.interrupt.requested = False
        result["files"] = self._send_files(run_id, before, file_caps)
        self.run_id = None
        result["t"] = "complete"
        result["run"] = run_id
        result["end"] = output.write_end(frame.get("end"))
        return result

    def _end_displays(self, value):
        """The last expression (as an execute_result), the figures left open, the note on the caps;
        Stop still works while a slow figure renders."""
        def finish():
            try:
                display.show_result(value)
            finally:
                display.end_run()
        try:
            lib.run_sync(finish, self.interrupt)
        except BaseException as exc:  # noqa: BLE001
            _note(f"[codeact: showing the outputs stopped ({type(exc).__name__})]\n")
            display.STATE.active = False

    def _send_display(self, data, metadata, data_json, meta_json, extra):
        """A display, in order with the output: the run's marker on stdout and stderr, then its frame.
        A forked child never sends one (its text goes to stdout instead)."""
        if os.getpid() != _MAIN_PID or self.run_id is None:
            return False
        import signal
        # SIGINT waits until the marker and the frame are both out (never a marker without its frame).
        masked = _block_sigint(signal)
        try:
            with self.chan.lock:
                self.seq += 1
                marks = output.write_display_marker(self.end_token, self.seq)
                text = '{"t":"display","run":%d,"seq":%d,"marks":[%s,%s],"data":%s,"metadata":%s' % (
                    self.run_id, self.seq, "true" if marks[0] else "false", "true" if marks[1] else "false", data_json, meta_json)
                for key in ("result", "display_id", "update", "summary"):
                    if key in extra:
                        text += ',"%s":%s' % (key, lib.compact_json(extra[key]))
                self.chan._write((text + "}\n").encode("utf-8", "surrogatepass"))
        finally:
            if masked:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        return True

    def _send_files(self, run_id, before, caps):
        """A "file" frame for each file the run made or changed in the working directory (up to the caps);
        returns how many were sent."""
        import binascii
        try:
            paths = files.changed(before, files.snapshot(self.root))
        except Exception:  # noqa: BLE001
            return 0
        room = (self.max_frame - 8192) * 3 // 4
        sent = 0
        total = 0
        for rel in paths[:caps["max_count"]]:
            if len(rel) > 4096:
                continue
            limit = min(caps["max_bytes"], room)
            got = files.read_file(self.root, rel, limit)
            if got is None:
                continue
            size, data, why = got
            note = None
            if why == "too large":
                note = f"too large to copy out: {display.size_text(size)}; the limit is {display.size_text(limit)}"
            elif why == "changing":
                note = "not copied out: it was still being written"
            elif total + size > caps["max_total"]:
                data = None
                note = f"not copied out: the files of this execution passed {display.size_text(caps['max_total'])} in all"
            else:
                total += size
            frame = {"t": "file", "run": run_id, "path": rel, "size": size,
                     "data": binascii.b2a_base64(data, newline=False).decode("ascii") if data is not None else None}
            if note:
                frame["note"] = note
            self.chan.send(frame)
            sent += 1
        more = len(paths) - caps["max_count"]
        if more > 0:
            _note(f"[codeact: {more:,} more changed file{'s were' if more != 1 else ' was'} not listed; the cap is {caps['max_count']:,} per execution]\n")
        return sent

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


def _block_sigint(signal):
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
        return True
    except (AttributeError, OSError, ValueError):
        return False


def _note(text):
    """A note of ours on the run's stderr (not the code's sys.stderr, which it may have replaced)."""
    lib.flush_std()
    stream = output.OUTPUT.stderr if output.OUTPUT is not None else sys.__stderr__
    try:
        stream.write(text)
        stream.flush()
    except Exception:  # noqa: BLE001
        pass


def _print_text(text):
    """A display that cannot be sent (a forked child's): its text on stdout."""
    stream = output.OUTPUT.stdout if output.OUTPUT is not None else sys.__stdout__
    try:
        stream.write(text + "\n")
        stream.flush()
    except Exception:  # noqa: BLE001
        pass


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


def serve(chan, first=None):
    """Runs a guest on an open channel: init, then runs until the host is done with it."""
    global json
    if json is None:
        import json as _json
        json = _json
    init = first if first is not None else chan.read_blocking()
    if init is None:
        return 0
    # matplotlib's backend and IPython.display are set up when they load (the zygote's preloads too).
    display.install_hooks()
    if init.get("t") == "zygote":
        import codeact_zygote
        return codeact_zygote.main(chan, init, sys.modules[__name__])
    if init.get("subreaper"):
        # No PID namespace: the code's orphans (after setsid() or a double fork) must stay in this tree,
        # where they are killed at the end of a one-shot run.
        proc.set_subreaper(True)
    proc.apply_limits(init.get("limits"))
    output.configure_output(int(init.get("max_output") or (1 << 20)))
    guest = Guest(chan, init)
    chan.send({"t": "ready", "pid": os.getpid()})
    guest.serve()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    if proc.SUBREAPER:
        proc.kill_descendants()
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
