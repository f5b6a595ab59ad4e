"""CodeAct inside a Jupyter kernel: the glue between an ipykernel and the guest library.

The host sends the library (codeact_values.py, codeact_lib.py), discovery and this file to each kernel once (silently), as the modules
`codeact_lib` and `__codeact__`. Each user run is then one cell, `await __import__("__codeact__").run(…)`,
carrying the code base64-encoded. Compiling, running, tracebacks, values and the call_tool checks are
the library's, exactly as in the local guest; this file adds what only a kernel has:

- IPython's %magics and !shell lines (the code goes through transform_cell first, line numbers kept);
- the result as one display_data message of a private MIME type, and a last expression that is not
  JSON shown through IPython's display (rich output: images, tables);
- call_tool over the kernel's stdin channel (see toolChannel.ts for the reasons and the frames).
"""
import asyncio
import base64
import itertools
import json
import signal
import sys
import time

import codeact_lib as lib

RESULT_MIME = "application/vnd.codeact.result+json"
lib.own_file(sys._getframe().f_code.co_filename)

_ip = None
_kernel = None
_prefix = None
_config = {}
_run = None
_cells = itertools.count(1)
_call_ids = itertools.count(1)


def install(config):
    """Called once per kernel by the host's bootstrap cell."""
    global _ip, _kernel, _prefix, _config
    from IPython import get_ipython
    ip = get_ipython()
    kernel = getattr(ip, "kernel", None)
    if kernel is None or not all(hasattr(kernel, a) for a in ("stdin_socket", "session", "_parent_ident")):
        raise RuntimeError("this kernel is not an ipykernel kernel with a stdin channel")
    _ip, _kernel, _config = ip, kernel, config
    _prefix = "\x00codeact:" + config["nonce"] + ":"
    ip.user_ns["call_tool"] = call_tool
    # Keep call_tool out of %who / %whos listings, as IPython does for its own names.
    try:
        ip.user_ns_hidden["call_tool"] = call_tool
    except Exception:  # noqa: BLE001
        pass


class _Run:
    def __init__(self, run_id, tools, max_frame):
        self.id = run_id
        self.tools = tools
        self.max_frame = max_frame
        self.new = []          # encoded calls not yet sent
        self.waiting = {}      # call id -> future
        self.scheduled = False
        self.seq = 0


async def call_tool(name, _arguments=None, /, **kwargs):
    """Calls a managed tool on the host: `result = await call_tool("name", arg=value)`.

    The host checks the allowlist, the argument and result schemas and the approval policy; a
    refusal or a tool failure raises RuntimeError with the host's message."""
    run = _run
    if run is None:
        raise RuntimeError("call_tool only works while CodeAct is running code (not from a task left over from an earlier run)")
    name, _args, encoded = lib.prepare_call(name, _arguments, kwargs, run.max_frame, run.tools)
    loop = asyncio.get_running_loop()
    call_id = str(next(_call_ids))
    fut = loop.create_future()
    run.waiting[call_id] = fut
    run.new.append('{"id":%s,"name":%s,"arguments":%s}' % (json.dumps(call_id), json.dumps(name, ensure_ascii=False), encoded))
    _schedule(run, loop)
    try:
        return await fut
    finally:
        run.waiting.pop(call_id, None)


def _schedule(run, loop):
    # Runs after every task that is ready now has had its turn, so the calls of an
    # asyncio.gather(...) all leave in one frame.
    if not run.scheduled:
        run.scheduled = True
        loop.call_soon(_flush, run, loop)


def _hold_budget(loop):
    """How long the host may hold its reply when no result is ready yet (ms, or None for "until one
    is"). The event loop is blocked while the kernel waits, so never past the next timer that other
    tasks are sleeping on."""
    if getattr(loop, "_ready", None):
        return 0
    timers = [h for h in getattr(loop, "_scheduled", ()) if not h.cancelled()]
    if timers:
        return max(0, int((min(h.when() for h in timers) - loop.time()) * 1000))
    return None


_RESEND_S = 3.0


