#!/bin/sh
# shm_clean.sh <ishmrun> <setup> <bad_input>: with ISHMEM_SHM_DIR set to a private directory,
# no file is left there after a job that ends normally, one that ends with a fatal error,
# and one whose PE was killed by SIGKILL.
set -u
run=$1
setup=$2
bad=$3
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
dir=$(mktemp -d "$base/ishmem-test-shm.XXXXXX") || exit 2
trap 'rm -rf "$dir"' EXIT
export ISHMEM_SHM_DIR="$dir"
fail=0
check() { # what
    left=$(ls -A "$dir")
    if [ -n "$left" ]; then
        echo "FAIL: $1: files left in ISHMEM_SHM_DIR=$dir:"
        ls -la "$dir"
        rm -rf "$dir"/* "$dir"/.[!.]* 2>/dev/null
        fail=1
    else
        echo "ok: $1: nothing left in $dir"
    fi
}
# the variable is used: a directory that does not exist makes init fail and names it
if ISHMEM_SHM_DIR=/nonexistent-ishmem-dir "$run" --timeout 60 -n 2 "$setup" ISHMRUN 2 2>"$dir.err"; then
    echo "FAIL: init succeeded with ISHMEM_SHM_DIR=/nonexistent-ishmem-dir"
    fail=1
elif ! grep -q "ERROR: ishmem_init: .*/nonexistent-ishmem-dir" "$dir.err"; then
    echo "FAIL: the init error does not name ISHMEM_SHM_DIR:"
    cat "$dir.err"
    fail=1
fi
rm -f "$dir.err"
"$run" --timeout 60 -n 4 "$setup" ISHMRUN 4 || { echo "FAIL: setup job failed"; fail=1; }
check "a normal job"
"$run" --timeout 60 -n 2 "$bad" pe_range 2>/dev/null && { echo "FAIL: pe_range exited 0"; fail=1; }
check "a job ended by a fatal error"
"$run" --timeout 60 -n 3 "$bad" sigkill 2>/dev/null && { echo "FAIL: sigkill exited 0"; fail=1; }
sleep 1 # the survivors' watchdogs end them within ~1 s
check "a job with a PE killed by SIGKILL"
[ "$fail" = 0 ] && echo "PASS: shm_clean"
exit $fail
