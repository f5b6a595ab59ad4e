"""Issue 35 experiment: fork time of a process holding 500 MB of private anonymous memory, 4 KB pages
versus transparent huge pages (MADV_HUGEPAGE). Usage: python3 fork_thp.py
"""
import mmap
import os
import statistics
import time


def run(huge):
    m = mmap.mmap(-1, 500 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if huge: m.madvise(mmap.MADV_HUGEPAGE)
    for i in range(0, len(m), 4096): m[i] = 1
    ts = []
    for _ in range(20):
        t = time.perf_counter(); pid = os.fork()
        if pid == 0: os._exit(0)
        ts.append((time.perf_counter() - t) * 1000); os.waitpid(pid, 0)
    ah = [l for l in open('/proc/self/smaps_rollup') if l.startswith('AnonHugePages')][0].split()[1]
    m.close()
    return round(statistics.median(ts), 2), int(ah) >> 10
print("500 MB mmap, 4K pages: fork p50 ms, AnonHuge MB", run(False))
print("500 MB mmap, MADV_HUGEPAGE: fork p50 ms, AnonHuge MB", run(True))
