"""CodeAct guest library: the one place where user code is compiled, run and reported.

Both runtimes use it. The local guest (codeact_guest.py) imports it from its private folder; the
Jupyter runtime sends its source to each kernel once (codeact_kernel.py installs it). What lives here:

- compile_cell: the code becomes the body of a function named <module>, so top-level `await` and
  `return` work and every line number is the user's own. Every name the code binds at top level is
  declared global, so variables, imports, functions and classes live on in the namespace from one
  execution to the next (a session), as in a notebook. `from __future__` imports stay first; a
  top-level `yield` is the SyntaxError Python gives; `from m import *` works.
- run_compiled: runs it (with an event loop when it awaits), `input()` raising a clear EOFError, and
  an interrupt (SIGINT) that stops the user's code without killing the process that runs it.
- format_error: the exception type, message, the user's line and a traceback without frames of ours
  and without host paths.
- encode_value: the JSON value, a display for a last expression that is not JSON (as a notebook
  shows it), or a ReturnValueError that says how to fix it.
- prepare_call: the checks on call_tool's name and arguments, before anything leaves the process.
- variables: a summary of the namespace (name, type, short repr or shape) that never runs user code.

The last three live in codeact_values.py and are part of this module's surface.

Start-up cost matters for a cold run, so the imports are the cheap ones; asyncio and traceback load
only when they are needed.
"""
import ast
import sys

CELL_PREFIX = "<cell-"
_OWN_FILES = {sys._getframe().f_code.co_filename}

NOT_INTERACTIVE = ("input() has no one to answer it: code run by CodeAct is not interactive. "
                   "Put the value in the code, or fetch it with call_tool.")


def own_file(filename):
    """Registers a file of ours: its frames never show in a user's traceback."""
    _OWN_FILES.add(filename)


# Values that leave the process live in their own module (part of this library's surface).
from codeact_values import compact_json, dumps, encode_value, loads, own_builtins, prepare_call, scan_json, variables  # noqa: E402,F401
import codeact_values as _values  # noqa: E402

own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

own_file(_values.prepare_call.__code__.co_filename)


# ---- compiling ---------------------------------------------------------------------------------

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
    """Names the top-level code binds; they are declared global so they outlive the execution."""
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

    def __init__(self, filename, lines=()):
        self.filename = filename
        self.lines = lines

    def generic_visit(self, node):
        if isinstance(node, _SCOPES):
            # Their bodies are already function or class bodies; only the parts that run at top
            # level (decorators, defaults, bases) are checked for a stray yield.
            for part in _outer_parts(node):
                self.visit(part)
            return node
        return super().generic_visit(node)

    def visit_AnnAssign(self, node):
        # "x: int = 1" cannot be combined with "global x"; the annotation only matters to type checkers.
        if isinstance(node.target, ast.Name):
            if node.value is None:
                return ast.copy_location(ast.Pass(), node)
            return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
        return self.generic_visit(node)

    def visit_Global(self, node):
        # A no-op at module level; the wrapper already declares every bound name global.
        return ast.copy_location(ast.Pass(), node)

    def visit_ImportFrom(self, node):
        if any(a.name == "*" for a in node.names):
            # "import *" is only legal at module level; do what it does, into the code's globals.
            lib = ast.Call(func=ast.Name(id="__import__", ctx=ast.Load()),
                           args=[ast.Constant(value=__name__)], keywords=[])
            call = ast.Call(
                func=ast.Attribute(value=lib, attr="star_import", ctx=ast.Load()),
                args=[ast.Constant(value=node.module or ""), ast.Constant(value=node.level),
                      ast.Call(func=ast.Name(id="globals", ctx=ast.Load()), args=[], keywords=[])],
                keywords=[])
            return ast.copy_location(ast.Expr(value=call), node)
        return node

    def _no_yield(self, node):
        text = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else None
        raise SyntaxError("'yield' outside function", (self.filename, node.lineno, node.col_offset + 1, text))

    visit_Yield = _no_yield
    visit_YieldFrom = _no_yield


def star_import(module, level, namespace):
    if level:
        raise ImportError("attempted relative import with no known parent package")
    import importlib
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_")]
    for n in names:
        namespace[n] = getattr(mod, n)


def _is_async(body):
    for node in _top_level(body):
        if isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)):
            return True
        if isinstance(node, ast.comprehension) and node.is_async:
            return True
    return False


class Compiled:
    __slots__ = ("code", "is_async", "implicit", "filename", "source")

    def __init__(self, code, is_async, implicit, filename, source):
        self.code = code
        self.is_async = is_async
        self.implicit = implicit
        self.filename = filename
        self.source = source


def compile_cell(source, filename, transform=None):
    """Compiles user code (see the module docstring). Raises SyntaxError with the user's line."""
    text = transform(source) if transform else source
    tree = ast.parse(text, filename, "exec")
    body = tree.body
    future = []
    # `from __future__` imports must open the module (after its docstring, if any): keep them there.
    first = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str) else 0
    while len(body) > first and isinstance(body[first], ast.ImportFrom) and body[first].module == "__future__":
        future.append(body.pop(first))
    if not body and not future:
        body = [ast.Pass(lineno=1, col_offset=0)]
    rewriter = _TopLevelRewriter(filename, text.splitlines())
    body = [rewriter.visit(n) for n in body] or [ast.Pass(lineno=1, col_offset=0)]
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
    code = compile(module, filename, "exec", dont_inherit=True)
    import linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return Compiled(code, is_async, implicit, filename, source)


# ---- running -----------------------------------------------------------------------------------

