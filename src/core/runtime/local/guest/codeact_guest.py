"""CodeAct local guest: runs one piece of user code and talks to the host over a private pipe.

Protocol: newline-delimited JSON frames on fd 3 (never stdout). The user's stdin is /dev/null and
stdout/stderr are plain text streams the host captures live. Frames (field "t" is the type):

  host -> guest   {"t":"run","code":str,"tools":bool,"max_concurrency":int,"max_frame":int,"subreaper":bool}
                  {"t":"tool_result","id":int,"ok":true,"value":any} | {"t":"tool_result","id":int,"ok":false,"error":str}
  guest -> host   {"t":"tool_call","id":int,"name":str,"args":object}
                  {"t":"complete","ok":true,"value":any} | {"t":"complete","ok":false,"error":{type,message,traceback,line}}

Start-up cost matters (every run is a fresh process), so this file imports only what it needs:
asyncio is loaded only when the code awaits something, traceback only on failure.
"""
import os
import sys

PROTO_FD = 3
FILENAME = "<code>"


def _close_inherited_fds():
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        os.closerange(PROTO_FD + 1, 1024)
        return
    for name in names:
        fd = int(name)
        if fd > PROTO_FD:
            try:
                os.close(fd)
            except OSError:
                pass


def _read_frame_blocking():
    chunks = []
    while True:
        chunk = os.read(PROTO_FD, 65536)
        if not chunk:
            return None
        nl = chunk.find(b"\n")
        if nl >= 0:
            chunks.append(chunk[:nl])
            rest = chunk[nl + 1:]
            return b"".join(chunks), rest
        chunks.append(chunk)


def _send(frame):
    data = (json.dumps(frame, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8", "surrogatepass")
    view = memoryview(data)
    while view:
        n = os.write(PROTO_FD, view)
        view = view[n:]


def _is_async(tree):
    """True when the top-level code (outside nested functions) awaits or uses async for/with."""
    import ast
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)):
            return True
        if isinstance(node, (ast.comprehension,)) and node.is_async:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            # Decorators and default values still run at top level.
            if isinstance(node, ast.ClassDef):
                stack.extend(node.decorator_list)
                stack.extend(node.bases)
            elif isinstance(node, ast.Lambda):
                stack.extend(node.args.defaults)
            else:
                stack.extend(node.decorator_list)
                stack.extend(node.args.defaults)
                stack.extend(d for d in node.args.kw_defaults if d is not None)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _compile(source):
    """Wraps the code in a function named <module>, keeping every line number the user's own.

    Top-level `return` and `await` become legal; when the last statement is an expression and the code
    has no top-level return, its value is returned (as in a notebook cell).
    """
    import ast
    tree = ast.parse(source, FILENAME, "exec")
    body = tree.body or [ast.Pass(lineno=1, col_offset=0, end_lineno=1, end_col_offset=0)]
    has_return = any(isinstance(n, ast.Return) for n in _top_level_nodes(body))
    last = body[-1]
    if not has_return and isinstance(last, ast.Expr):
        body[-1] = ast.Return(value=last.value, lineno=last.lineno, col_offset=last.col_offset,
                              end_lineno=last.end_lineno, end_col_offset=last.end_col_offset)
    is_async = _is_async(tree)
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    cls = ast.AsyncFunctionDef if is_async else ast.FunctionDef
    fn = cls(name="<module>", args=args, body=body, decorator_list=[], returns=None, type_comment=None,
             lineno=1, col_offset=0, end_lineno=body[-1].end_lineno, end_col_offset=0)
    module = ast.Module(body=[fn], type_ignores=[])
    code = compile(module, FILENAME, "exec", dont_inherit=True)
    return code, is_async


def _top_level_nodes(body):
    import ast
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))


class _ToolBridge:
    """Routes call_tool to the host. Calls really run concurrently: each gets an id and a future,
    a reader on the protocol fd resolves them as results arrive in any order."""

    def __init__(self, max_concurrency, max_frame, buffered):
        self.next_id = 0
        self.pending = {}
        self.max_concurrency = max_concurrency
        self.max_frame = max_frame
        self.buffer = buffered
        self.loop = None
        self.sem = None

    def attach(self, loop):
        import asyncio
        self.loop = loop
        self.sem = asyncio.Semaphore(self.max_concurrency)
        loop.add_reader(PROTO_FD, self._on_readable)

    def _on_readable(self):
        try:
            chunk = os.read(PROTO_FD, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self.loop.remove_reader(PROTO_FD)
            for fut in self.pending.values():
                if not fut.done():
                    fut.set_exception(RuntimeError("call_tool: the host closed the connection"))
            self.pending.clear()
            return
        self.buffer += chunk
        while True:
            nl = self.buffer.find(b"\n")
            if nl < 0:
                break
            line = self.buffer[:nl]
            self.buffer = self.buffer[nl + 1:]
            frame = json.loads(line)
            fut = self.pending.pop(frame.get("id"), None)
            if fut is None or fut.done():
                continue
            if frame.get("ok"):
                fut.set_result(frame.get("value"))
            else:
                fut.set_exception(RuntimeError(frame.get("error") or "call_tool failed"))

    async def call(self, name, args):
        if os.getpid() != _MAIN_PID:
            raise RuntimeError("call_tool is not available in a forked child process; call it from the main process")
        if self.loop is None:
            raise RuntimeError("call_tool must be awaited: write `await call_tool(...)`")
        if not isinstance(name, str) or not name:
            raise TypeError("call_tool(name, **arguments): name must be a non-empty string")
        async with self.sem:
            self.next_id += 1
            call_id = self.next_id
            try:
                payload = json.dumps({"t": "tool_call", "id": call_id, "name": name, "args": args},
                                     ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            except (TypeError, ValueError) as e:
                raise TypeError(f"call_tool({name!r}): the arguments are not JSON-serialisable: {e}") from None
            data = (payload + "\n").encode("utf-8", "surrogatepass")
            if len(data) > self.max_frame:
                raise ValueError(
                    f"call_tool({name!r}): the arguments are {len(data):,} bytes; the limit is {self.max_frame:,} bytes. "
                    "Pass a smaller payload (for example a file path or an id) instead.")
            fut = self.loop.create_future()
            self.pending[call_id] = fut
            view = memoryview(data)
            while view:
                try:
                    n = os.write(PROTO_FD, view)
                    view = view[n:]
                except BlockingIOError:
                    import select
                    select.select([], [PROTO_FD], [])
            return await fut


def _format_error(exc):
    import traceback
    import linecache
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, capture_locals=False)
    # Drop the frames of this bootstrap: the user sees only their own code and the libraries it called.
    frames = list(te.stack)
    # Trim the bootstrap and event-loop frames before the user's first line, and the bootstrap's own
    # frames (call_tool) anywhere: the user sees their code and the libraries it called.
    first = next((i for i, f in enumerate(frames) if f.filename == FILENAME), None)
    if first is not None:
        frames = frames[first:]
    te.stack = traceback.StackSummary.from_list([f for f in frames if f.filename != __file__])
    line = None
    for f in te.stack:
        if f.filename == FILENAME:
            line = f.lineno
    if line is None and isinstance(exc, SyntaxError) and exc.filename == FILENAME:
        line = exc.lineno
    text = "".join(te.format())
    linecache.clearcache()
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": text,
        "line": line,
    }


