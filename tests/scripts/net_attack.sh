#!/bin/sh
# net_attack.sh <ishmrun> <net_victim> <net_attacker>
# Issue 30, item 2: a job of 2 PEs on 2 pretend nodes (ISHMEM_NODE_SPLIT=2, tcp;ofi_rxm over
# loopback, from the environment) is attacked by net_attacker, a client outside the job that
# knows only PE 1's pid (from which it finds PE 1's listening TCP ports, as a port scan would)
# and tries blind fi_read / fi_write with guessed memory keys. Passes when the attacker reached
# PE 1's endpoint and every access was refused (attacker exit 0), and the job then finds its
# markers unchanged and ends with PASS. Bounded: the job has ishmrun's 60 s timeout, the
# attacker 60 s.
set -u
run=$1
victim=$2
attacker=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/net_attack.XXXXXX") || exit 2
job=""
cleanup() {
    [ -n "$job" ] && kill "$job" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

"$run" --timeout 60 -n 2 "$victim" "$dir" >"$dir/job.out" 2>&1 &
job=$!

waited=0
while [ ! -s "$dir/pid" ] && [ "$waited" -lt 600 ]; do
    if ! kill -0 "$job" 2>/dev/null; then
        break
    fi
    sleep 0.1
    waited=$((waited + 1))
done
st=2
if [ -s "$dir/pid" ]; then
    pid=$(cat "$dir/pid")
    timeout -k 5 60 "$attacker" "$pid" 5ec7e75ec7e70001 5ec7e75ec7e70002
    st=$?
else
    echo "FAIL: the victim job did not write PE 1's pid within 60 s"
fi
touch "$dir/done"
wait "$job"
jst=$?
job=""
sed 's/^/job: /' "$dir/job.out"
fail=0
case $st in
0) echo "attacker: every access refused" ;;
1) echo "FAIL: the attacker read or wrote the victim's memory with a guessed key"; fail=1 ;;
*) echo "FAIL: the attacker could not test (exit status $st): no endpoint of PE 1 answered"; fail=1 ;;
esac
if [ "$jst" -ne 0 ]; then
    echo "FAIL: the victim job exited with status $jst"
    fail=1
fi
if ! grep -q '^PASS: net_victim (2 PEs)$' "$dir/job.out"; then
    echo "FAIL: the victim job did not pass"
    fail=1
fi
[ "$fail" -eq 0 ] && echo "PASS: net_attack"
exit $fail
