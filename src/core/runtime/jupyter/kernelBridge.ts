/**
 * The Python side of the Jupyter runtime: a small module installed once per kernel (silently) as
 * `sys.modules["__codeact__"]`, plus the builders of the cells the host sends.
 *
 * Each user run is sent as one cell, `await __import__("__codeact__").run(...)`, carrying the user's
 * code base64-encoded. `run` compiles it the way the local guest does (the code becomes the body of a
 * function named `<module>`, so top-level `return` and `await` work and every line number is the
 * user's own), but declares every name the code binds at top level `global`, so variables, imports,
 * functions and classes persist in the kernel between executions of a conversation, as in a notebook.
 * IPython's `%magics` and `!shell` lines still work (the cell goes through `transform_cell` first).
 *
 * The result (value or structured error) comes back as one `display_data` message of the private MIME
 * type {@link RESULT_MIME}; stdout, stderr and rich displays are ordinary IOPub messages.
 *
 * Tool calls use the stdin channel; the reasons and the frame format are documented in toolChannel.ts.
 * The module source is embedded here (not shipped as a .py file) so the bundled extension and CLI
 * carry it without an asset copy step.
 */

/** MIME type of the one display_data message that carries a run's result. */
export const RESULT_MIME = 'application/vnd.codeact.result+json';

/** Bumped when the module or the frames change; a kernel with an older module is re-bootstrapped. */
export const BRIDGE_VERSION = 1;

/** Prefix of every tool frame's input_request prompt: NUL, never typed by a person, then the nonce. */
export function toolPromptPrefix(nonce: string): string {
  return `\u0000codeact:${nonce}:`;
}

