"""Tool discovery inside the guest: `search_tools`, `describe_tool` and a generated `tools` module.

Part of the guest library (standard library only, Python 3.8+), used by the local guest and the Jupyter
kernel alike. When the code mentions `tools`, `search_tools` or `describe_tool`, the guest fetches the
catalogue from the host (the reserved call `codeact.tool_catalog`) and installs it before the code runs:

    await fetch_and_install(namespace, call_tool)
    install(namespace, call_tool, catalog) -> the `tools` module

- `namespace`: the dict the user's code runs in (its globals). `search_tools` and `describe_tool` are
  defined there.
- `call_tool`: the guest's async host call, `await call_tool(name, **arguments)`. Its first parameter
  must be positional-only (as in both guests), so a tool argument called `name` passes through.
- `catalog`: the signature catalogue from the host (a dict, or its JSON text), format 1:
      {"version": 1,
       "reserved": {"search": "codeact.search_tools", "describe": "codeact.describe_tool", "catalog": "codeact.tool_catalog"},
       "truncated": false,
       "tools": [{"name": "search_catalog", "py": "search_catalog", "group": "command tools",
                  "description": "Search the product catalog.",
                  "params": [{"name": "query", "required": true, "type": "string", "description": "...",
                              "default": 10, "enum": ["a", "b"]}],   # or null: unknown parameters
                  "extra": false,        # true: the function also takes **arguments (for parameter names that are
                                         # not Python identifiers, or any name when "params" is null)
                  "returns": "array of {sku: string, price: number}"}]}
  (built by src/core/gateway/discovery/toolCatalog.ts `buildToolCatalog`; the host also serves it as the reserved call
  `codeact.tool_catalog`).

What the code gets:
- `await search_tools(query, limit=10)` (async): asks the host (reserved call `codeact.search_tools`), which
  ranks the tools with BM25 and returns a list of {name, description, signature, returns?, group, score}.
- `await describe_tool(name)` (async): asks the host (reserved call `codeact.describe_tool`) for one tool's
  full input and output JSON schemas: {name, description, group, signature, returns?, approval,
  input_schema, output_schema}. Async because the full schemas stay on the host (the catalogue is compact).
- `import tools` / `from tools import search_catalog`: a module in sys.modules whose functions are async,
  take keyword arguments only, and carry a signature (`inspect.signature`) and a docstring generated from
  the schema. A wrong, missing or positional argument raises TypeError, naming the expected signature,
  before anything is sent; parameters left out are not sent (the tool applies its own defaults). The host
  gateway still validates every call.
"""
import difflib
import inspect
import keyword
import sys
import types
from json import loads as _json_loads  # bound at import: the code may replace json.loads

try:  # in the guest library, its frames are ours and never shown in a user's traceback
    import codeact_lib as _lib
    _lib.own_file(sys._getframe().f_code.co_filename)
    _lib.own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)
except ImportError:
    pass

CATALOG_FORMAT = 1
DEFAULT_RESERVED = {"search": "codeact.search_tools", "describe": "codeact.describe_tool", "catalog": "codeact.tool_catalog"}
MAX_SEARCH_LIMIT = 50
MAX_QUERY_CHARS = 500

_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
_VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD
_PY_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict, "null": None}
_PY_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "list", "object": "dict", "null": "None"}


class _Omitted:
    """The default of an optional parameter without a schema default: the argument is not sent."""

    def __repr__(self):
        return "..."


OMITTED = _Omitted()