def _request(prompt, seq):
    """Sends one tool frame as an input_request and waits for the host's input_reply.

    Like ipykernel's own _input_request (which input() uses), but built for a channel that can
    lose messages when the WebSocket between host and server drops: a reply whose "seq" is not
    this frame's is a stale duplicate and is ignored, and the request is sent again every few
    seconds until a reply comes (the host answers a repeated frame without running its calls
    twice).
    """
    import zmq
    k = _kernel
    ident = k._parent_ident
    if isinstance(ident, dict):
        ident = ident["shell"]
    parent = k.get_parent("shell") if hasattr(k, "get_parent") else k._parent_header
    sock = k.stdin_socket
    while True:  # drop stale replies
        try:
            sock.recv_multipart(zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            if exc.errno == zmq.EAGAIN:
                break
            raise
    lib.flush_std()
    content = {"prompt": prompt, "password": False}
    k.session.send(sock, "input_request", content, parent, ident=ident)
    sent = time.monotonic()
    while True:
        rlist, _, xlist = zmq.select([sock], [], [sock], 0.5)
        if rlist or xlist:
            _, msg = k.session.recv(sock)
            if not msg:
                continue
            value = (msg.get("content") or {}).get("value", "")
            if value == "\x04":
                raise EOFError("the host closed the tool channel")
            try:
                data = json.loads(value)
            except ValueError:
                continue
            if isinstance(data, dict) and (data.get("cancelled") or data.get("seq") == seq):
                return data
            continue
        if time.monotonic() - sent >= _RESEND_S:
            k.session.send(sock, "input_request", content, parent, ident=ident)
            sent = time.monotonic()


def _flush(run, loop):
    run.scheduled = False
    if run is not _run or (not run.new and not run.waiting):
        return
    calls, run.new = run.new, []
    hold = _hold_budget(loop)
    run.seq += 1
    frame = '{"run":%s,"seq":%d,"calls":[%s],"hold_ms":%s}' % (
        json.dumps(run.id), run.seq, ",".join(calls), "null" if hold is None else hold)
    try:
        data = _request(_prefix + frame, run.seq)
    except BaseException as exc:  # noqa: BLE001 - never let KeyboardInterrupt escape into the event loop
        for fut in list(run.waiting.values()):
            if fut.done():
                continue
            if isinstance(exc, (KeyboardInterrupt, EOFError)):
                fut.cancel()
            else:
                fut.set_exception(RuntimeError(f"call_tool: the tool channel to the host failed ({type(exc).__name__}: {exc})"))
        return
    if data.get("cancelled"):
        for fut in list(run.waiting.values()):
            if not fut.done():
                fut.cancel()
        return
    for result in data.get("results") or ():
        fut = run.waiting.get(str(result.get("id")))
        if fut is None or fut.done():
            continue
        if result.get("ok"):
            fut.set_result(result.get("output"))
        else:
            fut.set_exception(RuntimeError(str(result.get("error") or "the tool call failed")))
    if data.get("lost"):
        for fut in list(run.waiting.values()):
            if not fut.done():
                fut.set_exception(RuntimeError("call_tool: the host has no record of this call (the run may have been restarted)"))
    if run.new or run.waiting:
        _schedule(run, loop)


def _transform_magics(source):
    """%magics and !shell lines, as in a notebook cell, keeping the line numbers."""
    if "%" not in source and "!" not in source and "?" not in source:
        return source
    try:
        cell = _ip.transform_cell(source)
    except Exception:  # noqa: BLE001
        return source
    # IPython drops leading blank lines; put them back so line numbers stay the user's own.
    lines = source.split("\n")
    blank = 0
    while blank < len(lines) - 1 and not lines[blank].strip():
        blank += 1
    return "\n" * blank + cell.lstrip("\n")


def variables():
    """The variables view, published like a result."""
    hidden = set(getattr(_ip, "user_ns_hidden", {}) or {}) | {"In", "Out", "exit", "quit", "get_ipython", "call_tool", *lib.DISCOVERY_NAMES}
    from IPython.display import publish_display_data
    publish_display_data({RESULT_MIME: {"vars": lib.variables(_ip.user_ns, hidden), "nonce": _config["nonce"]}}, metadata={})


async def run(source_b64, run_id, tools, max_frame, max_value, display=None, files=None):
    """Runs one piece of user code. Returns None (so the cell displays nothing) and publishes the
    result as a display_data of RESULT_MIME."""
    global _run
    source = base64.b64decode(source_b64).decode("utf-8", "surrogatepass")
    filename = f"{lib.CELL_PREFIX}{next(_cells)}>"
    current = _Run(run_id, bool(tools), int(max_frame))
    _run = current
    result = None
    display = None
    interrupt = lib.Interrupt()
    try:
        compiled, error = lib.compile_checked(source, filename, _transform_magics)
        if error is not None:
            result = {"ok": False, "error": error}
        else:
            if current.tools and lib.may_use_discovery(compiled.source):
                import codeact_discovery
                if codeact_discovery.wants_discovery(compiled.source) and await codeact_discovery.fetch_and_install(_ip.user_ns, call_tool):
                    for name in lib.DISCOVERY_NAMES:
                        try:
                            _ip.user_ns_hidden[name] = _ip.user_ns[name]
                        except Exception:  # noqa: BLE001
                            pass
            fn = lib.exec_cell(compiled, _ip.user_ns)
            interrupt.task = asyncio.current_task()
            interrupt.loop = asyncio.get_running_loop()
            previous = signal.signal(signal.SIGINT, interrupt.handler)
            interrupt.active = True
            try:
                with lib.no_input():
                    value = (await fn()) if compiled.is_async else fn()
            finally:
                interrupt.active = False
                signal.signal(signal.SIGINT, previous)
            kind, payload = lib.encode_value(value, compiled.implicit, int(max_value))
            if kind == "ok":
                result = {"ok": True, "value": payload}
            elif kind == "display":
                display = payload
                result = {"ok": True, "value": "null"}
            else:
                result = {"ok": False, "error": payload}
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, CancelledError too
        if isinstance(exc, SystemExit) and lib.exit_result(exc):
            result = {"ok": True, "value": "null"}
        else:
            result = {"ok": False, "error": lib.format_error(exc, filename)}
    finally:
        for fut in current.waiting.values():
            if not fut.done():
                fut.cancel()
        _run = None
    if display is not None:
        # The last expression of a notebook-style cell: shown as a notebook shows it (images,
        # tables, text), and the value is null.
        try:
            from IPython.display import display as show
            show(display)
        except Exception:  # noqa: BLE001
            print(lib.display_text(display))
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    from IPython.display import publish_display_data
    result["run"] = run_id
    result["nonce"] = _config["nonce"]
    publish_display_data({RESULT_MIME: result}, metadata={})
