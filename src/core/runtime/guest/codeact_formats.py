"""CodeAct guest library: what an object looks like as a display (a Jupyter MIME bundle).

- format_object: the IPython rich-repr protocol (_repr_mimebundle_ first, then _repr_html_,
  _repr_markdown_, _repr_svg_, _repr_png_, _repr_jpeg_, _repr_json_, _repr_latex_ for what it left
  out), always with a bounded text/plain; pandas DataFrame and Series, PIL images and matplotlib
  figures as a notebook shows them. A method that raises or returns garbage is skipped with a note,
  and the rest of the bundle stands.
- raw_bundle: display(raw=True)'s dict, checked the same way.
- downscale: an image too large for its cap, smaller (Pillow), for codeact_display's caps.

Never imports matplotlib, pandas or Pillow itself: an object of theirs exists only if the code
imported them (sys.modules says so).
"""
import sys

from codeact_values import own_builtins

own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

TEXT_LIMIT = 100_000  # characters of text/plain
MAX_MIMES = 32
# The binary types (base64 in a bundle): the rows of src/common/mimeTypes.ts whose value is binary
# (test/common/mimeTypes.test.ts checks that both say the same).
BINARY = frozenset((
    "image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "application/pdf",
    "application/zip", "application/gzip", "application/vnd.apache.parquet",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "application/vnd.ms-excel",
    "application/vnd.sqlite3", "application/octet-stream",
))
RASTER = ("image/png", "image/jpeg")
REPR_METHODS = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_json_", "application/json"),
    ("_repr_latex_", "text/latex"),
)
# A DataFrame as a notebook shows it, but never more than this.
MAX_ROWS = 60
MIN_ROWS = 10
MAX_COLUMNS = 20
MAX_COLWIDTH = 500


class Bundle:
    """data {mime: value} (binary base64, JSON mimes any JSON value, text str), metadata, the model's
    summary, notes for the user (a method that failed), the figure it shows, raw image bytes by mime."""
    __slots__ = ("data", "metadata", "summary", "notes", "figure", "raw", "origin")

    def __init__(self):
        self.data = {}
        self.metadata = {}
        self.summary = None
        self.notes = []
        self.figure = None
        self.raw = {}
        self.origin = {}


def type_name(obj):
    t = type(obj)
    return str(getattr(t, "__qualname__", None) or getattr(t, "__name__", "object"))[:80]


def _one_line(text, n=160):
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _exc_text(exc):
    try:
        msg = str(exc)
    except Exception:
        msg = ""
    return f"{type(exc).__name__}: {_one_line(msg)}" if msg else type(exc).__name__


def a_type(value):
    """"a list", "an int": the type of a value, with its article."""
    name = type(value).__name__
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def is_json_mime(mime):
    return mime == "application/json" or mime.endswith("+json")


def _valid_mime(key):
    return (isinstance(key, str) and 3 <= len(key) <= 100 and key.isascii() and "/" in key
            and key.isprintable() and " " not in key)


def check_value(mime, value):
    """(value for the bundle, raw bytes or None, problem or None)."""
    if mime in BINARY:
        if isinstance(value, (bytes, bytearray, memoryview)):
            import binascii
            raw = bytes(value)
            return binascii.b2a_base64(raw, newline=False).decode("ascii"), raw, None
        if isinstance(value, str):
            if not value.isascii():
                return None, None, "returned text that is not base64"
            return "".join(value.split()) if (len(value) <= (64 << 20)) else value, None, None
        return None, None, f"returned {a_type(value)}, not bytes"
    if is_json_mime(mime):
        if isinstance(value, (bytes, bytearray)):
            return None, None, "returned bytes where JSON is wanted"
        return value, None, None
    if isinstance(value, str):
        return value, None, None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return None, None, "returned bytes where text is wanted"
    return None, None, f"returned {a_type(value)}, not a string"


def _method(obj, name):
    """obj.name when it is a real method (IPython's get_real_method: not a class, not an object that
    claims every attribute)."""
    if isinstance(obj, type):
        return None
    try:
        if getattr(obj, "_ipython_canary_method_should_not_exist_", None) is not None:
            return None
        m = getattr(obj, name, None)
    except Exception:
        return None
    return m if callable(m) else None


