#!/bin/sh
# uid_crash.sh <uid_crash binary> <sigkill|no_finalize|bad_pe|global_exit|implicit> <npes> <limit_s>
# Starts npes copies of uid_crash with unique-id init from this script alone (no launcher).
# PE 1 dies (SIGKILL), exits with status 3 without ishmem_finalize, or makes a fatal bad call,
# while the others wait in a barrier: passes when every other PE exits nonzero within limit_s
# seconds and prints the watchdog's message naming PE 1.
# global_exit: PE 1 calls ishmem_global_exit(5) while the others wait in a barrier: every PE
# must exit with status 5, with no ERROR line. implicit: every PE returns from main without
# ishmem_finalize: every PE must exit 0, with no ERROR line.
set -u
bin=$1
mode=$2
n=$3
limit=$4
case "$mode" in
sigkill) regex='ERROR: PE 1 \(pid [0-9]+\) died or exited without calling ishmem_finalize|ERROR: ending the job because PE 1 failed \(on another node|ERROR: PE 1 \(another node\) ended without calling ishmem_finalize' ;;
no_finalize) regex='ERROR: PE 1 \(pid [0-9]+\) .*without calling ishmem_finalize|ERROR: ending the job because PE 1 failed \(on another node|ERROR: PE 1 \(another node\) ended without calling ishmem_finalize' ;;
bad_pe) regex='^\[PE [0-9]+\] ERROR: ending the job because PE 1 failed' ;;
global_exit | implicit) regex='' ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

dir=$(mktemp -d "${TMPDIR:-/tmp}/uid_crash.XXXXXX") || exit 2
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT

start=$(date +%s%N)
r=0
while [ "$r" -lt "$n" ]; do
    "$bin" "$mode" "$r" "$n" "$dir/uid" >"$dir/out.$r" 2>"$dir/err.$r" &
    pids="$pids $!"
    r=$((r + 1))
done

# A deadline: kill what is left after limit + 5 s so that the script never hangs.
( exec >/dev/null 2>&1; sleep $((limit + 5)); for p in $pids; do kill -9 "$p"; done ) &
killer=$!

fail=0
r=0
for p in $pids; do
    wait "$p"
    st=$?
    t=$((($(date +%s%N) - start) / 1000000))
    echo "PE $r (pid $p): exit status $st after $t ms"
    sed "s/^/    PE $r stderr: /" "$dir/err.$r"
    sed "s/^/    PE $r stdout: /" "$dir/out.$r"
    if [ "$mode" = global_exit ] || [ "$mode" = implicit ]; then
        want=0
        [ "$mode" = global_exit ] && want=5
        if [ "$st" -ne "$want" ]; then
            echo "FAIL: PE $r should have exited with status $want, got $st"
            fail=1
        fi
        if grep -E -q -e 'ERROR|FAIL' "$dir/err.$r"; then
            echo "FAIL: PE $r printed an error"
            fail=1
        fi
    elif [ "$r" -eq 1 ]; then
        if [ "$mode" = no_finalize ] && [ "$st" -ne 3 ]; then
            echo "FAIL: PE 1 should have exited with status 3, got $st"
            fail=1
        fi
        if [ "$mode" = sigkill ] && [ "$st" -ne 137 ]; then
            echo "FAIL: PE 1 should have died by SIGKILL (137), got $st"
            fail=1
        fi
        if [ "$mode" = bad_pe ]; then
            if [ "$st" -ne 1 ]; then
                echo "FAIL: PE 1 should have exited with status 1, got $st"
                fail=1
            fi
            if [ "$(grep -c -E '^\[PE 1\] ERROR: ishmem_int_put: pe 7 out of range \[0, '"$n"'\)$' "$dir/err.1")" -ne 1 ]; then
                echo "FAIL: PE 1 stderr lacks exactly one '[PE 1] ERROR: ishmem_int_put: pe 7 out of range [0, $n)'"
                fail=1
            fi
        fi
    else
        if [ "$st" -eq 0 ]; then
            echo "FAIL: PE $r exited 0 although PE 1 is gone"
            fail=1
        fi
        if [ "$st" -eq 137 ]; then
            echo "FAIL: PE $r was killed by the script's deadline (the library never ended it)"
            fail=1
        fi
        if ! grep -E -q -e "$regex" "$dir/err.$r"; then
            echo "FAIL: PE $r stderr lacks: $regex"
            fail=1
        fi
        if [ "$t" -gt $((limit * 1000)) ]; then
            echo "FAIL: PE $r ended after $t ms, limit $limit s"
            fail=1
        fi
    fi
    r=$((r + 1))
done
kill "$killer" 2>/dev/null
pids=""
[ "$fail" = 0 ] && echo "PASS: uid_crash $mode: every PE ended as expected"
exit $fail
