#!/bin/sh
# Issue 35: the host mounts the overlay in a user namespace of its own (unshare -Urm), then starts bwrap inside it.
set -u
B=$(mktemp -d /tmp/ovl.XXXXXX); mkdir -p $B/ws $B/up $B/wk $B/merged; echo base > $B/ws/a.txt; echo x > $B/ws/gone
echo "== as $(id -u)"
unshare -Urm sh -c "mount -t overlay overlay -o lowerdir=$B/ws,upperdir=$B/up,workdir=$B/wk $B/merged && \
 bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session --cap-drop ALL --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev --tmpfs /tmp \
  --bind $B/merged /work -- sh -c 'echo new > /work/b.txt; echo changed >> /work/a.txt; rm /work/gone; mkdir /work/d; echo inside: \$(ls /work)'" 2>&1
echo "host lower: $(ls $B/ws | tr '\n' ' ') a=$(tr '\n' '|' < $B/ws/a.txt); upper: $(ls -la $B/up | tail -n +4 | awk '{print $1, $3, $NF}' | tr '\n' ';')"
chmod -R u+rwx $B; rm -rf $B  # the overlay workdir leaves a mode-000 folder
