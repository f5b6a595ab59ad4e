"""CodeAct guest library: display() and the caps on what it shows.

Both runtimes use it. The runtime configures a sink (the local guest writes a marker on stdout and
stderr and a "display" frame; the Jupyter bridge publishes display_data) and opens and closes each
execution (begin_run / end_run). What lives here:

- display(*objs, raw=False, metadata=None, display_id=None, update=False, include=None, exclude=None):
  IPython's display, returning a DisplayHandle (.update(obj), .display(obj)) when display_id is given;
  show_result: the last expression of the code, as a notebook's execute_result;
- the caps of an execution: bytes per display (the JSON size of its bundle; an image over it is
  downscaled with Pillow when Pillow is importable), bytes and count per execution (past them, one
  note for the run);
- install_hooks (codeact_hooks.py): matplotlib gets our backend (codeact_mpl) unless the user chose
  one, and, in the local guest, IPython.display's display and publish_display_data route here.

Every note goes to stderr as one line, "[codeact: …]". Never imports matplotlib, pandas, Pillow or
IPython itself: only what the code already imported (sys.modules says so).
"""
import os
import sys

import codeact_lib as _lib
from codeact_values import compact_json, own_builtins

own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

_lib.own_file(sys._getframe().f_code.co_filename)


class _LazyFormats:
    """codeact_formats, loaded at the first display (a cold start that shows nothing never pays for it)."""

    def __getattr__(self, name):
        global formats
        import codeact_formats
        _lib.own_file(codeact_formats.plain_text.__code__.co_filename)
        formats = codeact_formats
        return getattr(codeact_formats, name)


formats = _LazyFormats()

DISPLAY_DEFAULTS = {"max_bytes": 2 << 20, "max_total": 12 << 20, "max_count": 200, "hidpi": False, "max_pixels": 40_000_000}
MAX_METADATA = 64 << 10


def _int(value, default, low=0):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= low else default


def size_text(n):
    """2097152 -> "2 MB", 24222105 -> "23.1 MB", 900 -> "900 bytes"."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            v = f"{n / scale:.1f}"
            return (v[:-2] if v.endswith(".0") else v) + " " + unit
    return f"{n:,} bytes"


def _nbytes(text):
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class _State:
    def __init__(self):
        import _thread
        self.lock = _thread.allocate_lock()
        self.sink = None      # (data, metadata, data_json, metadata_json, extra) -> bool
        self.note = None      # (text) -> None
        self.fallback = None  # (text) -> None: a display that cannot be sent (a forked child)
        self.frame_limit = None
        self.depth = 0
        self.begin_run(None)
        self.active = False

    def begin_run(self, options):
        o = options if isinstance(options, dict) else {}
        self.max_bytes = _int(o.get("max_bytes"), DISPLAY_DEFAULTS["max_bytes"], 1)
        self.max_total = _int(o.get("max_total"), DISPLAY_DEFAULTS["max_total"], 0)
        self.max_count = _int(o.get("max_count"), DISPLAY_DEFAULTS["max_count"], 0)
        self.hidpi = o.get("hidpi") is True
        self.max_pixels = _int(o.get("max_pixels"), DISPLAY_DEFAULTS["max_pixels"], 1)
        self.shown = 0
        self.total = 0
        self.over_count = 0
        self.over_total = 0
        self.figures = None
        self.active = True


STATE = _State()


def configure(sink, note, fallback=None, frame_limit=None):
    """The runtime's way out: sink sends one display, note writes a note, fallback prints a display's
    text where no display can be sent. frame_limit: the largest bundle the channel carries."""
    STATE.sink = sink
    STATE.note = note
    STATE.fallback = fallback
    STATE.frame_limit = frame_limit


def begin_run(options):
    STATE.begin_run(options)
    if STATE.frame_limit:
        STATE.max_bytes = min(STATE.max_bytes, STATE.frame_limit)


def end_run():
    """Shows the figures the code left open (and closes them), then the one note for what the caps
    refused. Displays after this (a thread left running) are dropped."""
    st = STATE
    mpl = sys.modules.get("codeact_mpl")
    if mpl is not None and "matplotlib.pyplot" in sys.modules:
        try:
            mpl.flush_figures()
        except Exception as exc:
            _note(f"the open figures could not be shown ({formats._exc_text(exc)})")
    refused = st.over_count + st.over_total
    if refused:
        caps = []
        if st.over_count:
            caps.append(f"{st.max_count:,} per execution")
        if st.over_total:
            caps.append(f"{size_text(st.max_total)} of displays per execution")
        _note(f"{refused:,} more display{'s were' if refused != 1 else ' was'} not shown; the cap is {' and '.join(caps)}")
    st.active = False
    st.figures = None


def finish_run(value):
    """The end of an execution: its last expression (as an execute_result), then end_run(). Never raises:
    Stop while a slow figure renders ends the showing with a note, and the run's result still goes out."""
    try:
        try:
            show_result(value)
        finally:
            end_run()
    except BaseException as exc:  # KeyboardInterrupt, SystemExit from a repr
        STATE.active = False
        _note(f"showing the outputs stopped ({type(exc).__name__})")


