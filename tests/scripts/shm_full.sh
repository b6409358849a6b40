#!/bin/sh
# shm_full.sh <ishmrun> <shmfull binary>: issue 27, item 5. Mounts a 48 MiB tmpfs (root only;
# otherwise skipped), runs 2 PEs that each allocate and fill 30 MiB with ISHMEM_SHM_DIR there,
# and passes when the job ends nonzero with the library's error naming the directory and
# ISHMEM_SHM_DIR, and no PE died of SIGBUS. Before the fix: the first write past the tmpfs's
# end killed a PE with SIGBUS and no message.
set -u
run=$1
bin=$2
if [ "$(id -u)" != 0 ]; then
    echo "skipped: mounting a small tmpfs needs root"
    exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/shm_full.XXXXXX") || exit 2
out=$dir.out
cleanup() {
    umount "$dir" 2>/dev/null
    rmdir "$dir" 2>/dev/null
    rm -f "$out"
}
trap cleanup EXIT
if ! mount -t tmpfs -o size=48m tmpfs "$dir" 2>"$out"; then
    echo "skipped: cannot mount a tmpfs here: $(cat "$out")"
    exit 77
fi
ISHMEM_SHM_DIR=$dir timeout -k 2 60 "$run" -n 2 "$bin" 30 >"$out" 2>&1
st=$?
cat "$out"
fail=0
if [ "$st" -eq 0 ]; then
    echo "FAIL: the job exited 0 although 60 MiB cannot fit a 48 MiB tmpfs"
    fail=1
fi
if grep -q -i -E 'SIGBUS|signal 7|bus error' "$out" || [ "$st" -eq 135 ]; then
    echo "FAIL: a PE died of SIGBUS"
    fail=1
fi
if ! grep -q -E "^\[PE [01]\] ERROR: ishmem_malloc: cannot reserve [0-9]+ bytes for a block of the symmetric heap in $dir \(ISHMEM_SHM_DIR\): No space left on device" "$out"; then
    echo "FAIL: no line names the directory and ISHMEM_SHM_DIR"
    fail=1
fi
if [ -n "$(ls -A "$dir")" ]; then
    echo "FAIL: files left in $dir: $(ls -A "$dir")"
    fail=1
fi
[ "$fail" = 0 ] && echo "PASS: shm_full (status $st, clear error, no SIGBUS)"
exit $fail