def _kill_descendants():
    """Without a PID namespace, this process is a child subreaper: every orphan the code left (after
    setsid() or a double fork) was re-parented here. Stop them all, then kill them."""
    import signal
    me = os.getpid()
    seen = set()
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
            seen.add(pid)
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
    for pid in seen:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in seen:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass


def _set_subreaper():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: die with the host
    except Exception:
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


_MAIN_PID = os.getpid()


def _in_forked_child():
    return os.getpid() != _MAIN_PID


def main():
    global json
    _close_inherited_fds()
    os.set_inheritable(PROTO_FD, False)
    first = _read_frame_blocking()
    if first is None:
        return 0
    import json as _json
    json = _json
    line, rest = first
    frame = json.loads(line)
    source = frame["code"]
    if frame.get("subreaper"):
        _set_subreaper()
    _apply_limits(frame.get("limits"))

    # Live, UTF-8 output that never fails on lone surrogates or odd bytes.
    sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)
    sys.stderr.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)

    bridge = _ToolBridge(int(frame.get("max_concurrency") or 8), int(frame.get("max_frame") or (16 << 20)), rest)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    if frame.get("tools", True):
        async def call_tool(name, _arguments=None, /, **kwargs):
            """Calls a managed tool on the host: `await call_tool("name", arg=value)`."""
            args = dict(_arguments or {})
            args.update(kwargs)
            return await bridge.call(name, args)
        namespace["call_tool"] = call_tool

    result = None
    try:
        try:
            code, is_async = _compile(source)
        except SyntaxError as exc:
            result = {"t": "complete", "ok": False, "error": _format_error(exc)}
        else:
            import linecache
            linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)
            exec(code, namespace)
            fn = namespace.pop("<module>")
            if is_async:
                import asyncio
                loop = asyncio.new_event_loop()
                asyncio.set_event_loop(loop)
                os.set_blocking(PROTO_FD, False)
                bridge.attach(loop)
                try:
                    value = loop.run_until_complete(fn())
                finally:
                    try:
                        loop.remove_reader(PROTO_FD)
                    except Exception:
                        pass
            else:
                value = fn()
            result = _encode_value(value, int(frame.get("max_frame") or (16 << 20)))
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are reported too
        if _in_forked_child():
            # A child the code forked (os.fork, a fork bomb) unwound to here: it must never speak
            # for the run. Its traceback goes to stderr like any other output.
            if not isinstance(exc, SystemExit):
                import traceback
                traceback.print_exception(exc)
            os._exit(exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 1)
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            result = {"t": "complete", "ok": True, "value": None}
        else:
            result = {"t": "complete", "ok": False, "error": _format_error(exc)}
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    if _in_forked_child():
        os._exit(0)
    if frame.get("subreaper"):
        _kill_descendants()
    os.set_blocking(PROTO_FD, True)
    try:
        _send(result)
    except (ValueError, TypeError) as exc:
        _send({"t": "complete", "ok": False, "error": {"type": "ValueError", "message": str(exc), "traceback": "", "line": None}})
    return 0


def _encode_value(value, max_bytes=16 << 20):
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError) as exc:
        kind = type(value).__name__
        return {"t": "complete", "ok": False, "error": {
            "type": "ReturnValueError",
            "message": (f"The code returned a {kind} value that is not JSON-serialisable ({exc}). "
                        "Return only dict, list, str, int, float (finite), bool or None; convert the value first, "
                        "for example with list(...), str(...) or .tolist()."),
            "traceback": "",
            "line": None,
        }}
    if size > max_bytes - 1024:
        return {"t": "complete", "ok": False, "error": {
            "type": "ReturnValueError",
            "message": (f"The return value is {size:,} bytes of JSON; the limit is {max_bytes:,}. "
                        "Return a summary (counts, the first rows, a file path) instead of the whole data."),
            "traceback": "",
            "line": None,
        }}
    return {"t": "complete", "ok": True, "value": value}


json = None

if __name__ == "__main__":
    code = main()
    # Skip interpreter finalisation: the result is sent and the output flushed.
    os._exit(code)