def _note(text):
    note = STATE.note
    if note is not None:
        try:
            note("[codeact: " + text + "]\n")
        except Exception:
            pass


def _new_id():
    return os.urandom(16).hex()


class DisplayHandle:
    """A display that can be updated (IPython's DisplayHandle)."""

    def __init__(self, display_id=None):
        self.display_id = display_id if display_id is not None else _new_id()

    def __repr__(self):
        return f"<DisplayHandle display_id={self.display_id}>"

    def display(self, obj, **kwargs):
        display(obj, display_id=self.display_id, **kwargs)

    def update(self, obj, **kwargs):
        display(obj, display_id=self.display_id, update=True, **kwargs)


def display(*objs, include=None, exclude=None, metadata=None, transient=None, display_id=None, raw=False,
            clear=False, update=False, **kwargs):
    """Shows each object to the user as a notebook does (HTML, Markdown, images, tables, figures).

    display(obj) uses the object's rich reprs (_repr_html_, _repr_png_, _repr_mimebundle_, …);
    display(bundle, raw=True) shows a MIME bundle dict as it is; display(obj, display_id=True)
    returns a handle whose .update(new) replaces what is shown."""
    if isinstance(transient, dict) and transient.get("display_id") is not None:
        display_id = transient["display_id"]
    if display_id is True:
        display_id = _new_id()
    if display_id is not None:
        display_id = str(display_id)[:200]
    for obj in objs:
        _show(obj, include, exclude, metadata, raw, display_id, update is True, False)
    return DisplayHandle(display_id) if display_id is not None else None


def update_display(obj, *, display_id, **kwargs):
    kwargs["update"] = True
    display(obj, display_id=display_id, **kwargs)


def publish_display_data(data, metadata=None, source=None, *, transient=None, **kwargs):
    display(data, raw=True, metadata=metadata, transient=transient, update=kwargs.get("update") is True)


def show_result(value):
    """The last expression of the code, as a notebook's execute_result (None shows nothing)."""
    if value is not None:
        _show(value, None, None, None, False, None, False, True)


def show_figure(fig):
    """A matplotlib figure (plt.show(), the end of an execution)."""
    _show(fig, None, None, None, False, None, False, False)


def already_shown(fig):
    figures = STATE.figures
    return figures is not None and fig in figures and not getattr(fig, "stale", True)


def _show(obj, include, exclude, metadata, raw, display_id, update, result):
    st = STATE
    if not st.active or st.depth > 2:
        return
    if st.shown >= st.max_count:
        st.over_count += 1
        return
    st.depth += 1
    try:
        b = formats.raw_bundle(obj, metadata) if raw else formats.format_object(obj, include, exclude, st.hidpi)
        if metadata and not raw:
            for k, v in formats._metadata(metadata, "display(metadata=…)", b.notes).items():
                b.metadata[k] = v
    except Exception as exc:  # never fails the user's code
        _note(f"a {formats.type_name(obj)} could not be shown ({formats._exc_text(exc)})")
        return
    finally:
        st.depth -= 1
    extra = {}
    if result:
        extra["result"] = True
    if display_id is not None:
        extra["display_id"] = display_id
    if update:
        extra["update"] = True
    _send(b, extra, formats.type_name(obj))


def _send(b, extra, tname):
    st = STATE
    lost = b.notes
    info = []
    parts, size = _encode(b, lost, st.max_bytes, tname)
    if size > st.max_bytes:
        size = _fit(b, parts, size, lost, info, st.max_bytes, tname, st.max_pixels)
    if not parts:
        for n in lost + info:
            _note(n)
        return
    meta_json = "{}"
    if b.metadata:
        try:
            meta_json = compact_json(b.metadata)
        except (TypeError, ValueError, RecursionError):
            lost.append(f"the metadata of a {tname} is not JSON; it was left out")
            meta_json = "{}"
        if len(meta_json) > MAX_METADATA:
            lost.append(f"the metadata of a {tname} is over {size_text(MAX_METADATA)}; it was left out")
            meta_json = "{}"
        if meta_json == "{}":
            b.metadata = {}
    with st.lock:
        if st.shown >= st.max_count:
            st.over_count += 1
            return
        if st.total + size > st.max_total:
            st.over_total += 1
            return
        st.shown += 1
        st.total += size
    tail = "; showing its text instead" if list(parts) == ["text/plain"] else "; showing the rest"
    for n in lost:
        _note(n + tail)
    for n in info:
        _note(n)
    if b.summary:
        extra["summary"] = b.summary[:20_000]
    data_json = "{" + ",".join(compact_json(k) + ":" + v for k, v in parts.items()) + "}"
    data = {k: b.data[k] for k in parts}
    sent = False
    sink = st.sink
    if sink is not None:
        try:
            sent = sink(data, b.metadata, data_json, meta_json, extra)
        except Exception as exc:
            _note(f"a display could not be sent ({formats._exc_text(exc)})")
            return
    if not sent and st.fallback is not None:
        st.fallback(str(data.get("text/plain", "")))
    elif sent and b.figure is not None:
        if st.figures is None:
            import weakref
            st.figures = weakref.WeakSet()
        try:
            st.figures.add(b.figure)
        except TypeError:
            pass