def _metadata(md, where, notes):
    """A metadata dict with string keys, or {} with a note."""
    if md is None:
        return {}
    if not isinstance(md, dict):
        notes.append(f"{where} returned metadata that is {a_type(md)}, not a dict")
        return {}
    if not all(isinstance(k, str) for k in md):
        notes.append(f"{where} returned metadata with a key that is not a string")
        return {k: v for k, v in md.items() if isinstance(k, str)}
    return md


def _add(b, mime, value, where):
    value, raw, problem = check_value(mime, value)
    if problem:
        b.notes.append(f"{where} {problem}")
        return False
    b.data[mime] = value
    b.origin[mime] = where
    if raw is not None:
        b.raw[mime] = raw
    return True


def add_mapping(b, data, md, where):
    """A bundle dict from _repr_mimebundle_ or display(raw=True), key by key."""
    if not isinstance(data, dict):
        b.notes.append(f"{where} returned {a_type(data)}, not a dict")
        return
    bad_key = False
    for i, (mime, value) in enumerate(data.items()):
        if i >= MAX_MIMES:
            b.notes.append(f"{where} returned more than {MAX_MIMES} MIME types; the rest were left out")
            break
        if not _valid_mime(mime):
            bad_key = True
            continue
        if value is None:
            continue
        _add(b, mime, value, f"{where}[{mime!r}]")
    if bad_key:
        b.notes.append(f"{where} returned a key that is not a MIME type string")
    md = _metadata(md, where, b.notes)
    for k, v in md.items():
        b.metadata[k] = v


def _rich(obj, b, include, exclude):
    tname = type_name(obj)
    m = _method(obj, "_repr_mimebundle_")
    if m is not None:
        where = f"{tname}._repr_mimebundle_"
        try:
            r = m(include=include, exclude=exclude)
        except Exception as exc:
            b.notes.append(f"{where} raised {_exc_text(exc)}")
            r = None
        if r is not None:
            md = None
            if isinstance(r, tuple) and len(r) == 2:
                r, md = r
            add_mapping(b, r, md, where)
    for name, mime in REPR_METHODS:
        if mime in b.data or not _wanted(mime, include, exclude):
            continue
        m = _method(obj, name)
        if m is None:
            continue
        where = f"{tname}.{name}"
        try:
            r = m()
        except Exception as exc:
            b.notes.append(f"{where} raised {_exc_text(exc)}")
            continue
        if r is None:
            continue
        md = None
        if isinstance(r, tuple) and len(r) == 2:
            r, md = r
        if _add(b, mime, r, where) and md is not None:
            md = _metadata(md, where, b.notes)
            if md:
                b.metadata[mime] = md


def _wanted(mime, include, exclude):
    if include and mime not in include:
        return False
    return not (exclude and mime in exclude)


def format_object(obj, include=None, exclude=None, hidpi=False):
    """The bundle a notebook would show for obj (see the module docstring)."""
    b = Bundle()
    try:
        done = _special(obj, b, hidpi)
    except Exception as exc:  # a library's own formatting failed: the generic path
        b.notes.append(f"showing a {type_name(obj)} failed ({_exc_text(exc)})")
        b.data.clear()
        b.raw.clear()
        b.metadata.clear()
        b.summary = b.figure = None
        done = False
    if not done:
        _rich(obj, b, include, exclude)
    if "text/plain" not in b.data:
        b.data["text/plain"] = plain_text(obj)
    if include or exclude:
        for mime in [k for k in b.data if not _wanted(k, include, exclude)]:
            del b.data[mime]
            b.raw.pop(mime, None)
    return b


def raw_bundle(data, metadata):
    b = Bundle()
    add_mapping(b, data, None, "display(raw=True)")
    if metadata:
        for k, v in _metadata(metadata, "display(raw=True)", b.notes).items():
            b.metadata[k] = v
    return b


_REPR = None


