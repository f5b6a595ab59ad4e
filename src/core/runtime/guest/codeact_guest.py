"""CodeAct local guest: runs user code for the host and talks to it over a private channel (fd 3).

The host starts this file as a process of its own (a cold start), or a warm zygote started from this
same file forks it (see `zygote`). Either way the guest then serves one of two ways:

- one-shot: one execution (its run frame says "last"), then the process ends, and every process the
  code started ends with it;
- session: executions one after another in one namespace, so variables, imports, functions and open
  files live on from one to the next, until the host closes the session.
A guest is started ahead of need: it applies its limits at init, says it is ready, waits for a run.

Protocol: newline-delimited JSON frames on fd 3 (never stdout). The user's stdin is /dev/null; stdout
and stderr are plain text the host captures live. Frames (field "t" is the type):

  host -> guest   {"t":"init","subreaper":bool,"limits":{...},"max_frame":int,"max_value":int,"max_concurrency":int,
                   "max_output":int,"jobs":{"max":int,"max_seconds":num}}
                  {"t":"run","run":int,"code":str,"tools":bool,"end":str,"last":bool,"background"?:true,"job_floor"?:int,
                   "display":{"max_bytes":int,"max_total":int,"max_count":int,"hidpi":bool},
                   "files":{"max_bytes":int,"max_total":int,"max_count":int}}
                  {"t":"tool_result","id":int,"ok":true,"value":any,"job"?:int} | {...,"ok":false,"error":str,"limit"?:true}
                  {"t":"vars"} (between runs)  {"t":"keep","n":int,"stdout":str,"stderr":str,"max_total":int} (a run's, with the next run)
                  {"t":"checkpoint"|"drop"|"restore",...} (between runs: codeact_checkpoint.py)
  guest -> host   {"t":"ready","pid":int}            (after init; the pid in the guest's own namespace)
                  {"t":"tool_call","run":int,"id":int,"name":str,"args":object}  (a background job's: "job":int, no run)
                  {"t":"display","run":int,"seq":int,"marks":[bool,bool],"data":{mime:value},"metadata":{...},
                   "result"?:true,"display_id"?:str,"update"?:true,"summary"?:str}
                  {"t":"file","run":int,"path":str,"size":int,"data":base64|null,"note"?:str}
                  {"t":"complete","run":int,"ok":true,"value":json|null,"end":[bool,bool],"files":int}
                  {"t":"complete","run":int,"ok":false,"error":{type,message,traceback,line},"end":[bool,bool],"files":int}
                  {"t":"vars","variables":[...],"total":int}
                  {"t":"job","job":int,"state":str,...}  (a background job started or ended: codeact_jobs.py)

After each run the guest writes the run's `end` token to stdout and to stderr (flushed first), so the
host knows that all the run's output has arrived before it reports the result; `end` in "complete"
says which of the two it could write.

Rich outputs (codeact_display, codeact_frames):
- "display" caps in the run frame default to 2 MiB per display (the JSON size of its data), 12 MiB and
  200 displays per execution, hidpi false; "files" to 10 MiB per file, 20 MiB and 50 files.
- A display goes out in order with the output: the user's stdout and stderr are flushed, then
  `\x00codeact-display:<end>:<seq>\x00` is written straight to fd 1 and fd 2 (past the output cap, as the
  end token), then the "display" frame; `marks` says which of the two markers were written; seq is 1,
  2, … per run. The host cuts each stream at the marker and puts the display there. `data` is a Jupyter
  MIME bundle (binary types base64, JSON types any JSON value, text types strings); `result`: the last
  expression of the code (a notebook's execute_result); `display_id`/`update`: a display made with
  display_id, and a later update of it; `summary`: what the model reads for a table. A display the
  caps refuse sends no frame and no marker (a note on stderr says what was left out; one note at the
  end of the run counts what the count and total caps refused). A forked child never sends frames (its
  displays print their text); another thread's are sent as they come.
- Files out: the working directory the guest started in is listed before each run (regular files,
  no link followed, 4 folders deep, at most 2,000 entries visited, hidden entries and __pycache__
  skipped); after the code and the figures left open, each new or changed file (up to max_count, the
  top folder first) is a "file" frame, sent before "complete", whose `data` is null with a `note` when
  it is over max_bytes or the run's max_total; "complete" says how many file frames were sent.

Compiling, running, tracebacks, values, call_tool checks: codeact_lib.py, shared with Jupyter.
Start-up cost matters for a cold run: only cheap modules load up front.
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
import codeact_frames as frames  # noqa: E402
import codeact_output as output  # noqa: E402
import codeact_outputs as kept  # noqa: E402
import codeact_proc as proc  # noqa: E402

lib.own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

for _f in (__file__, output.__file__, proc.__file__, frames.__file__, frames.files.__file__):
    lib.own_file(_f)
    lib.own_file(os.path.abspath(_f))


def _decode(line):
    """One frame (a line of JSON from the host). The scanner alone is about three times as fast as
    json.loads on bytes; a line with anything after its value goes through json.loads, which says why."""
    text = line.decode("utf-8", "surrogatepass")
    try:
        value, end = lib.scan_json(text, 0)
    except StopIteration:
        end = -1
    if end != len(text):
        return lib.loads(text)
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
        self.loop = self.sem = self.run_id = self.poller = None
        self.enabled = True
        self.refusal = None  # "limit": the run's cap on tool calls was reached; later calls raise it unsent

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
            except Exception:
                pass
        os.set_blocking(self.chan.fd, True)

    def end_run(self):
        self.run_id = self.refusal = None
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
            if frame.get("t") != "tool_result" or "job" in frame:
                self.job_reply(frame)  # a background job's answer (codeact_jobtools)
                continue
            fut = self.pending.pop(frame.get("id"), None)
            if fut is None or fut.done():
                continue
            if frame.get("ok"):
                fut.set_result(frame.get("value"))
            else:
                self.refusal = frame.get("error") if frame.get("limit") is True else self.refusal
                fut.set_exception(RuntimeError(frame.get("error") or "call_tool failed"))

    async def call(self, name, arguments, kwargs):
        if os.getpid() != _MAIN_PID:
            raise RuntimeError("call_tool is not available in a process the code forked; call it from the session or a background job")
        name, _args, encoded = lib.prepare_call(name, arguments, kwargs, self.max_frame, self.enabled)
        run_id = self.run_id
        if run_id is None:
            raise RuntimeError("call_tool only works while CodeAct is running code (not from a task left over from an earlier run)")
        import asyncio
        loop = asyncio.get_running_loop()
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
        if self.run_id != run_id or self.refusal is not None:
            raise RuntimeError(self.refusal or "call_tool: the run this call belongs to has ended")
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
        self.rich = frames.RichOutputs(chan, os.getcwd(), self.max_frame, lambda: os.getpid() == _MAIN_PID)
        self.namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        bridge = self.bridge

        async def call_tool(name, _arguments=None, /, **kwargs):
            """Calls a managed tool on the host: `result = await call_tool("name", arg=value)`.

            The host checks the allowlist, the argument and result schemas and the approval policy;
            a refusal or a tool failure raises RuntimeError with the host's message."""
            return await bridge.call(name, _arguments, kwargs)

        import codeact_install
        install_packages = codeact_install.make(call_tool, lambda: [v["name"] for v in lib.variables(self.namespace, self.hidden)["variables"]])
        self.namespace.update(call_tool=call_tool, display=display.display, install_packages=install_packages)
        self.hidden = {"call_tool", "display", "install_packages"}
        kept.install(self.namespace, self.hidden, lib.own_file)
        import codeact_jobs
        self.jobs = codeact_jobs.Jobs(chan, init.get("jobs"), int(init.get("max_output") or (1 << 20)), self.max_value)
        self.jobs.install(self.namespace, self.hidden, lib.own_file)
        self.bridge.job_reply = self.jobs.reply
        import codeact_checkpoint
        self.checkpoints = codeact_checkpoint.Checkpoints(self)

    def after_restore(self):
        """This process was a checkpoint and now serves the session (codeact_checkpoint): what a fork does not copy."""
        global _MAIN_PID
        _MAIN_PID = self.jobs.session_pid = os.getpid()
        self.loop = self.bridge.loop = self.bridge.poller = None
        if output.OUTPUT is not None:
            output.OUTPUT.restart_flusher()
        if proc.SUBREAPER_SET:
            proc.set_subreaper(proc.SUBREAPER)

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
                self.jobs.skip_to(frame.get("job_floor"))
                if not self.last and not proc.SUBREAPER_SET:
                    # A session: Stop kills what a stopped run started, orphans included.
                    proc.set_subreaper(proc.SUBREAPER)
                self.chan.send_result(self.run(frame))
                if self.last:
                    return
            elif kind == "vars":
                self.chan.send({"t": "vars", **lib.variables(self.namespace, self.hidden)})
            elif kind == "keep":
                kept.keep_frame(frame)
            elif kind == "tool_result":
                self.jobs.reply(frame)
            elif kind in ("checkpoint", "drop", "restore"):
                self.checkpoints.handle(frame)

    def run(self, frame):
        run_id = int(frame.get("run") or 0)
        if output.OUTPUT is not None:
            output.OUTPUT.new_run()
        self.cells += 1
        filename = f"{lib.CELL_PREFIX}{self.cells}>"
        self.bridge.enabled = frame.get("tools", True) is not False
        self.rich.begin(run_id, frame)
        result = None
        shown = None
        try:
            compiled, error = lib.compile_checked(frame.get("code") or "", filename)
            refused = self.jobs.refusal(not self.last) if frame.get("background") is True and error is None else None
            if error is not None or refused:
                result = {"ok": False, "error": error or {"type": "JobRefused", "message": refused, "traceback": "", "line": None}}
            elif frame.get("background") is True:
                result = self.jobs.start(self, compiled, filename, run_id, frame.get("code") or "")
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
        except BaseException as exc:  # SystemExit, KeyboardInterrupt and CancelledError are reported too
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
        self.rich.finish(shown, self.interrupt)
        if (self.last and proc.SUBREAPER) or self.interrupt.requested:
            # A one-shot run ends with everything it started; so does a run that was stopped (Stop, the
            # timeout), whose session keeps its variables but not the processes the code started.
            proc.kill_descendants(spare=self.jobs.pids() | self.checkpoints.pids())  # background jobs and checkpoints stay
            self.interrupt.requested = False
        result["files"] = self.rich.send_files()
        result["t"] = "complete"
        result["run"] = run_id
        result["end"] = output.write_end(frame.get("end"))
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
    except BaseException:
        pass
    os._exit(exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else (1 if exc is not None else 0))


def serve(chan, first=None):
    """Runs a guest on an open channel: init, then runs until the host is done with it."""
    init = first if first is not None else chan.read_blocking()
    if init is None:
        return 0
    # matplotlib's backend and IPython.display are set up when they load (the zygote's preloads too).
    display.install_hooks()
    if init.get("t") == "zygote":
        import codeact_zygote
        return codeact_zygote.main(chan, init, sys.modules[__name__])
    if init.get("subreaper"):
        # No PID namespace: orphans stay in this tree (see proc), and no other guest may read its memory.
        proc.set_subreaper(True)
        proc.set_non_dumpable()
    proc.apply_limits(init.get("limits"))
    output.configure_output(int(init.get("max_output") or (1 << 20)))
    guest = Guest(chan, init)
    chan.send({"t": "ready", "pid": os.getpid()})
    guest.serve()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    if proc.SUBREAPER:
        proc.kill_descendants()
    return 0


def main():
    proc.close_inherited_fds({PROTO_FD})
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
