"""`await install_packages(["pandas>=2", "pyarrow"])` in the guest: asks the host to install packages into
the session's Python environment (standard library only, Python 3.8+; the local guest and the Jupyter
kernel alike).

The host does the work (src/core/runtime/install): it checks the specs, asks the person (an approval that
lists every spec), then runs pip (or uv) outside the sandbox, with the network, into the interpreter the
session runs. The call goes through the ordinary tool channel under the reserved name
`codeact.install_packages`, so the run's clock, Stop and the call's events apply as to any call.

What the code gets back: {"installed": [...specs], "python": "...", "restart": bool, "message": "..."}.
After an install into the running interpreter, the import caches are invalidated and a site-packages
folder that did not exist before is added to sys.path, so the next `import` finds the package. When the
host had to make a new environment (a `.venv` for a system Python), the session cannot switch interpreter
in place: the result has "restart": true and "lost_variables" (the variables this session holds, which
the restart drops), and the package is importable in the session's next run.
"""
import sys

try:  # in the guest library, its frames are ours and never shown in a user's traceback
    import codeact_lib as _lib
    _lib.own_file(sys._getframe().f_code.co_filename)
    _lib.own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)
except ImportError:
    pass

RESERVED = "codeact.install_packages"


def _refresh():
    """Makes what pip just wrote importable in this process: the finders' caches, and new site folders."""
    import importlib
    import os
    import site
    importlib.invalidate_caches()
    folders = []
    try:
        folders += list(site.getsitepackages())
    except Exception:  # an old virtualenv's site module has no getsitepackages
        pass
    try:
        if site.ENABLE_USER_SITE:
            folders.append(site.getusersitepackages())
    except Exception:
        pass
    added = []
    for folder in folders[:16]:
        if isinstance(folder, str) and folder not in sys.path and os.path.isdir(folder):
            site.addsitedir(folder)
            added.append(folder)
    return added


def _check(packages):
    """The types, before anything is sent (the host checks every spec itself: src/core/runtime/install/specs.ts)."""
    if isinstance(packages, str):
        packages = [packages]
    if not isinstance(packages, (list, tuple)):
        raise TypeError(f"install_packages(packages): pass a list of requirement strings such as [\"pandas>=2\"], not a {type(packages).__name__}")
    for p in packages:
        if not isinstance(p, str):
            raise TypeError(f"install_packages(packages): every package must be a string such as \"pandas>=2\", not a {type(p).__name__}")
    return list(packages)


def make(call_tool, user_variables):
    """The `install_packages` function of a namespace. `user_variables()` names the session's variables."""

    async def install_packages(packages, /):
        """Installs packages into this session's Python environment, after the user approves:
        `await install_packages(["pandas>=2", "pyarrow"])`.

        Each item is a requirement such as "name", "name==1.2", "name>=2,<3" or "name[extra]" (no URLs, paths or
        options). The host refuses a system or externally-managed Python, and then offers the user a .venv for
        the folder. Raises RuntimeError with the reason (declined, no network, no such package, build failed)."""
        specs = _check(packages)
        result = await call_tool(RESERVED, packages=specs)
        if not isinstance(result, dict):
            return result
        if result.get("restart"):
            lost = []
            try:
                lost = list(user_variables())[:200]
            except Exception:
                pass
            result = dict(result, lost_variables=lost)
            names = ", ".join(lost) if lost else "none"
            print(f"[codeact] {result.get('message') or 'The session restarts with the new environment.'} "
                  f"Variables lost with the restart: {names}.", file=sys.stderr)
        else:
            added = _refresh()
            if added:
                result = dict(result, added_to_path=added)
        return result

    return install_packages
