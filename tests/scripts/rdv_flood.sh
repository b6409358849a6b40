#!/bin/sh
# rdv_flood.sh ishmrun|uid <rdv_flood> <ishmrun> <shm_victim> | <uid>   (issue 30, item 4)
# A stranger (rdv_flood, run as nobody where this runs as root) opens 1,000 connections to a
# job's rendezvous server before the job's PEs connect: ishmrun's, on loopback (mode ishmrun,
# 2 PEs), or the unique-id server of the process that made the id (mode uid: `uid 2`). Half stay
# silent, half announce 1 MiB frames and send 512 KiB each. Then the PEs start (RDV_WAIT) while
# the flood is held. Passes when the job passes and the server's process grew by less than
# 64 MiB at its peak (VmHWM; before the fix it buffered every connection's frame: ~250 MiB).
set -u
mode=$1
flood=$2
shift 2
dir=$(mktemp -d "${TMPDIR:-/tmp}/rdv_flood.XXXXXX") || exit 2
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
export RDV_WAIT="$dir/go"
case $mode in
ishmrun) "$1" --timeout 90 -n 2 "$2" >"$dir/job.out" 2>&1 & want='^PASS: shm_victim \(2 PEs\)$' ;;
uid) "$1" 2 >"$dir/job.out" 2>&1 & want='^PASS: uid driver \(2 children\)$' ;;
*) echo "usage: rdv_flood.sh ishmrun|uid <rdv_flood> <prog...>" >&2; exit 2 ;;
esac
job=$!
port=""
for _ in $(seq 200); do
    port=$(ss -ltnpH 2>/dev/null | grep "pid=$job," | awk '{print $4}' | sed 's/.*://' | head -1)
    [ -n "$port" ] && break
    sleep 0.05
done
if [ -z "$port" ]; then
    echo "FAIL: no listening port of the server's process $job"
    touch "$RDV_WAIT"
    wait $job
    exit 1
fi
kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$job/status"; }
base=$(kb VmRSS)
run_flood() {
    if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$flood" "$@"
    else
        "$flood" "$@"
    fi
}
run_flood "$port" 1000 6 >"$dir/flood.out" 2>&1 &
fl=$!
for _ in $(seq 300); do
    grep -q ready "$dir/flood.out" && break
    sleep 0.05
done
peak=$(kb VmHWM)
touch "$RDV_WAIT"
# the peak of the server's process while the flood is held and the job runs
while kill -0 $job 2>/dev/null; do
    p=$(kb VmHWM 2>/dev/null)
    [ -n "$p" ] && peak=$p
    sleep 0.1
done
wait $job
st=$?
wait $fl
fst=$?
sed 's/^/job: /' "$dir/job.out"
cat "$dir/flood.out"
grow=$(((peak - base) / 1024))
echo "$mode server (pid $job, port $port): VmRSS ${base} kB before the flood, peak VmHWM ${peak} kB: grew ${grow} MiB"
fail=0
if [ "$fst" -ne 0 ]; then
    echo "FAIL: the flood could not be made (rdv_flood status $fst)"
    fail=1
fi
if [ "$st" -ne 0 ] || ! grep -Eq "$want" "$dir/job.out"; then
    echo "FAIL: the job did not start and pass under the flood (status $st)"
    fail=1
fi
if [ "$grow" -ge 64 ]; then
    echo "FAIL: the server's process grew by $grow MiB under the flood (limit 64)"
    fail=1
fi
[ "$fail" = 0 ] && echo "PASS: rdv_flood $mode"
exit $fail
