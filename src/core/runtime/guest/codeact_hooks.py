"""CodeAct guest library: import hooks (sys.meta_path) for what rich outputs need from libraries the
code imports, set up when those libraries load (at once when they are loaded already):

- matplotlib: the prebuilt font cache the host offers is copied in first (CODEACT_MPL_CACHE into
  MPLCONFIGDIR), and our backend (codeact_mpl) becomes the default unless the user chose one
  (MPLBACKEND, or a matplotlibrc of their own that names a backend). MPLBACKEND is never set, so a
  child process does not inherit a backend it cannot import.
- IPython (the local guest only; a kernel keeps its own): IPython.display's display, update_display and
  publish_display_data become codeact_display's.

Nothing here imports matplotlib or IPython.
"""
import os
import sys

import codeact_lib as _lib

_lib.own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

_lib.own_file(sys._getframe().f_code.co_filename)
BACKEND = "module://codeact_mpl"
_WATCH = {}
_KERNEL = False
_DISPLAY = None


class _Loader:
    """Runs a module's own loader with our steps before and after (then gets out of the way)."""

    def __init__(self, loader, before, after):
        self._loader = loader
        self._before = before
        self._after = after

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        if self._before is not None:
            try:
                self._before()
            except Exception:
                pass
        module.__loader__ = self._loader
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self._loader
        self._loader.exec_module(module)
        if self._after is not None:
            try:
                self._after(module)
            except Exception:
                pass

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _Finder:
    """Finds nothing itself: wraps the loader of a watched module (one time each)."""

    def find_spec(self, fullname, path=None, target=None):
        hooks = _WATCH.get(fullname)
        if hooks is None:
            return None
        spec = None
        for finder in list(sys.meta_path):
            if finder is self or getattr(finder, "find_spec", None) is None:
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:
                return None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        _WATCH.pop(fullname, None)
        spec.loader = _Loader(spec.loader, *hooks)
        return spec


_IPYTHON_MODULES = ("IPython.core.display_functions", "IPython.core.display", "IPython.display")


def install_hooks(display, kernel=False):
    """matplotlib gets our backend when it loads; in the local guest (not a kernel) IPython.display's
    display routes to `display` (the codeact_display module). Modules already loaded are set up at once."""
    global _KERNEL, _DISPLAY
    _KERNEL, _DISPLAY = kernel, display
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    mpl = sys.modules.get("matplotlib")
    if mpl is None:
        _WATCH["matplotlib"] = (_prepare_mpl, _choose_backend)
    else:
        _choose_backend(mpl)
    if kernel:
        return
    for name in _IPYTHON_MODULES:
        mod = sys.modules.get(name)
        if mod is None:
            _WATCH[name] = (None, _patch_ipython)
        else:
            _patch_ipython(mod)


def _patch_ipython(mod):
    for name in ("display", "publish_display_data", "update_display"):
        if hasattr(mod, name):
            setattr(mod, name, getattr(_DISPLAY, name))


def _prepare_mpl():
    """Before matplotlib loads: the prebuilt font cache the host offers (CODEACT_MPL_CACHE) goes into
    matplotlib's config folder (MPLCONFIGDIR) when it is not there yet, so the first plot is quick."""
    src = os.environ.get("CODEACT_MPL_CACHE")
    dst = os.environ.get("MPLCONFIGDIR")
    if not src or not dst:
        return
    try:
        names = [n for n in os.listdir(src) if n.startswith("fontlist-") and n.endswith(".json")][:8]
        if not names:
            return
        os.makedirs(dst, mode=0o700, exist_ok=True)
        for name in names:
            target = os.path.join(dst, name)
            if os.path.exists(target):
                continue
            with open(os.path.join(src, name), "rb") as f:
                data = f.read(64 << 20)
            tmp = f"{target}.{os.getpid()}.tmp"
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, target)
            except OSError:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
    except OSError:
        pass


def _rc_sets_backend(path):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError:
        return False
    for line in text.splitlines():
        key, sep, _ = line.split("#", 1)[0].partition(":")
        if sep and key.strip() == "backend":
            return True
    return False


def _user_backend(mpl):
    """Whether the user chose a backend: MPLBACKEND (in a kernel, not the inline backend ipykernel sets),
    or a matplotlibrc of their own (not the system's) that names one."""
    env = os.environ.get("MPLBACKEND") or ""
    if env:
        return not (_KERNEL and ("matplotlib_inline" in env or env.lower() == "inline"))
    try:
        fname = os.path.realpath(mpl.matplotlib_fname())
        data = os.path.realpath(mpl.get_data_path())
    except Exception:
        return True
    if fname.startswith(("/etc/", data + os.sep)):
        return False
    return _rc_sets_backend(fname)


def _choose_backend(mpl):
    if _user_backend(mpl):
        return
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None and getattr(pyplot, "_backend_mod", None) is not None:
        pyplot.switch_backend(BACKEND)
    else:
        mpl.rcParams["backend"] = BACKEND
