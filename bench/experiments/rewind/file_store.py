"""Issue 35 experiment: a content-addressed store of a writable folder, kept by stat scans.

Usage: python3 file_store.py [FILES]   (default 2000; a 50 MB file is added and never touched)
Makes a tree under a temporary folder, takes a baseline (hash and copy every file), scans again with
nothing changed, changes it (edits, a chmod, a rename, deletions, new files, a new folder), scans and
stores the changed files, then restores the baseline byte for byte with modes, and checks that the
untouched 50 MB file kept its inode and mtime. Prints JSON with the timings.
"""
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time


def walk(root):
    """{relative path: (ino, size, mtime_ns, ctime_ns, mode)} of every regular file."""
    out = {}
    for d, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                out[os.path.relpath(p, root)] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
    return out


def put(store, path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    dest = os.path.join(store, digest[:2], digest)
    if not os.path.exists(dest):
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = dest + ".tmp"
        shutil.copyfile(path, tmp)
        os.rename(tmp, dest)
    return digest


def snapshot(root, store, prev=None):
    """A manifest {path: (stat key, digest)}; only files whose stat key changed are hashed and stored."""
    man = {}
    hashed = 0
    for rel, key in walk(root).items():
        old = prev.get(rel) if prev else None
        if old is not None and old[0] == key:
            man[rel] = old
        else:
            man[rel] = (key, put(store, os.path.join(root, rel)))
            hashed += 1
    return man, hashed


def restore(root, store, man):
    """Puts back every file of `man` whose stat key differs; removes files that `man` does not hold."""
    now = walk(root)
    wrote = removed = 0
    for rel in now:
        if rel not in man:
            os.unlink(os.path.join(root, rel))
            removed += 1
    for rel, (key, digest) in man.items():
        if now.get(rel) == key:
            continue  # untouched: same inode, same mtime
        dest = os.path.join(root, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = os.path.join(os.path.dirname(dest), f".codeact-restore-{os.getpid()}")
        shutil.copyfile(os.path.join(store, digest[:2], digest), tmp)
        os.chmod(tmp, stat.S_IMODE(key[4]))
        os.utime(tmp, ns=(key[2], key[2]))
        os.replace(tmp, dest)
        wrote += 1
    # Folders the code made and that hold nothing of the baseline go too.
    for d, dirs, files in os.walk(root, topdown=False):
        if d != root and not os.listdir(d) and not any(k.startswith(os.path.relpath(d, root) + os.sep) for k in man):
            os.rmdir(d)
    return wrote, removed


def ms(t0):
    return round((time.perf_counter() - t0) * 1000, 1)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    base = tempfile.mkdtemp(prefix="codeact-rewind-")
    root, store = os.path.join(base, "ws"), os.path.join(base, "store")
    res = {"uid": os.getuid(), "files": n}
    for i in range(n):
        d = os.path.join(root, f"d{i % 40}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}.csv"), "wb") as f:
            f.write(os.urandom(256) * (1 + i % 64))  # 256 B .. 16 KB
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(os.urandom(50 << 20))
    big0 = os.stat(os.path.join(root, "big.bin"))
    res["tree_mb"] = round(sum(k[1] for k in walk(root).values()) / (1 << 20), 1)

    t0 = time.perf_counter()
    man0, hashed = snapshot(root, store)
    res["baseline_ms"], res["baseline_hashed"] = ms(t0), hashed
    t0 = time.perf_counter()
    same, hashed = snapshot(root, store, man0)
    res["rescan_unchanged_ms"], res["rescan_unchanged_hashed"] = ms(t0), hashed

    # An execution: 10 edits (one keeps its size), a chmod, a rename, 5 deletions, 20 new files in a new folder.
    for i in range(10):
        p = os.path.join(root, f"d{i % 40}", f"f{i}.csv")
        with open(p, "r+b") as f:
            f.write(b"X" * 16)  # same size, mtime may not move past the clock's tick
    os.chmod(os.path.join(root, "d11", "f11.csv"), 0o600)
    os.rename(os.path.join(root, "d12", "f12.csv"), os.path.join(root, "d12", "renamed.csv"))
    for i in range(13, 18):
        os.unlink(os.path.join(root, f"d{i % 40}", f"f{i}.csv"))
    os.makedirs(os.path.join(root, "outputs"))
    for i in range(20):
        with open(os.path.join(root, "outputs", f"o{i}.txt"), "w") as f:
            f.write("out")
    t0 = time.perf_counter()
    man1, hashed = snapshot(root, store, man0)
    res["rescan_after_change_ms"], res["rescan_after_change_hashed"] = ms(t0), hashed
    res["changed_seen"] = sorted(set(man1) ^ set(man0)) != [] and sum(1 for k in man1 if k in man0 and man1[k] != man0[k])

    t0 = time.perf_counter()
    wrote, removed = restore(root, store, man0)
    res["restore_ms"], res["restore_wrote"], res["restore_removed"] = ms(t0), wrote, removed
    after = walk(root)
    ok = set(after) == set(man0)
    for rel, (key, digest) in man0.items():
        with open(os.path.join(root, rel), "rb") as f:
            ok = ok and hashlib.sha256(f.read()).hexdigest() == digest
        ok = ok and after[rel][4] == key[4]
    res["restored_bytes_and_modes_equal"] = ok
    res["no_outputs_folder"] = not os.path.exists(os.path.join(root, "outputs"))
    big1 = os.stat(os.path.join(root, "big.bin"))
    res["big_same_inode_mtime"] = (big0.st_ino, big0.st_mtime_ns) == (big1.st_ino, big1.st_mtime_ns)
    res["store_mb"] = round(sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(store) for f in fs) / (1 << 20), 1)
    shutil.rmtree(base)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
