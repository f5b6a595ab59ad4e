"""CodeAct's matplotlib backend ("module://codeact_mpl"), the default in the guest and in a kernel.

Figures render with Agg and are shown through codeact_display, as Jupyter's inline backend does:
plt.show() shows each open figure and closes it; fig.show() shows that figure; at the end of each
execution the runtime shows the figures still open (flush_figures) and closes them. A figure kept in a
variable can be shown again later (display(fig), or fig as the last expression).

codeact_display's import hook selects this backend when matplotlib loads, unless the user chose one;
MPLBACKEND is never set, so child processes do not inherit a backend they cannot import. Loading this
module costs nothing: the matplotlib classes are made when matplotlib asks for them (a Jupyter kernel
gets the whole library at once, before anything imports matplotlib).
"""
import sys

import codeact_lib as _lib

_lib.own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

_lib.own_file(sys._getframe().f_code.co_filename)
backend_version = "1"
_CANVAS = None


def _classes():
    global _CANVAS
    if _CANVAS is None:
        from matplotlib.backend_bases import FigureManagerBase
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        class FigureManagerCodeAct(FigureManagerBase):
            def show(self):
                import codeact_display
                codeact_display.show_figure(self.canvas.figure)

        class FigureCanvasCodeAct(FigureCanvasAgg):
            manager_class = FigureManagerCodeAct

        g = globals()
        g["FigureManager"] = FigureManagerCodeAct
        g["FigureCanvas"] = FigureCanvasCodeAct
        _CANVAS = FigureCanvasCodeAct
    return _CANVAS


def __getattr__(name):
    if name in ("FigureCanvas", "FigureManager"):
        _classes()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _open_figures():
    """(manager, figure) of the open pyplot figures drawn by this backend."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None or _CANVAS is None:
        return []
    return [(m, m.canvas.figure) for m in helpers.Gcf.get_all_fig_managers() if isinstance(m.canvas, _CANVAS)]


def _show_all(skip_shown):
    import codeact_display
    shown = _open_figures()
    try:
        for _, fig in shown:
            if skip_shown and codeact_display.already_shown(fig):
                continue
            try:
                codeact_display.show_figure(fig)
            except Exception as exc:  # a figure that cannot be drawn must not hide the others
                codeact_display._note(f"figure {getattr(fig, 'number', '?')} could not be shown ({type(exc).__name__}: {exc})")
    finally:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is not None:
            for _, fig in shown:
                try:
                    pyplot.close(fig)
                except Exception:
                    pass


def show(*args, block=None, **kwargs):
    """plt.show(): each open figure, then closed."""
    _show_all(False)


def flush_figures():
    """The end of an execution: the open figures not shown since they last changed, then all closed."""
    _show_all(True)