def plain_text(obj, limit=TEXT_LIMIT):
    """repr(obj) as a notebook's text/plain, bounded: builtin containers are cut without building their
    whole repr."""
    global _REPR
    if _REPR is None:
        import reprlib
        r = reprlib.Repr()
        r.maxlevel = 8
        r.maxtuple = r.maxlist = r.maxarray = r.maxdict = r.maxset = r.maxfrozenset = r.maxdeque = 300
        r.maxstring = limit
        r.maxlong = 4000
        r.maxother = limit
        _REPR = r
    try:
        if type(obj) in (list, tuple, dict, set, frozenset, int, str):
            text = _REPR.repr(obj)
        else:
            text = repr(obj)
    except Exception as exc:
        text = f"<{type_name(obj)} object: repr() failed: {_exc_text(exc)}>"
    if not isinstance(text, str):
        text = f"<{type_name(obj)} object>"
    if len(text) > limit:
        text = text[:limit] + f"… [{len(text) - limit:,} more characters]"
    return text


# ---- objects of the common libraries ------------------------------------------------------------

def _special(obj, b, hidpi):
    mod = sys.modules.get("matplotlib.figure")
    if mod is not None and isinstance(obj, mod.Figure):
        _figure(obj, b, hidpi)
        return True
    mod = sys.modules.get("PIL.Image")
    if mod is not None and isinstance(obj, mod.Image):
        _pil(obj, b, mod)
        return True
    pd = sys.modules.get("pandas")
    if pd is not None:
        if isinstance(obj, pd.DataFrame):
            _pandas(obj, b, pd, True)
            return True
        if isinstance(obj, pd.Series):
            _pandas(obj, b, pd, False)
            return True
    return False


def figure_png(fig, hidpi=False):
    """PNG bytes of a figure as the inline backend renders it: its dpi (twice for HiDPI), tight
    bounding box, its face colour (white when it has none)."""
    import io
    buf = io.BytesIO()
    face = fig.get_facecolor()
    if len(face) == 4 and face[3] == 0:
        face = "white"
    fig.savefig(buf, format="png", dpi=fig.dpi * (2 if hidpi else 1), bbox_inches="tight", facecolor=face)
    return buf.getvalue()