def compile_checked(source, filename, transform=None):
    """(compiled, None), or (None, error) for code that does not compile: reported as a SyntaxError even
    when the compiler ran out of memory or recursion on it."""
    try:
        return compile_cell(source, filename, transform), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        error = format_error(exc, filename, compiling=True)
        if not isinstance(exc, SyntaxError):
            error["type"] = "SyntaxError"
        return None, error


def flush_std():
    """Flushes sys.stdout and sys.stderr, whatever the code made of them (replaced, closed, None)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # a stream the code replaced or closed
            pass


class Interrupt:
    """SIGINT while user code runs: KeyboardInterrupt inside the user's code (it stops CPU-bound
    loops too); anywhere else (the event loop waiting on a tool, our own bookkeeping) the running
    task is cancelled instead, because a KeyboardInterrupt there would break the process that has
    to report the result."""

    def __init__(self):
        self.task = None
        self.loop = None
        self.active = False
        self.requested = False

    def handler(self, signum, frame):
        if not self.active:
            return
        self.requested = True
        f = frame
        depth = 0
        while f is not None and depth < 1000:
            if f.f_code.co_filename.startswith(CELL_PREFIX):
                raise KeyboardInterrupt
            f = f.f_back
            depth += 1
        if self.task is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(_cancel, self.task)
        else:
            raise KeyboardInterrupt


def _cancel(task):
    if not task.done():
        task.cancel()


def _no_input(prompt="", *args, **kwargs):
    raise EOFError(NOT_INTERACTIVE)


class _NoInput:
    """input() and getpass() raise a clear EOFError while user code runs."""

    def __enter__(self):
        import builtins
        self.saved = builtins.input
        builtins.input = _no_input
        gp = sys.modules.get("getpass")
        self.saved_gp = gp.getpass if gp is not None else None
        if gp is not None:
            gp.getpass = _no_input
        return self

    def __exit__(self, *exc):
        import builtins
        builtins.input = self.saved
        gp = sys.modules.get("getpass")
        if gp is not None and self.saved_gp is not None:
            gp.getpass = self.saved_gp
        return False


def no_input():
    return _NoInput()


def exec_cell(compiled, namespace):
    """Defines the wrapper function in the namespace and returns it."""
    exec(compiled.code, namespace)
    return namespace.pop("<module>")


def run_sync(fn, interrupt):
    interrupt.task = None
    interrupt.loop = None
    interrupt.active = True
    try:
        return fn()
    finally:
        interrupt.active = False


def run_in_loop(fn, loop, interrupt):
    """Runs an async wrapper to completion on a loop that is not running (the local guest)."""
    task = loop.create_task(fn())
    interrupt.task = task
    interrupt.loop = loop
    interrupt.active = True
    try:
        return loop.run_until_complete(task)
    finally:
        interrupt.active = False
        interrupt.task = None


# ---- reporting ---------------------------------------------------------------------------------

def _short_path(filename):
    """Paths of the interpreter's own libraries, without the host's folders."""
    if not filename or filename.startswith("<"):
        return filename
    import os
    import sysconfig
    for key, label in (("purelib", "<site-packages>"), ("platlib", "<site-packages>"), ("stdlib", "<stdlib>"), ("platstdlib", "<stdlib>")):
        try:
            root = sysconfig.get_paths()[key]
        except Exception:
            continue
        if root and filename.startswith(root.rstrip(os.sep) + os.sep):
            return label + filename[len(root.rstrip(os.sep)):]
    for root in sys.path:
        if root and root.endswith(("site-packages", "dist-packages")) and filename.startswith(root + os.sep):
            return "<site-packages>" + filename[len(root):]
    return filename


def _clean(te, filename, trim):
    import traceback
    frames = list(te.stack)
    if trim:
        first = next((i for i, f in enumerate(frames) if f.filename.startswith(CELL_PREFIX)), None)
        if first is not None:
            frames = frames[first:]
    kept = []
    for f in frames:
        if f.filename in _OWN_FILES:
            continue
        short = _short_path(f.filename)
        if short != f.filename:
            f = traceback.FrameSummary(short, f.lineno, f.name, line=f.line)
        kept.append(f)
    te.stack = traceback.StackSummary.from_list(kept)
    seen = 0
    for attr in ("__cause__", "__context__"):
        sub = getattr(te, attr, None)
        if sub is not None and seen < 20:
            seen += 1
            _clean(sub, filename, False)


def format_error(exc, filename, compiling=False):
    """{type, message, traceback, line} of an exception raised by (or while compiling) user code."""
    import traceback
    name = type(exc).__name__
    if compiling and isinstance(exc, SyntaxError):
        # The parser's own frames are noise: the offending line and the caret only.
        text = "".join(traceback.format_exception_only(type(exc), exc))
        return {"type": name, "message": str(exc.msg), "traceback": text,
                "line": exc.lineno if exc.filename == filename else None}
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, capture_locals=False)
    _clean(te, filename, True)
    line = None
    for f in te.stack:
        if f.filename == filename:
            line = f.lineno
    if line is None and isinstance(exc, SyntaxError) and exc.filename == filename:
        line = exc.lineno
    try:
        message = str(exc)
    except Exception:  # a broken __str__ must not lose the report
        message = f"<{name}: its message could not be shown>"
    return {"type": name, "message": message, "traceback": "".join(te.format()), "line": line}


def exit_result(exc):
    """SystemExit: exit() and exit(0) end the code successfully with no value."""
    return exc.code in (None, 0)


# ---- tool discovery -------------------------------------------------------------------------------

def may_use_discovery(source):
    """A cheap first check: could the code use `tools`, `search_tools` or `describe_tool`? (Then the
    discovery module, which is costlier to load, checks exactly.)"""
    return "tools" in source or "describe_tool" in source


DISCOVERY_NAMES = ("search_tools", "describe_tool")
