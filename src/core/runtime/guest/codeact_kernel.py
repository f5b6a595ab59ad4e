"""CodeAct inside a Jupyter kernel: the glue between an ipykernel and the guest library.

The host sends the library (codeact_values.py, codeact_lib.py, codeact_formats.py, codeact_display.py,
codeact_mpl.py, codeact_files.py), discovery and this file to each kernel once (silently), as modules
of those names and `__codeact__`. Each user run is then one cell, `await __import__("__codeact__").run(…)`,
carrying the code base64-encoded. Compiling, running, tracebacks, values and the call_tool checks are
the library's, exactly as in the local guest; this file adds what only a kernel has:

- IPython's %magics and !shell lines (the code goes through transform_cell first, line numbers kept);
- the result as one display_data message of a private MIME type;
- displays (display() in the namespace, the last expression that is not JSON, figures) formatted by
  codeact_display exactly as in the local guest and published with IPython's publish_display_data, in
  order with the streams; the model's summary and the execute_result flag ride in
  metadata["codeact"] = {"summary": str, "result": true} (the host moves them out); matplotlib uses
  our backend (set at install), and the figures left open are shown inside run(), before the result,
  so ipykernel's inline hook has nothing left to show;
- the files the run made or changed in the kernel's working directory: result["files"] = [{path,
  size}] and result["cwd"] (the host fetches them through the Jupyter contents API);
- call_tool over the kernel's stdin channel (see toolChannel.ts for the reasons and the frames);
- output_of(n): each run's cell carries the whole output of the runs before it that the host has not
  filed yet (run(keep=...)), so keeping a run's output costs no request of its own.
"""
import asyncio
import base64
import itertools
import os
import signal
import sys
import time

import codeact_display as display
import codeact_files as files
import codeact_lib as lib

lib.own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

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
    import codeact_install
    install_packages = codeact_install.make(call_tool, lambda: [])
    ip.user_ns["call_tool"] = call_tool
    ip.user_ns["display"] = display.display
    ip.user_ns["install_packages"] = install_packages
    # Keep call_tool and display out of %who / %whos listings, as IPython does for its own names.
    try:
        ip.user_ns_hidden["call_tool"] = call_tool
        ip.user_ns_hidden["display"] = display.display
        ip.user_ns_hidden["install_packages"] = install_packages
    except Exception:
        pass
    # output_of() and last_output(): the whole output of the kernel's earlier runs (the host keeps it here).
    import codeact_outputs
    codeact_outputs.install(ip.user_ns, getattr(ip, "user_ns_hidden", {}), lib.own_file)
    from IPython.core.display_functions import publish_display_data
    display.configure(_publisher(publish_display_data), _note)
    display.install_hooks(kernel=True)


def _publisher(publish):
    def sink(data, metadata, _data_json, _meta_json, extra):
        md = dict(metadata)
        ours = {k: extra[k] for k in ("summary", "result") if k in extra}
        if ours:
            md["codeact"] = ours
        kwargs = {}
        if "display_id" in extra:
            kwargs["transient"] = {"display_id": extra["display_id"]}
        if extra.get("update"):
            kwargs["update"] = True
        publish(data, md, **kwargs)
        return True
    return sink


def _note(text):
    try:
        sys.stderr.write(text)
    except Exception:
        pass


class _Run:
    def __init__(self, run_id, tools, max_frame):
        self.id = run_id
        self.tools = tools
        self.max_frame = max_frame
        self.new = []          # encoded calls not yet sent
        self.waiting = {}      # call id -> future
        self.refusal = None    # the host's refusal at the run's limit on tool calls: later calls raise it here
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
    if run.refusal is not None:
        raise RuntimeError(run.refusal)
    loop = asyncio.get_running_loop()
    call_id = str(next(_call_ids))
    fut = loop.create_future()
    run.waiting[call_id] = fut
    run.new.append('{"id":%s,"name":%s,"arguments":%s}' % (lib.dumps(call_id), lib.dumps(name, ensure_ascii=False), encoded))
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
                data = lib.loads(value)
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
        lib.dumps(run.id), run.seq, ",".join(calls), "null" if hold is None else hold)
    try:
        data = _request(_prefix + frame, run.seq)
    except BaseException as exc:  # never let KeyboardInterrupt escape into the event loop
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
        if result.get("limit") is True:
            run.refusal = str(result.get("error") or "too many tool calls in this run")
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
    except Exception:
        return source
    # IPython drops leading blank lines; put them back so line numbers stay the user's own.
    lines = source.split("\n")
    blank = 0
    while blank < len(lines) - 1 and not lines[blank].strip():
        blank += 1
    return "\n" * blank + cell.lstrip("\n")


