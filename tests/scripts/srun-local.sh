#!/bin/bash
# srun-local.sh pmix|pmi2 NP prog [args...]: runs prog as NP tasks on the one-node private Slurm
# of the test suite (SLURM_CONF, from slurm.sh up). Prints "skipped: ..." and exits 77 where
# that Slurm cannot run (not root, slurm-wlm absent).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: srun-local.sh pmix|pmi2 NP prog [args...]" >&2; exit 2; }
mpi=$1 np=$2
shift 2
if [ -z "${SLURM_CONF:-}" ] || [ ! -f "$SLURM_CONF" ]; then
    msg=$("$here/slurm.sh" probe) || { echo "$msg"; exit 77; }
    echo "srun-local.sh: SLURM_CONF ('${SLURM_CONF:-}') is not set or not a file: start Slurm with $here/slurm.sh up DIR" >&2
    exit 2
fi
# --overcommit: more tasks than the node's CPUs (a small CI machine); -K: a failing task ends
# the step, as mpirun does.
exec "${SRUN:-srun}" --mpi="$mpi" --overcommit -K -N 1 -n "$np" "$@"
