#!/usr/bin/env bash
# run-pretend.sh LAUNCHER NP PPN prog [args...]: run prog as NP ranks, PPN per pretend node
# (ranks 0..PPN-1 on node 0, and so on), under one launcher:
#   mpirun      OpenMPI: mpirun.openmpi --allow-run-as-root --oversubscribe -np NP
#   mpiexec     MPICH hydra (PMI-1): mpiexec.mpich -n NP
#   srun-pmix   Slurm, PMIx: srun --mpi=pmix -n NP     (needs SLURM_CONF: slurm.sh up DIR)
#   srun-pmi2   Slurm, PMI-2: srun --mpi=pmi2 -n NP
#   uid-loop    no launcher: a shell loop starts NP processes with ISHMEM_TEST_RANK=<rank>
#               (unique-id init); in args, @RANK@ becomes the rank
#   ishmrun     ishmrun -n NP (ISHMRUN, default `ishmrun` from PATH)
# Every rank runs `on-node.sh prog args` (it enters its node). In args, @NP@ becomes NP.
#
# Environment:
#   ISHMEM_PRETEND_DIR      the nodes (pretend-nodes.sh up N DIR); default /tmp/ishmem-pretend
#   ISHMEM_PRETEND_TIMEOUT  seconds before the job is killed (status 124); default 120
#   ISHMEM_PRETEND_LAUNCHER_ARGS  extra launcher options (split on spaces)
#   MPIRUN, MPIEXEC, SRUN, ISHMRUN  the launcher programs
# None of ISHMEM_PRETEND_* reaches prog. Exits with the launcher's status (uid-loop: the first
# nonzero status of a rank, in rank order; 124 on timeout); with 77 and a line "skipped: ..."
# where pretend nodes (or, for srun, a private Slurm) cannot run here (not root, ...); with 2
# when they could but are not up.
set -euo pipefail

die() { echo "run-pretend.sh: error: $*" >&2; exit 2; }
[ $# -ge 4 ] || die "usage: run-pretend.sh mpirun|mpiexec|srun-pmix|srun-pmi2|uid-loop|ishmrun NP PPN prog [args...]"
launcher=$1 np=$2 ppn=$3
shift 3
case "$np" in '' | *[!0-9]* | 0) die "NP='$np' is not a positive number" ;; esac
case "$ppn" in '' | *[!0-9]* | 0) die "PPN='$ppn' is not a positive number" ;; esac

here=$(cd "$(dirname "$0")" && pwd)
on_node=$here/on-node.sh
export ISHMEM_PRETEND_DIR=${ISHMEM_PRETEND_DIR:-/tmp/ishmem-pretend}
export ISHMEM_PRETEND_PPN=$ppn
dir=$ISHMEM_PRETEND_DIR
timeout_s=${ISHMEM_PRETEND_TIMEOUT:-120}
read -r -a extra <<<"${ISHMEM_PRETEND_LAUNCHER_ARGS:-}"

# Where pretend nodes (or Slurm) cannot run here at all, say so and exit 77 (skipped).
if [ ! -f "$dir/nodes" ]; then
    msg=$("$here/pretend-nodes.sh" probe) || { echo "$msg"; exit 77; }
    die "no pretend nodes under $dir: run $here/pretend-nodes.sh up N $dir (as root) or set ISHMEM_PRETEND_DIR"
fi
need=$(((np + ppn - 1) / ppn))
have=$(cat "$dir/nodes")
[ "$have" -ge "$need" ] || die "$np ranks at $ppn per node need $need nodes; $dir has $have"

args=()
for a in "$@"; do args+=("${a//@NP@/$np}"); done

have_prog() { command -v "$1" >/dev/null 2>&1 || die "$2"; }

case "$launcher" in
mpirun)
    mpirun=${MPIRUN:-$(command -v mpirun.openmpi || echo mpirun)}
    have_prog "$mpirun" "OpenMPI's mpirun ($mpirun) is not installed (Debian: openmpi-bin)"
    cmd=("$mpirun" --allow-run-as-root --oversubscribe -np "$np")
    ;;
