#!/bin/sh
# Issue 35: overlayfs inside bubblewrap's user namespace (upper+work on one pre-mounted dir), via mount(2).
set -u
B=$(mktemp -d /tmp/ovl.XXXXXX); mkdir -p $B/ws $B/stage/up $B/stage/wk; echo base > $B/ws/a.txt; echo x > $B/ws/gone
cat > $B/m.py <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
opts = b"lowerdir=/work,upperdir=/stage/up,workdir=/stage/wk"
if libc.mount(b"overlay", b"/work", b"overlay", 0, opts) != 0:
    e = ctypes.get_errno(); print("mount failed:", os.strerror(e)); sys.exit(1)
open("/work/b.txt", "w").write("new\n"); open("/work/a.txt", "a").write("changed\n"); os.unlink("/work/gone")
print("mounted-ok; inside sees", sorted(os.listdir("/work")))
PY
for caps in "--cap-add CAP_SYS_ADMIN" "--cap-drop ALL"; do
echo "== bwrap $caps as $(id -u)"
bwrap --unshare-all --unshare-user --die-with-parent --new-session $caps --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev --tmpfs /tmp \
  --bind $B/ws /work --bind $B/stage /stage --ro-bind $B/m.py /m.py -- python3 /m.py 2>&1
echo "host lower: $(ls $B/ws | tr '\n' ' ') a=$(tr '\n' '|' < $B/ws/a.txt); upper: $(ls -la $B/stage/up | tail -n +4 | awk '{print $1, $NF}' | tr '\n' ';')"
rm -rf $B/stage/up/* $B/stage/wk/*; mkdir -p $B/stage/wk
done
chmod -R u+rwx $B; rm -rf $B
