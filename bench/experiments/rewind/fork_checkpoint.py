"""Issue 35 experiment: a paused fork of a Python process as a checkpoint of its state.

Usage: python3 fork_checkpoint.py [MB] [N_OBJECTS]   (defaults 500, 1000000)
Prints JSON: fork time (p50/p90 of 20), the unshared memory a checkpoint costs right after the fork,
after the parent writes 1% of its pages, after it walks its dict (refcount writes), the extra memory
held by 10 checkpoints, and the time to wake one (restore) until it answers.
"""
import gc
import json
import os
import statistics
import sys
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[-1] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return out


def uss(pid):
    r = rollup(pid)
    return r.get("Private_Clean", 0) + r.get("Private_Dirty", 0)


def mb(n):
    return round(n / (1 << 20), 1)


def checkpoint():
    """Forks a child that blocks on a pipe: the checkpoint. Returns (pid, write end, seconds)."""
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        for other in OPEN:  # the other checkpoints' wake ends: each must see EOF when dropped
            os.close(other)
        data = os.read(r, 1)  # paused until restored (b"g") or dropped (EOF)
        if data == b"g":
            # Restored: the state is the one at the fork. Answer and leave.
            os.write(ANSWER[1], str(len(STATE["objs"])).encode())
        os._exit(0)
    dt = time.perf_counter() - t0
    os.close(r)
    OPEN.add(w)
    return pid, w, dt


def drop(cp):
    OPEN.discard(cp[1])
    os.close(cp[1])
    os.waitpid(cp[0], 0)


def touch(buf, fraction):
    n = len(buf) // PAGE
    step = max(1, int(1 / fraction))
    for i in range(0, n, step):
        buf[i * PAGE] = (buf[i * PAGE] + 1) & 0xFF


ANSWER = os.pipe()
OPEN = set()
STATE = {}


def main():
    size_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    nobj = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    buf = bytearray(size_mb << 20)
    for i in range(0, len(buf), PAGE):
        buf[i] = 1  # really allocated
    STATE["objs"] = {i: (str(i), i * 2) for i in range(nobj)}
    STATE["buf"] = buf
    gc.collect()
    me = os.getpid()
    res = {"python": sys.version.split()[0], "uid": os.getuid(), "rss_mb": mb(rollup(me)["Rss"]), "uss_mb": mb(uss(me))}

    times = []
    for _ in range(20):
        cp = checkpoint()
        times.append(cp[2] * 1000)
        drop(cp)
    times.sort()
    res["fork_ms_p50"] = round(statistics.median(times), 2)
    res["fork_ms_p90"] = round(times[17], 2)
    res["fork_ms_max"] = round(times[-1], 2)

    gc.freeze()  # as the guest could: gc never writes to the objects the checkpoint shares
    cp = checkpoint()
    time.sleep(0.05)
    res["ckpt_uss_after_fork_mb"] = mb(uss(cp[0]))
    res["ckpt_pss_after_fork_mb"] = mb(rollup(cp[0])["Pss"])
    touch(buf, 0.01)
    res["ckpt_uss_after_parent_touches_1pct_mb"] = mb(uss(cp[0]))
    s = 0
    for k, v in STATE["objs"].items():  # refcount writes on every object
        s += v[1]
    res["ckpt_uss_after_parent_walks_dict_mb"] = mb(uss(cp[0]))
    drop(cp)

    # 10 checkpoints, the parent touching 1% of its pages between each (an execution that changes 1%).
    total_before = rollup(me)["Pss"]
    cps = []
    for _ in range(10):
        cps.append(checkpoint())
        touch(buf, 0.01)
    time.sleep(0.05)
    pss = rollup(me)["Pss"] + sum(rollup(c[0])["Pss"] for c in cps)
    res["ten_ckpts_extra_mb"] = mb(pss - total_before)
    res["ten_ckpts_sum_uss_mb"] = mb(sum(uss(c[0]) for c in cps))

    # Restore: wake the oldest; it answers from its own (old) state.
    t0 = time.perf_counter()
    os.write(cps[0][1], b"g")
    OPEN.discard(cps[0][1])
    got = os.read(ANSWER[0], 64)
    res["wake_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    res["woken_answer"] = got.decode()
    os.close(cps[0][1])
    os.waitpid(cps[0][0], 0)
    for c in cps[1:]:
        drop(c)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