def _figure(fig, b, hidpi):
    raw = figure_png(fig, hidpi)
    # Drawn as it is now: a change from here on makes it stale again (the end of the run shows it then).
    fig.stale = False
    _add(b, "image/png", raw, "Figure")
    b.figure = fig
    size = image_size("image/png", raw)
    if hidpi and size:
        b.metadata["image/png"] = {"width": size[0] // 2, "height": size[1] // 2}
    b.data["text/plain"] = plain_text(fig)


def _pil(im, b, Image):
    import io
    if im.mode not in ("RGB", "RGBA"):
        alpha = im.mode in ("LA", "PA", "RGBa", "La") or (im.mode == "P" and "transparency" in im.info)
        try:
            im = im.convert("RGBA" if alpha else "RGB")
        except (ValueError, OSError):
            im = im.convert("L").convert("RGB")
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    _add(b, "image/png", buf.getvalue(), "Image")


def _cap(value, cap, zero_is_all=False):
    if value is None or (zero_is_all and value == 0) or not isinstance(value, int) or value > cap:
        return cap
    return value


def _pandas(obj, b, pd, frame):
    get = pd.get_option
    rows = _cap(get("display.max_rows"), MAX_ROWS, True)
    options = ("display.max_rows", rows,
               "display.min_rows", min(_cap(get("display.min_rows"), MIN_ROWS, True), rows),
               "display.max_columns", _cap(get("display.max_columns"), MAX_COLUMNS, True),
               "display.max_colwidth", _cap(get("display.max_colwidth"), MAX_COLWIDTH))
    with pd.option_context(*options):
        b.data["text/plain"] = plain_text(obj)
        table = obj if frame else obj.to_frame()
        html = table._repr_html_()
    if isinstance(html, str):
        b.data["text/html"] = html
    b.summary = table_summary(obj, frame)


def _cell(value, n=40):
    if isinstance(value, str):
        text = value
    elif isinstance(value, float) or (type(value).__module__ == "numpy" and "float" in type(value).__name__):
        text = f"{value:.6g}"
    elif isinstance(value, (int, bool)) or type(value).__module__.startswith(("numpy", "pandas")):
        text = str(value)
    else:
        text = plain_text(value, 200)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= n else text[:n - 1] + "…"


def table_summary(obj, frame, head=5, max_cols=12, max_listed=50):
    """What the model reads for a table: shape, columns with dtypes, the first rows as markdown."""
    if frame:
        n_rows, n_cols = obj.shape
        cols = list(obj.columns[:max_listed])
        dtypes = list(obj.dtypes.iloc[:max_listed])
        listed = ", ".join(f"{_cell(c, 60)} ({d})" for c, d in zip(cols, dtypes))
        if n_cols > max_listed:
            listed += f", … and {n_cols - max_listed:,} more"
        lines = [f"DataFrame: {n_rows:,} rows × {n_cols:,} columns", f"Columns: {listed}"]
        part = obj.iloc[:head, :max_cols]
        names = [_cell(c) for c in part.columns]
    else:
        n_rows, n_cols = len(obj), 1
        name = obj.name
        lines = [f"Series{'' if name is None else ' ' + _cell(name, 60)}: {n_rows:,} rows, dtype {obj.dtype}"]
        part = obj.iloc[:head].to_frame()
        names = [_cell(name if name is not None else "value")]
    if n_rows == 0:
        return "\n".join(lines)
    more = frame and n_cols > max_cols
    header = [""] + names + (["…"] if more else [])
    lines.append(f"First {min(head, n_rows)} rows:")
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in part.itertuples(index=True, name=None):
        cells = [_cell(v) for v in row] + (["…"] if more else [])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---- images -------------------------------------------------------------------------------------

def image_size(mime, raw):
    """(width, height) from a PNG's or JPEG's header, or None."""
    if not raw:
        return None
    if mime == "image/png" and raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        return int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")
    if mime == "image/jpeg" and raw[:2] == b"\xff\xd8":
        i = 2
        for _ in range(1000):
            if i + 9 > len(raw) or raw[i] != 0xFF:
                return None
            marker = raw[i + 1]
            length = int.from_bytes(raw[i + 2:i + 4], "big")
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                return int.from_bytes(raw[i + 7:i + 9], "big"), int.from_bytes(raw[i + 5:i + 7], "big")
            i += 2 + length
    return None


def downscale(mime, raw, budget, max_pixels=40_000_000):
    """(smaller bytes, (w0, h0), (w1, h1)) of the same format whose base64 fits in `budget` bytes;
    None when Pillow cannot be imported; raises ValueError when it cannot be done, and before decoding
    anything when the header declares more than `max_pixels` (codeact.outputs.maxImageMegapixels)."""
    try:
        from PIL import Image
    except ImportError:
        return None
    import io
    import warnings
    target = budget * 3 // 4 - 64
    if target < 1024:
        raise ValueError("the room left is too small for an image")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Image.open reads the header only: the size is checked before anything is decoded.
        im = Image.open(io.BytesIO(raw))
        w0, h0 = im.size
        if w0 * h0 > max_pixels:
            raise ValueError(
                f"it declares {w0}×{h0} pixels, over the {max_pixels / 1e6:g}-megapixel cap (codeact.outputs.maxImageMegapixels)"
            )
        im.load()
    fmt = "JPEG" if mime == "image/jpeg" else "PNG"
    if fmt == "JPEG" and im.mode not in ("RGB", "L"):
        im = im.convert("RGB")
    scale = min(0.95, (target / max(1, len(raw))) ** 0.5 * 0.95)
    for _ in range(8):
        w1, h1 = max(1, int(w0 * scale)), max(1, int(h0 * scale))
        if w1 < 16 or h1 < 16:
            break
        small = im.resize((w1, h1), Image.LANCZOS, reducing_gap=3.0)
        buf = io.BytesIO()
        small.save(buf, format=fmt, **({"quality": 85} if fmt == "JPEG" else {}))
        out = buf.getvalue()
        if len(out) <= target:
            return out, (w0, h0), (w1, h1)
        scale *= min(0.8, (target / len(out)) ** 0.5)
    raise ValueError("it does not fit even at a small size")