def variables():
    """The variables view, published like a result."""
    hidden = set(getattr(_ip, "user_ns_hidden", {}) or {}) | {"In", "Out", "exit", "quit", "get_ipython", "call_tool", "display", "install_packages", *lib.DISCOVERY_NAMES}
    from IPython.display import publish_display_data
    publish_display_data({RESULT_MIME: {"vars": lib.variables(_ip.user_ns, hidden), "nonce": _config["nonce"]}}, metadata={})


async def run(source_b64, run_id, tools, max_frame, max_value, options=None, keep=()):
    """Runs one piece of user code. Returns None (so the cell displays nothing) and publishes the
    result as a display_data of RESULT_MIME. options (a dict, or its JSON text): {"display": {max_bytes,
    max_total, max_count, hidpi}, "files": {max_count}}, as in the local guest's run frame. keep: the
    whole output of the kernel's earlier runs that the host has not filed here yet (base64 of a "keep"
    frame each, codeact_outputs), filed first, so output_of(n) sees them, with no round trip of its own."""
    global _run
    if keep:
        import codeact_outputs
        for data in keep:
            try:
                codeact_outputs.keep_encoded(data)
            except Exception:  # a frame the host made; a bad one only loses that run's kept output
                pass
    source = base64.b64decode(source_b64).decode("utf-8", "surrogatepass")
    if isinstance(options, str):
        try:
            options = lib.loads(options)
        except ValueError:
            options = None
    options = options if isinstance(options, dict) else {}
    display.begin_run(options.get("display"))
    file_caps = files.caps(options.get("files"))
    try:
        root = os.getcwd()
        before = files.snapshot(root)
    except Exception:  # a working directory that is gone: no files to list
        root, before = None, None
    filename = f"{lib.CELL_PREFIX}{next(_cells)}>"
    current = _Run(run_id, bool(tools), int(max_frame))
    _run = current
    result = None
    shown = None
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
                        except Exception:
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
                shown = payload
                result = {"ok": True, "value": "null"}
            else:
                result = {"ok": False, "error": payload}
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, CancelledError too
        if isinstance(exc, SystemExit) and lib.exit_result(exc):
            result = {"ok": True, "value": "null"}
        else:
            result = {"ok": False, "error": lib.format_error(exc, filename)}
    finally:
        for fut in current.waiting.values():
            if not fut.done():
                fut.cancel()
        _run = None
    # The last expression of a notebook-style cell, shown as a notebook shows it (the value is null),
    # then the figures left open, before the result: nothing of the run comes after it.
    display.finish_run(shown)
    if before is not None:
        result["files"] = _changed_files(root, before, file_caps["max_count"])
        result["cwd"] = root
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    from IPython.display import publish_display_data
    result["run"] = run_id
    result["nonce"] = _config["nonce"]
    publish_display_data({RESULT_MIME: result}, metadata={})


def _changed_files(root, before, max_count):
    """[{path, size}] of the files the run made or changed under root (sizes as they are now)."""
    try:
        after = files.snapshot(root)
    except Exception:
        return []
    paths = files.changed(before, after)
    more = len(paths) - max_count
    if more > 0:
        _note(f"[codeact: {more:,} more changed file{'s were' if more != 1 else ' was'} not listed; the cap is {max_count:,} per execution]\n")
    return [{"path": p, "size": after[p][0]} for p in paths[:max_count]]