class _Annotation:
    """A union annotation that prints as written (`str | None`) on every Python version."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def is_python_name(name):
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def python_name(tool_name):
    name = tool_name.replace("-", "_")
    return name if is_python_name(name) else None


def _annotation(json_type):
    types_ = json_type if isinstance(json_type, list) else [json_type]
    if not types_ or "any" in types_:
        return inspect.Parameter.empty
    if len(types_) == 1:
        return _PY_TYPES.get(types_[0], object)
    return _Annotation(" | ".join(_PY_NAMES.get(t, "object") for t in types_))


def _type_text(json_type):
    ann = _annotation(json_type)
    if ann is inspect.Parameter.empty:
        return "any"
    return repr(ann) if isinstance(ann, _Annotation) else ("None" if ann is None else ann.__name__)


def _docstring(entry, params, signature_text):
    lines = [entry.get("description") or "(no description)", ""]
    if params:
        lines.append("Args:")
        for p in params:
            bits = [_type_text(p.get("type", "any"))]
            if not p.get("required"):
                bits.append("optional")
            head = "    %s (%s)" % (p["name"], ", ".join(bits))
            text = p.get("description") or ""
            if "enum" in p:
                text += (" " if text else "") + "One of: %s." % ", ".join(repr(v) for v in p["enum"])
            if "default" in p:
                text += (" " if text else "") + "Default %r (applied by the tool)." % (p["default"],)
            lines.append(head + (": " + text if text else ""))
    if entry.get("returns"):
        lines += ["Returns:", "    " + entry["returns"]]
    lines += ["", "Calls the managed tool %r on the host: %s" % (entry["name"], signature_text)]
    return "\n".join(lines)


def _make_function(entry, call_tool, py):
    tool_name = entry["name"]
    params = entry.get("params")
    listed = params if isinstance(params, list) else []
    parameters = []
    odd_names = set()
    for p in listed:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            continue
        if not is_python_name(p["name"]):
            odd_names.add(p["name"])
            continue
        if p.get("required"):
            default = inspect.Parameter.empty
        else:
            default = p["default"] if "default" in p else OMITTED
        parameters.append(inspect.Parameter(p["name"], _KEYWORD_ONLY, default=default, annotation=_annotation(p.get("type", "any"))))
    var_name = None
    if params is None or odd_names or entry.get("extra"):
        taken = {p.name for p in parameters}
        var_name = "arguments"
        while var_name in taken:
            var_name += "_"
        parameters.append(inspect.Parameter(var_name, _VAR_KEYWORD))
    # Required first, in schema order (the host already sends them so); a stable sort keeps the rest.
    signature = inspect.Signature(parameters)
    signature_text = py + str(signature)
    known = [p.name for p in parameters if p.kind is _KEYWORD_ONLY]

    def type_error(message):
        return TypeError("%s() %s. Signature: %s" % (py, message, signature_text))

    async def tool_function(*args, **kwargs):
        if args:
            raise type_error("takes keyword arguments only (%d positional argument%s given)" % (len(args), "" if len(args) == 1 else "s"))
        if var_name is None:
            for key in kwargs:
                if key not in known:
                    near = difflib.get_close_matches(key, known, n=1)
                    raise type_error("got an unexpected keyword argument %r%s" % (key, " (did you mean %r?)" % near[0] if near else ""))
        try:
            bound = signature.bind(**kwargs)
        except TypeError as exc:
            raise type_error(str(exc)) from None
        arguments = {}
        for name, value in bound.arguments.items():
            if name == var_name:
                for key, extra_value in value.items():
                    if params is not None and key not in odd_names:
                        raise type_error("got an unexpected keyword argument %r" % key)
                    arguments[key] = extra_value
            elif value is not OMITTED:
                arguments[name] = value
        return await call_tool(tool_name, **arguments)

    tool_function.__name__ = py
    tool_function.__qualname__ = py
    tool_function.__module__ = "tools"
    tool_function.__signature__ = signature
    tool_function.__doc__ = _docstring(entry, [p for p in listed if isinstance(p, dict) and "name" in p], signature_text)
    return tool_function


def _module_getattr(names):
    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        near = difflib.get_close_matches(attr, names, n=3)
        hint = (" Did you mean %s?" % ", ".join(near)) if near else ""
        raise AttributeError("The tools module has no tool %r.%s Find tools with: await search_tools(%r)" % (attr, hint, attr.replace("_", " ")))

    return __getattr__


def install(namespace, call_tool, catalog):
    """Defines `search_tools` and `describe_tool` in `namespace` and registers the `tools` module."""
    if isinstance(catalog, (bytes, str)):
        catalog = _json_loads(catalog)
    if not isinstance(catalog, dict) or catalog.get("version") != CATALOG_FORMAT or not isinstance(catalog.get("tools"), list):
        raise ValueError("tool catalogue: expected {'version': %d, 'tools': [...]}" % CATALOG_FORMAT)
    reserved = dict(DEFAULT_RESERVED)
    reserved.update({k: v for k, v in (catalog.get("reserved") or {}).items() if isinstance(v, str)})

    async def search_tools(query, limit=10):
        """Finds managed tools for a task: a list of {name, description, signature, returns, group, score}, best first."""
        if not isinstance(query, str) or not query.strip():
            raise TypeError('search_tools(query, limit=10): query must be a non-empty string, for example "create an invoice"')
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError("search_tools(query, limit=10): limit must be an integer from 1 to %d, not %r" % (MAX_SEARCH_LIMIT, limit))
        return await call_tool(reserved["search"], query=query[:MAX_QUERY_CHARS], limit=limit)

    async def describe_tool(name):
        """One managed tool's full description: {name, description, signature, input_schema, output_schema, ...}."""
        if not isinstance(name, str) or not name:
            raise TypeError("describe_tool(name): name must be the name of a managed tool, as a string")
        return await call_tool(reserved["describe"], name=name)

    module = types.ModuleType("tools", "The workspace's managed tools as async functions (generated from their schemas). "
                              "Find tools with `await search_tools(query)`; read one with `await describe_tool(name)`.")
    names = []
    for entry in catalog["tools"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        py = entry.get("py") or python_name(entry["name"])
        if not is_python_name(py) or py in names:
            continue
        setattr(module, py, _make_function(entry, call_tool, py))
        names.append(py)
    module.__all__ = sorted(names)
    module.__getattr__ = _module_getattr(names)
    module.__dir__ = lambda: sorted(names)
    sys.modules["tools"] = module
    namespace["search_tools"] = search_tools
    namespace["describe_tool"] = describe_tool
    return module


WANTS = None


def wants_discovery(source):
    """True when the code may use discovery (it names `tools`, `search_tools` or `describe_tool`)."""
    global WANTS
    if WANTS is None:
        import re
        WANTS = re.compile(r"\b(tools|search_tools|describe_tool)\b")
    return WANTS.search(source) is not None


async def fetch_and_install(namespace, call_tool):
    """Fetches the host's catalogue and installs discovery; returns False when the host has none."""
    try:
        catalog = await call_tool(DEFAULT_RESERVED["catalog"])
    except RuntimeError:
        return False
    install(namespace, call_tool, catalog)
    return True
