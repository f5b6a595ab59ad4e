"""CodeAct guest library: values that leave the process.

- encode_value: the JSON value of a run, a display for a last expression that is not JSON (as a
  notebook shows it: codeact_display.show_result), or a ReturnValueError that says how to fix it;
- prepare_call: the checks on call_tool's name and arguments, before anything leaves the process;
- variables: a summary of the namespace (name, type, short repr or shape) that never runs user code.

Part of codeact_lib (which re-exports these); both runtimes load it with the library.

The guest's own references, bound at import (before any code of the user's runs): the JSON encoders and
decoder here (`dumps`, `loads`, `compact_json`, `encode_value`), and the builtins of every guest module
(`own_builtins`). Code that replaces `json.dumps`, `len` or `print` in its namespace, or on the modules
themselves (`import json; json.dumps = None`), leaves the guest's replies whole.
"""
import builtins as _builtins
from json import JSONDecoder as _JSONDecoder, JSONEncoder as _JSONEncoder


def own_builtins(module_globals):
    """Binds every builtin a guest module uses in its own globals, at import: a later `builtins.len = …`
    (or `print`, `isinstance`, `str`…) by the code changes nothing the module calls."""
    for name, value in vars(_builtins).items():
        if not name.startswith("_"):
            module_globals.setdefault(name, value)


own_builtins(globals())

# Encoders with the options the guest uses, and a decoder, made once here (json.dumps with options builds
# a new encoder every call, from the json module's names of the moment).
_VALUE_ENCODER = _JSONEncoder(ensure_ascii=False, allow_nan=False)
_COMPACT_ENCODER = _JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII_ENCODER = _JSONEncoder()
_DECODER = _JSONDecoder()
scan_json = _DECODER.scan_once


def dumps(value, ensure_ascii=True):
    """json.dumps(value) (or with ensure_ascii=False), with the guest's own encoder."""
    return (_ASCII_ENCODER if ensure_ascii else _VALUE_ENCODER).encode(value)


