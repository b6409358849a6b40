#!/usr/bin/env bash
# on-node.sh prog [args...]: run one rank of a job inside its pretend node (pretend-nodes.sh).
#
# Used as the program of a launcher: `mpirun -np 4 on-node.sh prog args`. The rank comes
# from the first of these variables that is set:
#   ISHMEM_TEST_RANK (a plain shell loop / unique-id init; wins over an inherited launcher's),
#   OMPI_COMM_WORLD_RANK (OpenMPI), PMIX_RANK (PMIx: srun --mpi=pmix), PMI_RANK (MPICH hydra,
#   srun --mpi=pmi2), SLURM_PROCID (any srun), ISHMRUN_RANK (ishmrun).
# Its node is rank / ISHMEM_PRETEND_PPN (ranks per node, default 2) under ISHMEM_PRETEND_DIR
# (default /tmp/ishmem-pretend). Then `exec nsenter` into the node's UTS, IPC and mount
# namespaces: the same process (PID), environment, working directory and open file
# descriptors (PMI_FD of hydra and of srun --mpi=pmi2, the launcher's stdio) as the launcher
# gave.
# The program gets PRETEND_RANK, PRETEND_NODE and PRETEND_RANK_VAR (the variable the rank came
# from); ISHMEM_PRETEND_* and ISHMEM_TEST_RANK are removed from its environment (the library
# warns about ISHMEM_* names it does not know).
# ISHMEM_PRETEND_VERBOSE=1 prints where each rank goes on stderr.
set -euo pipefail

die() { echo "on-node.sh: error: $*" >&2; exit 127; }

[ $# -ge 1 ] || die "usage: on-node.sh prog [args...]"
dir=${ISHMEM_PRETEND_DIR:-/tmp/ishmem-pretend}
ppn=${ISHMEM_PRETEND_PPN:-2}
case "$ppn" in '' | *[!0-9]* | 0) die "ISHMEM_PRETEND_PPN='$ppn' is not a positive number" ;; esac

rank="" var=""
for v in ISHMEM_TEST_RANK OMPI_COMM_WORLD_RANK PMIX_RANK PMI_RANK SLURM_PROCID ISHMRUN_RANK; do
    if [ -n "${!v:-}" ]; then
        rank=${!v} var=$v
        break
    fi
done
[ -n "$var" ] || die "no rank in the environment (none of ISHMEM_TEST_RANK OMPI_COMM_WORLD_RANK PMIX_RANK PMI_RANK SLURM_PROCID ISHMRUN_RANK is set): run me under a launcher"
case "$rank" in *[!0-9]*) die "$var='$rank' is not a rank" ;; esac

node=$((rank / ppn))
d=$dir/node$node
if [ ! -f "$dir/nodes" ]; then
    die "no pretend nodes under $dir (ISHMEM_PRETEND_DIR): run pretend-nodes.sh up N $dir"
fi
if [ ! -e "$d/mnt" ]; then
    die "rank $rank ($var) at $ppn per node is on node $node, but $dir has only $(cat "$dir/nodes") nodes"
fi
if [ "${ISHMEM_PRETEND_VERBOSE:-0}" = 1 ]; then
    echo "on-node.sh: rank $rank ($var) pid $$ -> node $node ($d)" >&2
fi

export PRETEND_RANK=$rank PRETEND_NODE=$node PRETEND_RANK_VAR=$var
for v in $(compgen -e); do
    case "$v" in ISHMEM_PRETEND_* | ISHMEM_TEST_RANK) unset "$v" ;; esac
done
exec nsenter --uts="$d/uts" --ipc="$d/ipc" --mount="$d/mnt" --wd="$PWD" -- "$@"
