#!/bin/sh
# Issue 35 experiment: the cost of a staging copy of a workspace (2,000 files, 256 B..16 KB, plus 50 MB),
# and of walking an overlay upper folder. Usage: sh staging_copy.sh
set -eu
B=$(mktemp -d /tmp/codeact-stage.XXXXXX)
python3 - "$B/ws" <<'PY'
import os, sys
root = sys.argv[1]
for i in range(2000):
    d = os.path.join(root, f"d{i % 40}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i}.csv"), "wb") as f:
        f.write(os.urandom(256) * (1 + i % 64))
with open(os.path.join(root, "big.bin"), "wb") as f:
    f.write(os.urandom(50 << 20))
PY
sync
t0=$(date +%s%N); cp -a "$B/ws" "$B/stage"; t1=$(date +%s%N)
echo "cp -a staging copy: $(( (t1 - t0) / 1000000 )) ms, $(du -sm "$B/stage" | cut -f1) MB"
t0=$(date +%s%N); cp -a --reflink=auto "$B/ws" "$B/stage2"; t1=$(date +%s%N)
echo "cp -a --reflink=auto (ext4: no reflink): $(( (t1 - t0) / 1000000 )) ms"
t0=$(date +%s%N); find "$B/stage" -type f -newer "$B/ws/big.bin" | wc -l >/dev/null; t1=$(date +%s%N)
echo "find over the staged copy: $(( (t1 - t0) / 1000000 )) ms"
rm -rf "$B"
