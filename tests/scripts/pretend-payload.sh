#!/usr/bin/env bash
# pretend-payload.sh TAG NP PPN: one rank of the pretend-node check (run by on-node.sh under a
# launcher; see pretend-check.sh). Creates /dev/shm/ishmem-pretend-TAG-r<rank>, waits (at most
# 30 s) until the files of every rank of its node are there, and prints one line:
#   PRETEND rank=<r> node=<n> var=<rank variable> pid=<pid> host=<hostname>
#           ipc=<ipc ns> mnt=<mount ns> uts=<uts ns> shm=<the TAG files it sees in /dev/shm>
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
echo "PRETEND rank=$rank node=$node var=${PRETEND_RANK_VAR:-?} pid=$$ host=$(hostname)" \
    "ipc=$(readlink /proc/self/ns/ipc) mnt=$(readlink /proc/self/ns/mnt)" \
    "uts=$(readlink /proc/self/ns/uts) shm=$list"