def loads(text):
    """json.loads(text) for str or UTF-8 bytes, with the guest's own decoder."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "surrogatepass")
    return _DECODER.decode(text)

# Deepest nesting of lists and dicts in a returned value (the host's MAX_VALUE_DEPTH, as for tool results).
MAX_DEPTH = 128


def too_deep(value, max_depth=MAX_DEPTH):
    """True when lists and dicts nest deeper than max_depth (or a container holds itself). Iterative, with
    memory for the depth only, so any value is safe to look at (json.dumps and repr recurse, and crash on
    deep enough data)."""
    containers = (dict, list, tuple)
    if not isinstance(value, containers):
        return False
    stack = [iter(value.values() if isinstance(value, dict) else value)]
    while stack:
        for child in stack[-1]:
            if isinstance(child, containers):
                if len(stack) >= max_depth:
                    return True
                stack.append(iter(child.values() if isinstance(child, dict) else child))
                break
        else:
            stack.pop()
    return False


def encode_value(value, implicit, max_bytes):
    """("ok", json_text) | ("display", value) | ("error", error_dict).

    A last expression (implicit) that is not JSON is shown, as a notebook shows it, and the value is
    null; an explicit `return` of such a value is an error that says how to fix it. A value nested
    deeper than MAX_DEPTH, or over max_bytes, is an error either way."""
    if value is None:
        return "ok", "null"
    try:
        deep = too_deep(value)
    except Exception:  # a container of the code's that misbehaves: json.dumps says what is wrong
        deep = False
    if deep:
        return "error", {"type": "ReturnValueError", "traceback": "", "line": None, "message": (
            f"The return value is nested deeper than {MAX_DEPTH} levels (lists and dicts inside one another); "
            f"the limit is {MAX_DEPTH}. Return a flatter value: a summary, the first levels, or a file path.")}
    try:
        text = _VALUE_ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        if implicit:
            return "display", value
        kind = type(value).__name__
        return "error", {
            "type": "ReturnValueError",
            "message": (f"The code returned a {kind} value that is not JSON-serialisable ({exc}). "
                        "Return only dict, list, str, int, float (finite), bool or None; convert the value first, "
                        "for example with list(...), str(...) or .tolist()."),
            "traceback": "",
            "line": None,
        }
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return "error", {
            "type": "ReturnValueError",
            "message": (f"The return value is {size:,} bytes of JSON; the limit is {max_bytes:,}. "
                        "Return a summary (counts, the first rows, a file path) instead of the whole data."),
            "traceback": "",
            "line": None,
        }
    return "ok", text


def compact_json(value):
    return _COMPACT_ENCODER.encode(value)


def prepare_call(name, arguments, kwargs, max_bytes, tools_enabled=True):
    """Checks a call_tool call and returns (name, args, args_json); raises what the code should see."""
    if not tools_enabled:
        raise RuntimeError(f'No managed tools are available in this run, so "{name}" cannot be called.')
    if not isinstance(name, str) or not name:
        raise TypeError("call_tool(name, **arguments): name must be a non-empty string")
    if arguments is not None and not isinstance(arguments, dict):
        raise TypeError(f"call_tool({name!r}): pass the arguments as keywords or one dict, not a {type(arguments).__name__}")
    if arguments is None and not kwargs:
        return name, {}, "{}"
    args = dict(arguments or {})
    args.update(kwargs)
    try:
        encoded = _COMPACT_ENCODER.encode(args)
    except (TypeError, ValueError, RecursionError) as exc:
        raise TypeError(f"call_tool({name!r}): the arguments are not JSON-serialisable: {exc}") from None
    size = len(encoded) if encoded.isascii() else len(encoded.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ValueError(
            f"call_tool({name!r}): the arguments are {size:,} bytes; the limit is {max_bytes:,} bytes. "
            "Pass a smaller payload (for example a file path or an id) instead.")
    return name, args, encoded


# ---- the variables view --------------------------------------------------------------------------

_SCALARS = (bool, int, float, complex, type(None))


def _safe_repr(value, budget):
    """A short repr built only from builtin types; anything else shows as <TypeName>, so no user
    __repr__ ever runs."""
    t = type(value)
    if t in _SCALARS:
        if t is int and value.bit_length() > 200:
            return f"<int, {value.bit_length():,} bits>"
        return repr(value)
    if t is str:
        return repr(value if len(value) <= budget else value[:budget] + "…")
    if t in (bytes, bytearray):
        return f"<{t.__name__}, {len(value):,} bytes>"
    if t in (list, tuple, set, frozenset) and budget > 8:
        open_, close = {list: "[]", tuple: "()", set: "{}", frozenset: "{}"}[t]
        parts = []
        used = 2
        for i, v in enumerate(value):
            if i >= 8 or used > budget:
                parts.append("…")
                break
            r = _safe_repr(v, max(8, (budget - used) // 2))
            parts.append(r)
            used += len(r) + 2
        return open_ + ", ".join(parts) + close
    if t is dict and budget > 8:
        parts = []
        used = 2
        for i, (k, v) in enumerate(value.items()):
            if i >= 6 or used > budget:
                parts.append("…")
                break
            r = f"{_safe_repr(k, 24)}: {_safe_repr(v, max(8, (budget - used) // 2))}"
            parts.append(r)
            used += len(r) + 2
        return "{" + ", ".join(parts) + "}"
    return f"<{t.__name__}>"


def _type_name(t):
    mod = getattr(t, "__module__", "") or ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", "?")
    return name if mod in ("builtins", "__main__") else f"{mod}.{name}"


def _shape(value):
    """The shape of numpy arrays and pandas objects, read through the libraries' own attributes."""
    mod = type(value).__module__ or ""
    if not (mod.startswith("numpy") or mod.startswith("pandas")):
        return None
    try:
        shape = value.shape
    except Exception:
        return None
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return list(shape)
    return None


def variables(namespace, hidden=(), limit=500):
    """The user's variables: [{name, type, summary, shape?}], sorted by name, at most `limit`."""
    import types
    out = []
    names = sorted(n for n in list(namespace.keys()) if isinstance(n, str) and not n.startswith("_") and n not in hidden)
    for name in names[:limit]:
        value = namespace.get(name)
        t = type(value)
        entry = {"name": name, "type": _type_name(t)}
        if isinstance(value, types.ModuleType):
            entry["type"] = "module"
            entry["summary"] = getattr(value, "__name__", name)
        elif isinstance(value, type):
            entry["type"] = "class"
            entry["summary"] = _type_name(value)
        elif isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            entry["type"] = "function"
            code = getattr(value, "__code__", None)
            if code is not None:
                params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
                entry["summary"] = f"{getattr(value, '__name__', name)}({', '.join(params)})"
        else:
            shape = _shape(value)
            if shape is not None:
                entry["shape"] = shape
                dtype = None
                try:
                    dtype = str(value.dtype) if type(value).__name__ != "DataFrame" else None
                except Exception:
                    dtype = None
                entry["summary"] = " × ".join(str(n) for n in shape) + (f" {dtype}" if dtype else "")
                if type(value).__name__ == "DataFrame":
                    try:
                        cols = [str(c) for c in list(value.columns[:8])]
                        entry["summary"] += " — " + ", ".join(cols) + (", …" if shape[1] > 8 else "")
                    except Exception:
                        pass
            else:
                try:
                    entry["summary"] = _safe_repr(value, 80)
                except Exception:
                    entry["summary"] = f"<{t.__name__}>"
                if t in (list, tuple, set, frozenset, dict, str, bytes, bytearray):
                    entry["len"] = len(value)
        out.append(entry)
    return {"variables": out, "total": len(names)}
