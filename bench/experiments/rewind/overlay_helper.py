"""Issue 35, review mode: one overlay per runtime, held by a helper process, every sandbox entered into it.

A small helper (this file, `helper` mode) makes a user and mount namespace of its own (the caller's uid mapped
to itself), mounts an overlay over the workspace there (lower = the workspace, upper + work = a private folder
of the host's), and waits. Each sandbox is then started with `nsenter -t HELPER -U -m --preserve-credentials
-- bwrap …`: bwrap runs as the same uid with no capability, as it does today, and binds the workspace path,
which in that namespace is the overlay. The host reads and writes the merged view through
/proc/HELPER/root/<workspace> (Keep: merged -> workspace; Revert: workspace -> merged, through the overlay,
never behind its back).

Usage: python3 overlay_helper.py            (as root and as the unprivileged user: `runuser -u tester -- …`)
Prints one JSON line of facts and timings.
"""
import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18


def helper(ws, upper, work):
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1\n")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1\n")
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "make-rprivate")
    opts = f"lowerdir={ws},upperdir={upper},workdir={work},userxattr".encode()
    if libc.mount(b"overlay", ws.encode(), b"overlay", 0, opts) != 0:
        raise OSError(ctypes.get_errno(), "mount overlay")
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.read()  # until the host lets go


def tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, n)
            st = os.lstat(p)
            h = hashlib.sha256(open(p, "rb").read()).hexdigest()[:12] if os.path.isfile(p) and not os.path.islink(p) else "-"
            out[os.path.relpath(p, root)] = (st.st_ino, st.st_mtime_ns, h)
    return out


def main():
    base = tempfile.mkdtemp(prefix="ovlh.")
    os.chmod(base, 0o755)
    ws, upper, work = (os.path.join(base, n) for n in ("ws", "up", "wk"))
    for d in (ws, upper, work):
        os.makedirs(d)
    os.makedirs(os.path.join(ws, ".git"))
    for name, text in (("a.txt", "base\n"), ("gone.txt", "x\n"), ("keep.txt", "k\n"), (".git/config", "[core]\n")):
        with open(os.path.join(ws, name), "w") as f:
            f.write(text)
    before = tree(ws)
    t0 = time.perf_counter()
    h = subprocess.Popen([sys.executable, "-I", "-S", __file__, "helper", ws, upper, work], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = h.stdout.readline().strip()
    helper_ms = (time.perf_counter() - t0) * 1000
    facts = {"uid": os.getuid(), "helper": ready, "helper_start_ms": round(helper_ms, 1)}
    code = (
        "import os,subprocess;open('a.txt','a').write('more\\n');open('b.txt','w').write('new\\n');os.remove('gone.txt');os.mkdir('d');"
        "subprocess.run(['sh','-c','echo side > side.txt']);"
        "r=[]\n"
        "try:\n open('.git/config','a').write('x')\nexcept OSError as e: r.append(type(e).__name__)\n"
        "print(os.getuid(), sorted(os.listdir('.')), r)"
    )
    bw = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
          "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
          "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", ws, ws, "--ro-bind", f"{ws}/.git", f"{ws}/.git", "--chdir", ws,
          "--", "/usr/bin/python3", "-I", "-c", code]
    t1 = time.perf_counter()
    r = subprocess.run(["nsenter", "-t", str(h.pid), "-U", "-m", "--preserve-credentials", "--"] + bw, capture_output=True, text=True)
    facts["sandbox_ms"] = round((time.perf_counter() - t1) * 1000, 1)
    # What entering the helper's namespaces adds to a sandbox's start: `true` in bwrap, with and without nsenter (p50 of 20).
    for name, pre in (("bwrap_true_ms_p50", []), ("nsenter_bwrap_true_ms_p50", ["nsenter", "-t", str(h.pid), "-U", "-m", "--preserve-credentials", "--"])):
        ts = []
        for _ in range(20):
            t2 = time.perf_counter()
            subprocess.run(pre + bw[:-5] + ["--", "/usr/bin/true"], capture_output=True, check=True)
            ts.append((time.perf_counter() - t2) * 1000)
        facts[name] = round(sorted(ts)[10], 1)
    facts["inside"] = (r.stdout.strip() or r.stderr.strip())[:400]
    facts["lower_unchanged"] = tree(ws) == before
    facts["upper"] = sorted(
        f"{os.path.relpath(os.path.join(d, n), upper)}:{'whiteout' if os.path.exists(os.path.join(d, n)) and not os.path.isfile(os.path.join(d, n)) and not os.path.isdir(os.path.join(d, n)) else 'dir' if os.path.isdir(os.path.join(d, n)) else 'file'}"
        for d, dirs, files in os.walk(upper) for n in files + dirs
    )
    merged = f"/proc/{h.pid}/root{ws}"
    try:
        facts["merged_seen_by_host"] = sorted(os.listdir(merged))
        # Keep b.txt (merged -> workspace), Revert a.txt (workspace -> merged, through the overlay), Revert gone.txt.
        shutil.copy2(os.path.join(merged, "b.txt"), os.path.join(ws, "b.txt"))
        shutil.copy2(os.path.join(ws, "a.txt"), os.path.join(merged, "a.txt"))
        shutil.copy2(os.path.join(ws, "gone.txt"), os.path.join(merged, "gone.txt"))
        os.remove(os.path.join(merged, "side.txt"))
        facts["after_keep_revert_merged"] = sorted(os.listdir(merged))
        facts["a_in_merged"] = open(os.path.join(merged, "a.txt")).read()
        facts["ws_now"] = sorted(os.listdir(ws))
        # The person edits keep.txt in the workspace while the overlay is mounted: does the sandbox see it?
        with open(os.path.join(ws, "keep.txt"), "w") as f:
            f.write("edited by the person\n")
        facts["user_edit_seen_in_merged"] = open(os.path.join(merged, "keep.txt")).read()
        with open(os.path.join(ws, "fresh.txt"), "w") as f:
            f.write("made by the person\n")
        facts["user_new_file_seen_in_merged"] = os.path.exists(os.path.join(merged, "fresh.txt"))
    except OSError as e:
        facts["host_access"] = f"{type(e).__name__}: {e}"
    h.stdin.close()
    h.wait()
    subprocess.run(["chmod", "-R", "u+rwx", base])
    shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(facts))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "helper":
        helper(*sys.argv[2:5])
    else:
        main()
