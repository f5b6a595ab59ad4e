"""CodeAct guest library: the files an execution wrote in its working directory.

snapshot(root) before the code runs and again after it; changed() says which files are new or
changed; read_file() copies one out. Bounded everywhere: regular files only (no link is followed, a
FIFO or a device is skipped and never blocks), at most MAX_DEPTH folders deep and MAX_VISIT entries
visited (the rest are skipped, silently), hidden entries and __pycache__ left alone.
"""
import os
import stat

from codeact_values import own_builtins

own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

MAX_DEPTH = 4
MAX_VISIT = 2000
FILES_DEFAULTS = {"max_bytes": 10 << 20, "max_total": 20 << 20, "max_count": 50}


def snapshot(root):
    """{relative path: (size, mtime_ns)} of the regular files under root, breadth first."""
    out = {}
    visited = 0
    queue = [("", 1)]
    head = 0
    while head < len(queue) and visited < MAX_VISIT:
        rel, depth = queue[head]
        head += 1
        try:
            it = os.scandir(os.path.join(root, rel) if rel else root)
        except OSError:
            continue
        with it:
            for entry in it:
                visited += 1
                if visited > MAX_VISIT:
                    break
                name = entry.name
                if name.startswith(".") or name == "__pycache__":
                    continue
                path = rel + "/" + name if rel else name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if depth < MAX_DEPTH:
                            queue.append((path, depth + 1))
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        out[path] = (st.st_size, st.st_mtime_ns)
                except OSError:
                    continue
    return out


def changed(before, after):
    """The paths of after that are new or differ from before: the top folder first, then by name (a
    name that is not UTF-8 is left out: it could not be named to the host)."""
    return sorted((p for p, v in after.items() if before.get(p) != v and _utf8(p)), key=lambda p: (p.count("/"), p))


def _utf8(path):
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _open_beneath(root, rel):
    """An fd for root/rel opened without following any link on the way (O_NOFOLLOW at each step)."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    parts = rel.split("/")
    fd = os.open(root, flags | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in parts[:-1]:
            if part in ("", ".", ".."):
                raise OSError("bad path")
            nxt = os.open(part, flags | nofollow | getattr(os, "O_DIRECTORY", 0), dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], flags | nofollow | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
    finally:
        os.close(fd)


def read_file(root, rel, limit):
    """(size, data or None, why not) of root/rel: data when it is a regular file of at most `limit`
    bytes; None for a file that is not there (or not a regular file)."""
    try:
        fd = _open_beneath(root, rel)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        size = st.st_size
        if size > limit:
            return size, None, "too large"
        chunks = []
        got = 0
        while got <= size:
            chunk = os.read(fd, min(1 << 20, size + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        data = b"".join(chunks)
        if len(data) > size:
            return size, None, "changing"
        return len(data), data, None
    except OSError:
        return None
    finally:
        os.close(fd)


def caps(options):
    o = options if isinstance(options, dict) else {}
    out = {}
    for key, default in FILES_DEFAULTS.items():
        v = o.get(key)
        out[key] = v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else default
    return out
