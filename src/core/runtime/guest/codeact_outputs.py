"""The whole output of the session's earlier runs, for the code to read back: output_of(n), last_output().

The model reads each run's output within a budget: its beginning and its end, with a note in the middle
that says how much was left out and where the rest is. The host sends every run's whole stdout and
stderr, as it captured them, once the run is over (a "keep" frame in the local guest; in a Jupyter kernel
the next run's cell carries them, or a silent cell when the host lets go of a kernel it leaves running); they live here, in the session's memory, under the run's execution number (the
"execution" of its result). Bounded: at most `max_total` characters in all and MAX_RUNS runs; the oldest
runs' output goes first, and asking for it then says so. A new session (a restart) starts empty.
"""
from codeact_values import loads as _loads, own_builtins

own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

STREAMS = ("stdout", "stderr")
MAX_RUNS = 1000

_runs = {}  # execution number -> (stdout, stderr), oldest first
_total = 0
_forgotten = 0  # the highest execution number whose output was let go


def keep(n, stdout, stderr, max_total):
    """Files one run's output (the host calls this between runs)."""
    global _total, _forgotten
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        return
    texts = tuple(t if isinstance(t, str) else "" for t in (stdout, stderr))
    old = _runs.pop(n, None)
    if old is not None:
        _total -= len(old[0]) + len(old[1])
    _runs[n] = texts
    _total += len(texts[0]) + len(texts[1])
    limit = max_total if isinstance(max_total, int) and max_total > 0 else 8 << 20
    while len(_runs) > 1 and (_total > limit or len(_runs) > MAX_RUNS):
        first = next(iter(_runs))
        gone = _runs.pop(first)
        _total -= len(gone[0]) + len(gone[1])
        _forgotten = max(_forgotten, first)


def _stream(stream):
    if stream not in STREAMS:
        raise ValueError(f'stream must be "stdout" or "stderr", not {stream!r}')
    return STREAMS.index(stream)


def _kept():
    numbers = list(_runs)
    shown = ", ".join(str(k) for k in numbers[-20:])
    return ("executions " if len(numbers) > 1 else "execution ") + ("…, " if len(numbers) > 20 else "") + shown


def output_of(n, stream="stdout"):
    """The whole text execution `n` of this session printed (its result's "execution" number), as a str.

    `stream="stderr"` gives what it wrote to stderr. The model's copy of a long output keeps only its
    beginning and its end; this is all of it, as the host captured it (up to the output cap of a run)."""
    index = _stream(stream)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"output_of(n): n is the execution number a result showed (an int), not {type(n).__name__}")
    entry = _runs.get(n)
    if entry is not None:
        return entry[index]
    if not _runs:
        raise LookupError(f"The output of execution {n} is not kept: this session has no earlier run's output "
                          "(it is new, or it was restarted since). Run the code again to see its output.")
    if n <= _forgotten:
        raise LookupError(f"The output of execution {n} is no longer kept: the session keeps the most recent output "
                          f"only ({_kept()} now). Run the code again to see its output.")
    raise LookupError(f"No output of execution {n} in this session; it keeps {_kept()}. "
                      "A run's output can be read from the next run on, not during the run itself.")


def last_output(stream="stdout"):
    """The whole text the previous run of this session printed (stdout, or stream="stderr"), as a str."""
    index = _stream(stream)
    if not _runs:
        raise LookupError("No earlier run's output is kept in this session (it is new, or it was restarted since).")
    return _runs[next(reversed(_runs))][index]


def keep_frame(frame):
    """A "keep" frame of the local guest's protocol."""
    keep(frame.get("n"), frame.get("stdout"), frame.get("stderr"), frame.get("max_total"))


def keep_encoded(data):
    """In a Jupyter kernel: the same frame, as base64 of its JSON (the next run's cell, or a silent cell)."""
    import base64
    keep_frame(_loads(base64.b64decode(data).decode("utf-8", "surrogatepass")))


def adopt(old):
    """Takes over what the module this one replaces kept (the host set the kernel up again, for instance
    after reconnecting to it from a new process), checked as untrusted."""
    global _total, _forgotten
    runs = getattr(old, "_runs", None)
    if not isinstance(runs, dict):
        return
    for n, texts in list(runs.items())[-MAX_RUNS:]:
        if isinstance(n, int) and not isinstance(n, bool) and isinstance(texts, tuple) and len(texts) == 2 \
                and all(isinstance(t, str) for t in texts):
            _runs[n] = texts
            _total += len(texts[0]) + len(texts[1])
    forgotten = getattr(old, "_forgotten", 0)
    if isinstance(forgotten, int) and not isinstance(forgotten, bool):
        _forgotten = max(_forgotten, forgotten)


def install(namespace, hidden, own_file):
    """output_of and last_output in the code's namespace, kept out of the variables view (and out of
    the code's tracebacks: a LookupError they raise points at the user's own line)."""
    own_file(output_of.__code__.co_filename)
    names = {"output_of": output_of, "last_output": last_output}
    namespace.update(names)
    hidden.update(names)  # a set (the local guest) or IPython's user_ns_hidden dict
