#!/usr/bin/env bash
# pretend-payload.sh TAG NP PPN: one rank of the pretend-node check (run by on-node.sh under a
# launcher; see pretend-check.sh). Creates /dev/shm/ishmem-pretend-TAG-r<rank>, waits (at most
# 30 s) until the files of every rank of its node are there, and prints one line:
#   PRETEND rank=<r> node=<n> var=<rank variable> pid=<pid> host=<hostname>
#           ipc=<ipc ns> mnt=<mount ns> uts=<uts ns> shm=<the TAG files it sees in /dev/shm>
#           [kvs=<every rank's hostname, as read back from the launcher's key-value store>]
# kvs= only where the launcher hands the rank a PMI-1 socket (PMI_FD: MPICH hydra, srun
# --mpi=pmi2): each rank puts its hostname, all meet in a PMI barrier, each gets every rank's,
# which checks that the launcher's descriptor and key-value exchange work across nodes.
# The files are left for pretend-check.sh to inspect and remove.
set -euo pipefail
tag=$1 np=$2 ppn=$3
rank=${PRETEND_RANK:?pretend-payload.sh: PRETEND_RANK is not set: run me through on-node.sh}
node=$((rank / ppn))
first=$((node * ppn))
here=$((np - first < ppn ? np - first : ppn))
prefix=ishmem-pretend-$tag-r
: >"/dev/shm/$prefix$rank"

seen() { (cd /dev/shm && ls -1 -- "$prefix"* 2>/dev/null || true) | sort -V | paste -sd, -; }
deadline=$((SECONDS + 30))
while :; do
    list=$(seen)
    n=$(echo "$list" | tr ',' '\n' | grep -c . || true)
    [ "$n" -ge "$here" ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "pretend-payload.sh: rank $rank: after 30 s /dev/shm has only '$list' of the $here ranks of node $node" >&2
        break
    fi
    sleep 0.05
done
# PMI-1 wire protocol on $PMI_FD (every reply read within 30 s)
pmi() {
    printf '%s\n' "$1" >&"$PMI_FD"
    [ -n "${2:-}" ] || return 0
    local reply
    IFS= read -r -t 30 -u "$PMI_FD" reply || { echo "pretend-payload.sh: rank $rank: no reply to '$1'" >&2; return 1; }
    case " $reply " in *" cmd=$2 "*) ;; *) echo "pretend-payload.sh: rank $rank: '$1' got '$reply'" >&2; return 1 ;; esac
    case " $reply " in *" rc="[!0]*) echo "pretend-payload.sh: rank $rank: '$1' got '$reply'" >&2; return 1 ;; esac
    REPLY=$reply
}
field() { tr ' ' '\n' <<<"$REPLY" | sed -n "s/^$1=//p"; }
kvs=""
if [ -n "${PMI_FD:-}" ]; then
    pmi_rank=${PMI_RANK:?pretend-payload.sh: PMI_FD without PMI_RANK}
    pmi_size=${PMI_SIZE:?pretend-payload.sh: PMI_FD without PMI_SIZE}
    pmi "cmd=init pmi_version=1 pmi_subversion=1" response_to_init
    pmi "cmd=get_my_kvsname" my_kvsname
    kvsname=$(field kvsname)
    pmi "cmd=put kvsname=$kvsname key=host$pmi_rank value=$(hostname)" put_result
    pmi "cmd=barrier_in" barrier_out
    vals=()
    for ((q = 0; q < pmi_size; q++)); do
        pmi "cmd=get kvsname=$kvsname key=host$q" get_result
        vals+=("$(field value)")
    done
    pmi "cmd=finalize" finalize_ack
    kvs=" kvs=$(IFS=,; echo "${vals[*]}")"
fi

echo "PRETEND rank=$rank node=$node var=${PRETEND_RANK_VAR:-?} pid=$$ host=$(hostname)" \
    "ipc=$(readlink /proc/self/ns/ipc) mnt=$(readlink /proc/self/ns/mnt)" \
    "uts=$(readlink /proc/self/ns/uts) shm=$list$kvs"