const BRIDGE_SOURCE = String.raw`
"""CodeAct bridge inside a Jupyter kernel. Installed by the host; see kernelBridge.ts."""
import ast
import asyncio
import base64
import itertools
import json
import linecache
import signal
import sys
import time
import traceback

RESULT_MIME = "application/vnd.codeact.result+json"
BRIDGE_FILE = "<codeact>"

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
    except Exception:
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
    """Calls a managed tool on the host: result = await call_tool("name", arg=value).

    The host checks the allowlist, the argument and result schemas and the approval policy; any
    refusal or tool failure raises RuntimeError with the host's message.
    """
    run = _run
    if run is None:
        raise RuntimeError("call_tool only works while CodeAct is running code (not from a task left over from an earlier run)")
    if not run.tools:
        raise RuntimeError(f'No managed tools are available in this run, so "{name}" cannot be called.')
    if not isinstance(name, str) or not name:
        raise TypeError("call_tool(name, **arguments): name must be a non-empty string")
    args = dict(_arguments or {})
    args.update(kwargs)
    try:
        encoded = json.dumps(args, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"call_tool({name!r}): the arguments are not JSON-serialisable: {exc}") from None
    size = len(encoded.encode("utf-8", "surrogatepass"))
    if size > run.max_frame:
        raise ValueError(
            f"call_tool({name!r}): the arguments are {size:,} bytes; the limit is {run.max_frame:,} bytes. "
            "Pass a smaller payload (for example a file path or an id) instead.")
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
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
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


# ---- compiling the user's code -------------------------------------------------------------------

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _outer_parts(node):
    """Parts of a nested scope that still run in the enclosing (top-level) scope."""
    if isinstance(node, ast.ClassDef):
        return list(node.decorator_list) + list(node.bases) + [k.value for k in node.keywords]
    if isinstance(node, ast.Lambda):
        return list(node.args.defaults) + [d for d in node.args.kw_defaults if d is not None]
    return (list(node.decorator_list) + list(node.args.defaults)
            + [d for d in node.args.kw_defaults if d is not None])


def _top_level(body):
    """Every node that runs in the top-level scope (not inside nested functions or classes)."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            stack.extend(_outer_parts(node))
            continue
        stack.extend(ast.iter_child_nodes(node))


def _bound_names(body):
    """Names the top-level code binds; they are declared global so they outlive the run."""
    names = set()
    for node in _top_level(body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global):
            names.update(node.names)
        elif type(node).__name__ in ("MatchAs", "MatchStar") and getattr(node, "name", None):
            names.add(node.name)
        elif type(node).__name__ == "MatchMapping" and getattr(node, "rest", None):
            names.add(node.rest)
    # Comprehension variables are local to the comprehension, but := inside one binds outside it.
    for node in _top_level(body):
        if isinstance(node, _COMPREHENSIONS):
            for sub in ast.walk(node):
                if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                    names.add(sub.target.id)
    return names


class _TopLevelRewriter(ast.NodeTransformer):
    """Makes module-level statements legal inside the wrapper function."""

    def __init__(self, filename):
        self.filename = filename

    def generic_visit(self, node):
        if isinstance(node, _SCOPES):
            return node  # their bodies are already function/class bodies
        return super().generic_visit(node)

    def visit_AnnAssign(self, node):
        # "x: int = 1" cannot be combined with "global x"; the annotation only matters to type checkers.
        if isinstance(node.target, ast.Name):
            if node.value is None:
                return ast.copy_location(ast.Pass(), node)
            return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
        return self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if any(a.name == "*" for a in node.names):
            # "import *" is only legal at module level; do what it does, into the kernel's namespace.
            call = ast.Call(
                func=ast.Attribute(value=ast.Call(func=ast.Name(id="__import__", ctx=ast.Load()),
                                                  args=[ast.Constant(value="__codeact__")], keywords=[]),
                                   attr="star_import", ctx=ast.Load()),
                args=[ast.Constant(value=node.module or ""), ast.Constant(value=node.level)], keywords=[])
            return ast.copy_location(ast.Expr(value=call), node)
        return node

    def _no_yield(self, node):
        raise SyntaxError("'yield' outside function", (self.filename, node.lineno, node.col_offset + 1, None))

    visit_Yield = _no_yield
    visit_YieldFrom = _no_yield


def star_import(module, level):
    if level:
        raise ImportError("relative imports have no package to be relative to in a kernel")
    import importlib
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_")]
    ns = _ip.user_ns
    for n in names:
        ns[n] = getattr(mod, n)


def _is_async(body):
    for node in _top_level(body):
        if isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)):
            return True
        if isinstance(node, ast.comprehension) and node.is_async:
            return True
    return False


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


def _compile(source, filename):
    tree = ast.parse(_transform_magics(source), filename, "exec")
    body = tree.body
    future = []
    while body and isinstance(body[0], ast.ImportFrom) and body[0].module == "__future__":
        future.append(body.pop(0))
    body = [_TopLevelRewriter(filename).visit(n) for n in body] or [ast.Pass(lineno=1, col_offset=0)]
    has_return = any(isinstance(n, ast.Return) for n in _top_level(body))
    implicit = False
    last = body[-1]
    if not has_return and isinstance(last, ast.Expr):
        body[-1] = ast.copy_location(ast.Return(value=last.value), last)
        implicit = True
    is_async = _is_async(body)
    names = sorted(_bound_names(body))
    if names:
        body.insert(0, ast.Global(names=names, lineno=1, col_offset=0, end_lineno=1, end_col_offset=0))
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    cls = ast.AsyncFunctionDef if is_async else ast.FunctionDef
    fields = dict(name="<module>", args=args, body=body, decorator_list=[], returns=None, type_comment=None)
    if "type_params" in cls._fields:
        fields["type_params"] = []
    fn = cls(**fields, lineno=1, col_offset=0)
    module = ast.Module(body=future + [fn], type_ignores=[])
    ast.fix_missing_locations(module)
    return compile(module, filename, "exec", dont_inherit=True), is_async, implicit


# ---- running -------------------------------------------------------------------------------------

def _format_error(exc, filename):
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        # The parser's own frames are noise; show the offending line and the caret only.
        return {"type": type(exc).__name__, "message": str(exc.msg),
                "traceback": "".join(traceback.format_exception_only(type(exc), exc)), "line": exc.lineno}
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    frames = list(te.stack)
    first = next((i for i, f in enumerate(frames) if f.filename == filename), None)
    if first is not None:
        frames = frames[first:]
    te.stack = traceback.StackSummary.from_list([f for f in frames if f.filename != BRIDGE_FILE])
    line = None
    for f in te.stack:
        if f.filename == filename:
            line = f.lineno
    if line is None and isinstance(exc, SyntaxError) and exc.filename == filename:
        line = exc.lineno
    return {"type": type(exc).__name__, "message": str(exc), "traceback": "".join(te.format()), "line": line}


def _encode_value(value, implicit, limit):
    if value is None:
        return {"ok": True, "value": "null"}
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        if len(text) > limit:
            raise ValueError(f"it is {len(text):,} characters of JSON; the limit is {limit:,}")
    except (TypeError, ValueError) as exc:
        if implicit:
            # The last expression of a notebook-style cell: show it as a notebook would (images,
            # tables as text) and return no value.
            from IPython.display import display
            display(value)
            return {"ok": True, "value": "null"}
        kind = type(value).__name__
        return {"ok": False, "error": {
            "type": "ReturnValueError",
            "message": (f"The code returned a {kind} value that is not JSON-serialisable ({exc}). "
                        "Return only dict, list, str, int, float (finite), bool or None; convert the value first, "
                        "for example with list(...), str(...) or .tolist()."),
            "traceback": "",
            "line": None,
        }}
    return {"ok": True, "value": text}


def _no_input(prompt="", *args, **kwargs):
    raise EOFError(
        "input() has no one to answer it: code run by CodeAct is not interactive. "
        "Put the value in the code, or fetch it with call_tool.")


def _cancel(task):
    if not task.done():
        task.cancel()


async def run(source_b64, run_id, tools, max_frame, max_value):
    """Runs one piece of user code. Returns None (so the cell displays nothing) and publishes the
    result as a display_data of RESULT_MIME."""
    global _run
    source = base64.b64decode(source_b64).decode("utf-8", "surrogatepass")
    filename = f"<cell-{next(_cells)}>"
    current = _Run(run_id, bool(tools), int(max_frame))
    _run = current
    result = None
    try:
        try:
            code, is_async, implicit = _compile(source, filename)
        except SyntaxError as exc:
            result = {"ok": False, "error": _format_error(exc, filename)}
        else:
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            ns = _ip.user_ns
            exec(code, ns)
            fn = ns.pop("<module>")
            main_code = fn.__code__
            loop = asyncio.get_running_loop()
            task = asyncio.current_task()

            def on_sigint(signum, frame):
                # An interrupt from the host (Stop, timeout). Inside the user's code, raise
                # KeyboardInterrupt there (it stops CPU-bound loops even in a cell with top-level
                # await). Anywhere else (the event loop idling, another task) cancel the run instead:
                # a KeyboardInterrupt escaping into the kernel's event loop would kill the kernel.
                f = frame
                while f is not None:
                    if f.f_code is main_code:
                        raise KeyboardInterrupt
                    f = f.f_back
                loop.call_soon_threadsafe(_cancel, task)

            previous = signal.signal(signal.SIGINT, on_sigint)
            import builtins
            import getpass
            saved_input, saved_getpass = builtins.input, getpass.getpass
            builtins.input = getpass.getpass = _no_input
            try:
                value = (await fn()) if is_async else fn()
            finally:
                signal.signal(signal.SIGINT, previous)
                builtins.input, getpass.getpass = saved_input, saved_getpass
            result = _encode_value(value, implicit, int(max_value))
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, CancelledError too
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            result = {"ok": True, "value": "null"}
        else:
            result = {"ok": False, "error": _format_error(exc, filename)}
    finally:
        for fut in current.waiting.values():
            if not fut.done():
                fut.cancel()
        _run = None
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    from IPython.display import publish_display_data
    result["run"] = run_id
    result["nonce"] = _config["nonce"]
    publish_display_data({RESULT_MIME: result}, metadata={})
`;

