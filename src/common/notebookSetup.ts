/**
 * What an exported notebook needs to run in a plain Jupyter kernel (IPython 7 or later): a Markdown cell that
 * says so, and a first code cell that defines `call_tool` (answering with the tool results recorded in the
 * conversation) and lets a cell end with `return`, as CodeAct's cells may. Everything else the cells do is
 * plain Python with top-level `await`, which IPython runs as it is.
 */

/** A recorded managed-tool call: its result (`output`) or its error. */
export interface RecordedCall {
  name: string;
  arguments: unknown;
  output?: unknown;
  error?: string;
  /** The result was too large to keep in the notebook. */
  dropped?: boolean;
}

export function setupMarkdown(calls: number, usesDiscovery: boolean): string {
  return [
    "**Running this notebook outside CodeAct.** Its code cells ran in CodeAct, where they call the workspace's managed tools with " +
      '`await call_tool(name, **arguments)` and may end with `return` to give their value.',
    '',
    `The next cell makes them run in a plain Jupyter kernel (IPython 7 or later): it defines \`call_tool\`, which answers with the ${calls} ` +
      `tool result${calls === 1 ? '' : 's'} recorded in this conversation (a call the conversation did not make raises an error that says so), and lets a cell \`return\` its value. ` +
      'Run it first. On the CodeAct kernel (in VS Code with CodeAct, pick "CodeAct" in the kernel picker) the cells call the real tools and that cell does nothing.' +
      (usesDiscovery ? " Cells that use CodeAct's `tools` module (tool discovery) need CodeAct." : ''),
  ].join('\n');
}

/** The first code cell: `call_tool` over the recorded results, and top-level `return` for the cells after it. */
export function setupCode(calls: RecordedCall[]): string {
  // A JSON string literal is a Python string literal too.
  const recorded = JSON.stringify(JSON.stringify(calls));
  const body = `import ast as _ast, io as _io, json as _json, tokenize as _tokenize

_CODEACT_CALLS = _json.loads(${recorded})
for _c in _CODEACT_CALLS:
    _c["key"], _c["used"] = _json.dumps(_c.get("arguments"), sort_keys=True, default=str), False


async def call_tool(name, **arguments):
    """The result CodeAct recorded for this call of the managed tool \`name\` (the real tool runs only in CodeAct)."""
    key = _json.dumps(arguments, sort_keys=True, default=str)
    same = [c for c in _CODEACT_CALLS if c["name"] == name and c["key"] == key]
    if not same:
        raise RuntimeError(
            f"call_tool({name!r}) has no recorded result for the arguments {arguments!r}: this notebook was exported "
            f"from CodeAct, where {name!r} is a managed tool of the workspace. Run the code with CodeAct, or define call_tool to reach the tool."
        )
    call = next((c for c in same if not c["used"]), same[-1])
    call["used"] = True
    if call.get("dropped"):
        raise RuntimeError(f"the recorded result of {name!r} was too large to keep in this notebook")
    if "error" in call:
        raise RuntimeError(call["error"])
    return call.get("output")


def _codeact_top(body):
    """The statements of a cell outside functions and classes (where a \`return\` ends the cell)."""
    for node in body:
        yield node
        if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, None) or []:
                yield from _codeact_top([child])


def _codeact_bound(body):
    """The names a cell binds at top level: they stay global, as in CodeAct."""
    names = set()
    for node in _codeact_top(body):
        if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (_ast.Import, _ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        if isinstance(node, _ast.ExceptHandler) and node.name:
            names.add(node.name)
        for field in ("targets", "target", "items", "iter", "value", "test"):
            part = getattr(node, field, None)
            for sub in part if isinstance(part, list) else [part]:
                if isinstance(sub, _ast.AST):
                    for n in _ast.walk(sub):
                        if isinstance(n, _ast.Name) and isinstance(n.ctx, _ast.Store):
                            names.add(n.id)
    return sorted(names)


def _codeact_cell(lines):
    """A cell that \`return\`s at top level runs as the body of a coroutine whose value is the cell's."""
    source = "".join(lines)
    try:
        tree = _ast.parse(source)
    except SyntaxError:
        return lines
    if not any(isinstance(n, _ast.Return) for n in _codeact_top(tree.body)):
        return lines
    inside = set()  # lines that continue a multi-line string: indenting them would change the string
    for tok in _tokenize.generate_tokens(_io.StringIO(source).readline):
        if tok.start[0] < tok.end[0] and tok.type not in (_tokenize.NEWLINE, _tokenize.NL):
            inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    names = _codeact_bound(tree.body)
    out = ["async def __codeact_cell__():\\n"] + (["    global " + ", ".join(names) + "\\n"] if names else [])
    for i, line in enumerate(source.splitlines(True), 1):
        out.append(line if i in inside else "    " + line)
    if not out[-1].endswith("\\n"):
        out[-1] += "\\n"
    return out + ["await __codeact_cell__()\\n"]


_ip = get_ipython()  # noqa: F821 (IPython's)
_ip.input_transformers_post[:] = [t for t in _ip.input_transformers_post if getattr(t, "__name__", "") != "_codeact_cell"] + [_codeact_cell]
call_tool._codeact_recorded = True
`;
  // On the CodeAct kernel (the Python session's own call_tool is there before any cell runs) nothing is set up.
  const indented = body
    .split('\n')
    .map((l) => (l ? `    ${l}` : l))
    .join('\n');
  return `# CodeAct: what the cells below need in a plain Jupyter kernel. Run this cell first.
# On the CodeAct kernel ("CodeAct" in VS Code's kernel picker) call_tool reaches the real tools: nothing to set up.
if callable(globals().get("call_tool")) and not getattr(globals()["call_tool"], "_codeact_recorded", False):
    print("This is the CodeAct kernel: call_tool reaches the workspace's managed tools, and cells may return. Nothing to set up.")
else:
${indented}`;
}