mpiexec)
    mpiexec=${MPIEXEC:-mpiexec.mpich}
    have_prog "$mpiexec" "MPICH's mpiexec ($mpiexec) is not installed (Debian: mpich)"
    cmd=("$mpiexec" -n "$np")
    ;;
srun-pmix | srun-pmi2)
    srun=${SRUN:-srun}
    have_prog "$srun" "srun is not installed (Debian: slurm-client)"
    if [ -z "${SLURM_CONF:-}" ] || [ ! -f "$SLURM_CONF" ]; then
        msg=$("$here/slurm.sh" probe) || { echo "$msg"; exit 77; }
        die "SLURM_CONF ('${SLURM_CONF:-}') is not set or not a file: start Slurm with $here/slurm.sh up DIR, then '. DIR/env'"
    fi
    # --overcommit: more ranks than the node's CPUs (a small CI machine)
    cmd=("$srun" --mpi="${launcher#srun-}" --overcommit -N 1 -n "$np")
    ;;
ishmrun)
    ishmrun=${ISHMRUN:-ishmrun}
    have_prog "$ishmrun" "ishmrun ($ishmrun) not found: set ISHMRUN"
    cmd=("$ishmrun" -n "$np")
    ;;
uid-loop) ;;
*) die "unknown launcher '$launcher' (mpirun, mpiexec, srun-pmix, srun-pmi2, uid-loop, ishmrun)" ;;
esac

if [ "$launcher" != uid-loop ]; then
    exec timeout -k 10 "$timeout_s" "${cmd[@]}" "${extra[@]}" "$on_node" "${args[@]}"
fi

# uid-loop: NP processes started by this shell, each told its rank by ISHMEM_TEST_RANK.
pids=()
killer=""
cleanup() {
    [ -n "$killer" ] && kill "$killer" 2>/dev/null || true
    for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for ((r = 0; r < np; r++)); do
    ra=()
    for a in "${args[@]}"; do ra+=("${a//@RANK@/$r}"); done
    # each rank leads its own process group (setsid does not fork here: a background job of
    # a script is no group leader), so that a timeout ends what the rank started too
    ISHMEM_TEST_RANK=$r setsid "$on_node" "${ra[@]}" &
    pids+=($!)
done
flag=$(mktemp "${TMPDIR:-/tmp}/run-pretend.XXXXXX")
rm -f "$flag"
(
    exec >/dev/null 2>&1
    # its sleeps must not outlive it when it is stopped early
    sp=""
    trap '[ -z "$sp" ] || kill "$sp" 2>/dev/null; exit 0' TERM
    nap() { sleep "$1" & sp=$!; wait "$sp"; }
    nap "$timeout_s"
    : >"$flag"
    for p in "${pids[@]}"; do kill -TERM -- "-$p"; done
    nap 10
    for p in "${pids[@]}"; do kill -KILL -- "-$p"; done
) &
killer=$!
status=0
for ((r = 0; r < np; r++)); do
    s=0
    wait "${pids[$r]}" || s=$?
    if [ "$s" != 0 ]; then
        echo "run-pretend.sh: rank $r (pid ${pids[$r]}) exited with status $s" >&2
        [ "$status" != 0 ] || status=$s
    fi
done
if [ -e "$flag" ]; then
    rm -f "$flag"
    echo "run-pretend.sh: uid-loop job timed out after $timeout_s s" >&2
    status=124
fi
# nothing may outlive the job: say so, and end the ranks' process groups
for ((r = 0; r < np; r++)); do
    if kill -0 -- "-${pids[$r]}" 2>/dev/null; then
        echo "run-pretend.sh: rank $r left processes behind (process group ${pids[$r]}): killing them" >&2
        kill -KILL -- "-${pids[$r]}" 2>/dev/null || true
    fi
done
pids=()
exit "$status"
