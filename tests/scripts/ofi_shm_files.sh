#!/bin/sh
# ofi_shm_files.sh <ishmrun> <setup binary>: issue 27 (minor). A job of 2 PEs on 2 pretend nodes
# over libfabric's shm provider, in a mount namespace with a /dev/shm of its own (root only;
# otherwise skipped), must leave nothing in /dev/shm after a clean exit. Before the fix each PE
# left its provider region, a 16 MiB file named <pid>:0:0.
set -u
run=$1
bin=$2
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null 2>&1; then
    echo "skipped: a private /dev/shm needs root and unshare"
    exit 77
fi
out=$(mktemp "${TMPDIR:-/tmp}/ofi_shm_files.XXXXXX") || exit 2
trap 'rm -f "$out"' EXIT
ISHMEM_NODE_SPLIT=2 ISHMEM_OFI_PROVIDER=shm unshare -m sh -c '
    mount --make-rprivate / 2>/dev/null
    mount -t tmpfs -o size=256m tmpfs /dev/shm || { echo "skipped: cannot mount a private /dev/shm"; exit 77; }
    timeout -k 2 60 "$1" -n 2 "$2" ISHMRUN 2
    st=$?
    echo "job status $st"
    echo "left in /dev/shm: [$(ls -A /dev/shm | tr "\n" " ")]"
    exit $st' sh "$run" "$bin" >"$out" 2>&1
st=$?
cat "$out"
grep -q "^skipped: " "$out" && exit 77
fail=0
[ "$st" -eq 0 ] || { echo "FAIL: the job ended with status $st"; fail=1; }
grep -q '^left in /dev/shm: \[\]$' "$out" || { echo "FAIL: files left in /dev/shm after a clean exit"; fail=1; }
[ "$fail" = 0 ] && echo "PASS: ofi_shm_files (nothing left in /dev/shm)"
exit $fail