def _origin(b, mime, tname):
    return b.origin.get(mime) or f"the {mime} output of a {tname}"


def _encode(b, lost, max_bytes, tname):
    """{mime: JSON text} and the bundle's JSON size; a value that cannot fit or is not JSON is left out
    with a note."""
    parts = {}
    size = 2
    for mime, value in list(b.data.items()):
        if isinstance(value, str) and len(value) > max_bytes and mime not in formats.RASTER and mime != "text/plain":
            lost.append(f"{_origin(b, mime, tname)} returned {size_text(_nbytes(value))}, over the {size_text(max_bytes)} limit per display")
            del b.data[mime]
            continue
        try:
            text = compact_json(value)
        except (TypeError, ValueError, RecursionError) as exc:
            lost.append(f"{_origin(b, mime, tname)} returned a value that is not JSON ({formats._exc_text(exc)})")
            del b.data[mime]
            continue
        parts[mime] = text
        size += len(mime) + 4 + _nbytes(text)
    return parts, size


def _part_size(mime, parts):
    return len(mime) + 4 + _nbytes(parts[mime])


def _fit(b, parts, size, lost, info, max_bytes, tname, max_pixels=DISPLAY_DEFAULTS["max_pixels"]):
    """Makes the bundle fit max_bytes: images downscaled (Pillow), then the largest other outputs left
    out, then the text cut. Returns the new size; parts may end up empty."""
    import binascii
    limit = size_text(max_bytes)
    for mime in formats.RASTER:
        if mime not in parts or size <= max_bytes:
            continue
        raw = b.raw.get(mime)
        if raw is None:
            try:
                raw = binascii.a2b_base64(b.data[mime])
            except (binascii.Error, ValueError):
                raw = b""
        dims = formats.image_size(mime, raw)
        what = (f"a {dims[0]}×{dims[1]} " if dims else "a ") + f"{mime[6:].upper()} image ({size_text(len(raw))})"
        own = _part_size(mime, parts)
        room = max_bytes - (size - own) - len(mime) - 8
        problem = None if raw else "it is not valid base64"
        small = None
        if raw:
            try:
                small = formats.downscale(mime, raw, room, max_pixels)
            except Exception as exc:  # Pillow could not read or shrink it
                problem = str(exc) if isinstance(exc, ValueError) else formats._exc_text(exc)
        if small is not None:
            out, (w0, h0), (w1, h1) = small
            b.data[mime] = binascii.b2a_base64(out, newline=False).decode("ascii")
            parts[mime] = '"' + b.data[mime] + '"'
            size = size - own + _part_size(mime, parts)
            md = b.metadata.get(mime)
            if isinstance(md, dict):
                for key, full, now in (("width", w0, w1), ("height", h0, h1)):
                    if isinstance(md.get(key), (int, float)) and not isinstance(md.get(key), bool):
                        md[key] = max(1, round(md[key] * now / full))
            info.append(f"the {mime[6:].upper()} image ({size_text(len(raw))}) was downscaled from {w0}×{h0} to {w1}×{h1} to stay under {limit}")
            continue
        del parts[mime]
        del b.data[mime]
        size -= own
        why = f"it could not be made smaller ({problem})" if problem else "Pillow is not installed to make it smaller"
        hint = '; fig.savefig("name.png") writes it to a file you get' if b.figure is not None else ""
        lost.append(f"{what} was not shown: it is over the {limit} limit per display, and {why}{hint}")
    while size > max_bytes:
        others = [m for m in parts if m != "text/plain"]
        if not others:
            break
        mime = max(others, key=lambda m: len(parts[m]))
        own = _part_size(mime, parts)
        lost.append(f"{_origin(b, mime, tname)} ({size_text(own)}) was left out: over the {limit} limit per display")
        del parts[mime]
        del b.data[mime]
        size -= own
    if size > max_bytes and "text/plain" in parts:
        own = _part_size("text/plain", parts)
        keep = (max_bytes - (size - own)) // 4 - 64
        if keep < 16:
            del parts["text/plain"]
            del b.data["text/plain"]
            lost.append(f"a {tname} was not shown: nothing of it fits the {limit} limit per display")
            return size - own
        text = b.data["text/plain"][:keep] + "… [cut at the display limit]"
        b.data["text/plain"] = text
        parts["text/plain"] = compact_json(text)
        size = size - own + _part_size("text/plain", parts)
    return size


def install_hooks(kernel=False):
    """See codeact_hooks.install_hooks (loaded only when the runtime starts)."""
    import codeact_hooks
    codeact_hooks.install_hooks(sys.modules[__name__], kernel)
