#!/usr/bin/env bash
# pretend-check.sh LAUNCHER [NP [PPN]]: checks that the pretend nodes (ISHMEM_PRETEND_DIR) and
# the launcher (run-pretend.sh's names) put NP ranks (default 4), PPN per node (default 2),
# on separate nodes: every rank of node k has hostname ishmem-node<k>, and the ranks of one
# node share one IPC and mount namespace and one /dev/shm, which no other node and not the
# host sees. Runs pretend-payload.sh as the ranks, then looks into each node's /dev/shm
# itself, and cleans it. Under mpiexec and srun-pmi2 every rank also exchanges its hostname
# through the launcher's PMI-1 key-value store (PMI_FD) and must read back every rank's. Prints "PASS: pretend.<launcher> ..." or "FAIL: ..." lines; exits 0
# when all is right, 1 when not, 77 ("skipped: ...") where the pretend nodes (or Slurm, for
# srun-pmix and srun-pmi2) cannot run here (run-pretend.sh says so).
set -euo pipefail

launcher=${1:?usage: pretend-check.sh LAUNCHER [NP [PPN]]}
np=${2:-4}
ppn=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
dir=${ISHMEM_PRETEND_DIR:-/tmp/ishmem-pretend}
export ISHMEM_PRETEND_DIR=$dir

tag=$launcher-$$
prefix=ishmem-pretend-$tag-r
out=$(mktemp "${TMPDIR:-/tmp}/pretend-check.XXXXXX")
nodes=$(((np + ppn - 1) / ppn))
cleanup() {
    rm -f "$out"
    local k
    for ((k = 0; k < nodes; k++)); do
        "$here/pretend-nodes.sh" enter "$dir" "$k" sh -c "rm -f /dev/shm/$prefix*" 2>/dev/null || true
    done
    rm -f /dev/shm/"$prefix"* 2>/dev/null || true
}
trap cleanup EXIT

fails=0
fail() {
    echo "FAIL: pretend.$launcher: $*"
    fails=$((fails + 1))
}

echo "pretend-check.sh: $launcher, $np ranks, $ppn per node, nodes under $dir"
status=0
ISHMEM_PRETEND_TIMEOUT=${ISHMEM_PRETEND_TIMEOUT:-60} \
    "$here/run-pretend.sh" "$launcher" "$np" "$ppn" "$here/pretend-payload.sh" "$tag" "$np" "$ppn" \
    >"$out" 2>&1 || status=$?
cat "$out"
if [ "$status" = 77 ] && grep -q '^skipped: ' "$out"; then
    exit 77
fi
[ "$status" = 0 ] || fail "the job exited with status $status"

host_ipc=$(readlink /proc/self/ns/ipc)
host_mnt=$(readlink /proc/self/ns/mnt)
declare -A node_ipc node_mnt seen_rank
for ((r = 0; r < np; r++)); do
    line=$(grep -E "^PRETEND rank=$r " "$out" || true)
    count=$(printf '%s' "$line" | grep -c . || true)
    if [ "$count" != 1 ]; then
        fail "rank $r printed $count PRETEND lines (want 1)"
        continue
    fi
    field() { printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    k=$((r / ppn))
    first=$((k * ppn))
    last=$((first + ppn - 1 < np - 1 ? first + ppn - 1 : np - 1))
    want_shm=$(for ((q = first; q <= last; q++)); do echo "$prefix$q"; done | paste -sd, -)
    host=$(field host) ipc=$(field ipc) mnt=$(field mnt) shm=$(field shm)
    [ "$host" = "ishmem-node$k" ] || fail "rank $r: hostname '$host', want ishmem-node$k"
    [ "$ipc" != "$host_ipc" ] || fail "rank $r: runs in the host's IPC namespace $ipc"
    [ "$mnt" != "$host_mnt" ] || fail "rank $r: runs in the host's mount namespace $mnt"
    [ "$shm" = "$want_shm" ] || fail "rank $r: /dev/shm shows '$shm', want '$want_shm'"
    if [ "$launcher" = mpiexec ] || [ "$launcher" = srun-pmi2 ]; then
        kvs=$(field kvs)
        want_kvs=$(for ((q = 0; q < np; q++)); do echo "ishmem-node$((q / ppn))"; done | paste -sd, -)
        [ "$kvs" = "$want_kvs" ] || fail "rank $r: the PMI-1 key-value exchange gave hostnames '$kvs', want '$want_kvs'"
    fi
    if [ -z "${node_ipc[$k]:-}" ]; then
        node_ipc[$k]=$ipc node_mnt[$k]=$mnt
    else
        [ "$ipc" = "${node_ipc[$k]}" ] || fail "rank $r: IPC namespace $ipc differs from ${node_ipc[$k]} of node $k's other ranks"
        [ "$mnt" = "${node_mnt[$k]}" ] || fail "rank $r: mount namespace $mnt differs from ${node_mnt[$k]} of node $k's other ranks"
    fi
done
for ((k = 0; k < nodes; k++)); do
    for ((j = k + 1; j < nodes; j++)); do
        if [ -n "${node_ipc[$k]:-}" ] && [ "${node_ipc[$k]}" = "${node_ipc[$j]:-}" ]; then
            fail "nodes $k and $j share IPC namespace ${node_ipc[$k]}"
        fi
    done
    # what the node's /dev/shm holds after the job, seen from outside the job
    first=$((k * ppn))
    last=$((first + ppn - 1 < np - 1 ? first + ppn - 1 : np - 1))
    want=$(for ((q = first; q <= last; q++)); do echo "$prefix$q"; done | paste -sd, -)
    got=$("$here/pretend-nodes.sh" enter "$dir" "$k" sh -c "cd /dev/shm && ls -1 -- $prefix* 2>/dev/null" |
        sort -V | paste -sd, - || true)
    [ "$got" = "$want" ] || fail "node $k's /dev/shm holds '$got' after the job, want '$want'"
done
leak=$(cd /dev/shm && ls -1 -- "$prefix"* 2>/dev/null | paste -sd, - || true)
[ -z "$leak" ] || fail "the host's /dev/shm holds '$leak'"

if [ "$fails" = 0 ]; then
    echo "PASS: pretend.$launcher ($np ranks on $nodes nodes of $ppn: hostnames, IPC and mount namespaces, /dev/shm separate$(case $launcher in mpiexec | srun-pmi2) echo "; PMI-1 exchange across nodes" ;; esac); nothing in the host's /dev/shm)"
    exit 0
fi
exit 1