function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/** The silent cell that installs the bridge module and defines `call_tool`. */
export function bootstrapCell(nonce: string): string {
  const config = b64(JSON.stringify({ nonce, version: BRIDGE_VERSION }));
  return [
    'def __codeact_install():',
    '    import base64, json, sys, types',
    '    module = types.ModuleType("__codeact__")',
    '    module.__file__ = "<codeact>"',
    `    source = base64.b64decode("${b64(BRIDGE_SOURCE)}").decode("utf-8")`,
    '    exec(compile(source, "<codeact>", "exec"), module.__dict__)',
    '    sys.modules["__codeact__"] = module',
    `    module.install(json.loads(base64.b64decode("${config}")))`,
    '__codeact_install()',
    'del __codeact_install',
    '',
  ].join('\n');
}

export interface RunCellOptions {
  runId: string;
  tools: boolean;
  maxFrameBytes: number;
  maxValueChars: number;
}

/** The cell that runs one piece of user code through the bridge. */
export function runCell(code: string, o: RunCellOptions): string {
  // The run id is generated by the host ([A-Za-z0-9_-]); JSON quoting is a valid Python literal for it.
  return `await __import__("__codeact__").run("${b64(code)}", ${JSON.stringify(o.runId)}, ${o.tools ? 'True' : 'False'}, ${Math.floor(o.maxFrameBytes)}, ${Math.floor(o.maxValueChars)})`;
}
