#!/bin/sh
# init_crash.sh <shm_victim> <launcher...>   (issue 30, item 5)
# A PE killed by SIGKILL at each point of the join (ISHMEMI_TEST_INIT_CRASH=POINT:PE: after the
# control file, after its heap and data files, after it joined, after it mapped the others,
# the first PE and the last): the job must end (nonzero, no PASS) by itself, without waiting
# for ISHMEM_BOOTSTRAP_TIMEOUT, and leave nothing in ISHMEM_SHM_DIR (the others and the
# launcher clean what the dead PE left). The launcher runs 3 PEs.
set -u
victim=$1
shift
base=/dev/shm
dir=$(mktemp -d "$base/ishmem-crash.XXXXXX") || exit 2
out=$(mktemp "${TMPDIR:-/tmp}/init_crash.XXXXXX") || exit 2
trap 'rm -rf "$dir" "$out"' EXIT
export ISHMEM_SHM_DIR="$dir"
# far above what a job that notices the death needs: a wait for it would show in the message
export ISHMEM_BOOTSTRAP_TIMEOUT=120
fail=0
for point in ctl heap joined mapped; do
    for pe in 0 2; do
        ISHMEMI_TEST_INIT_CRASH=$point:$pe "$@" "$victim" >"$out" 2>&1
        st=$?
        sleep 0.5 # a launcher's last PEs may still be ending (mpirun signals them)
        left=$(ls -A "$dir")
        echo "crash at $point on PE $pe: exit $st, $(grep -c 'ERROR' "$out") error line(s), $(echo "$left" | grep -c .) file(s) left"
        grep "ERROR" "$out" | head -3 | sed 's/^/  /'
        if [ "$st" -eq 0 ] || grep -q '^PASS' "$out"; then
            echo "FAIL: $point:$pe: the job did not fail (the crash hook did not fire)"
            fail=1
        fi
        if grep -q "timed out" "$out"; then
            echo "FAIL: $point:$pe: a PE waited for the dead one until its timeout"
            fail=1
        fi
        if [ -n "$left" ]; then
            echo "FAIL: $point:$pe: files left in ISHMEM_SHM_DIR:"
            ls -la "$dir"
            rm -f "$dir"/*
            fail=1
        fi
    done
done
[ "$fail" = 0 ] && echo "PASS: init_crash"
exit $fail
