#!/usr/bin/env bash
# pretend-nodes.sh: pretend nodes on one machine, for running PEs of one job "on several nodes".
#
#   pretend-nodes.sh up N DIR        make N nodes (node0 .. node<N-1>) under DIR; re-running
#                                    first takes down what DIR holds, so each up starts clean
#   pretend-nodes.sh down DIR        take everything down and remove DIR (idempotent; also
#                                    after a crash; ends processes left inside the nodes)
#   pretend-nodes.sh status DIR      list the nodes; exit 0 when DIR is up, 1 when not
#   pretend-nodes.sh enter DIR I cmd [args...]
#                                    run cmd inside node I (debugging, cleaning its /dev/shm)
#   pretend-nodes.sh probe           exit 0 when pretend nodes can be made here, else 77
#
# A node is a persistent UTS + IPC + mount namespace: its own hostname (ishmem-node<i>), its
# own System V IPC / POSIX message queues, and a private tmpfs on /dev/shm; everything else
# (the network and loopback, /tmp, the build tree, PIDs, users) is the machine's. That is what
# two containers on one host look like to a library: the PEs of two nodes cannot map each
# other's shared memory, but can reach each other over TCP on 127.0.0.1.
# The namespaces are kept alive without any process by bind mounts of their /proc/<pid>/ns
# files under DIR (DIR is bind-mounted onto itself and made private, as unshare(1) requires
# for --mount=FILE). Run a rank inside its node with on-node.sh; run a whole job with
# run-pretend.sh.
#
# Needs root (CAP_SYS_ADMIN) and util-linux unshare/nsenter. Where pretend nodes cannot be
# made (not root, no namespaces), up and probe print one line "skipped: <reason>" and exit 77
# (CTest: SKIP_RETURN_CODE 77).
set -euo pipefail

SKIP=77
prog=pretend-nodes.sh

die() { echo "$prog: error: $*" >&2; exit 1; }
skip() { echo "skipped: $prog: $*"; exit "$SKIP"; }
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

# Mount points under (and including) $1, deepest first, from this mount namespace's table.
mounts_under() {
    local d=$1
    awk -v d="$d" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo |
        awk '{ print length($0) " " $0 }' | sort -rn -s | cut -d' ' -f2-
}

# Is $1 (a file or a directory) a mount point in this mount namespace?
is_mounted() {
    awk -v d="$1" '$5 == d { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# Can we make namespaces here? Prints the reason and exits 77 when not.
probe() {
    [ "$(id -u)" = 0 ] || skip "needs root (uid is $(id -u)): namespaces and mounts need CAP_SYS_ADMIN"
    local t
    for t in unshare nsenter mount umount hostname awk; do
        command -v "$t" >/dev/null 2>&1 || skip "'$t' is not installed (util-linux)"
    done
    local err
    if ! err=$(unshare --uts --ipc --mount --propagation private \
        sh -c 'hostname ishmem-probe && mount -t tmpfs ishmem-probe /dev/shm' 2>&1); then
        skip "cannot make UTS+IPC+mount namespaces with a tmpfs on /dev/shm here: ${err:-unshare failed}"
    fi
}

abs_dir() {
    # An absolute, canonical path for DIR (created if needed); no whitespace (mountinfo
    # escapes it, and the other scripts split on it).
    local d=$1
    case "$d" in *[[:space:]]*) die "DIR '$d' contains whitespace" ;; esac
    mkdir -p "$d" || die "cannot create $d"
    (cd "$d" && pwd -P)
}

# Processes whose IPC namespace is node I's (left over from a crashed job).
pids_in_node() {
    local nsfile=$1 want p
    want=$(stat -L -c '%d:%i' "$nsfile" 2>/dev/null) || return 0
    for p in /proc/[0-9]*; do
        [ "$(stat -L -c '%d:%i' "$p/ns/ipc" 2>/dev/null || true)" = "$want" ] && echo "${p#/proc/}"
    done
    return 0
}

cmd_down() {
    local dir=$1
    if [ ! -d "$dir" ]; then
        echo "$prog: $dir: nothing to take down"
        return 0
    fi
    dir=$(cd "$dir" && pwd -P)
    # End processes still inside the nodes (a crashed job), TERM then KILL, bounded.
    local f pids="" p i
    for f in "$dir"/node*/ipc; do
        [ -e "$f" ] && is_mounted "$f" || continue
        pids="$pids $(pids_in_node "$f" | tr '\n' ' ')"
    done
    pids=$(echo $pids)
    if [ -n "$pids" ]; then
        echo "$prog: ending processes left inside the pretend nodes: $pids"
        kill -TERM $pids 2>/dev/null || true
        for i in $(seq 50); do
            local alive=""
            for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
            [ -z "$alive" ] && break
            sleep 0.1
        done
        for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
    fi
    # Unmount the namespace files, then DIR's own bind mount(s), deepest first. A namespace
    # (and its /dev/shm tmpfs) goes away with its last bind mount and its last process.
    local m n=0
    while read -r m; do
        [ -n "$m" ] || continue
        umount "$m" 2>/dev/null || umount -l "$m" || die "cannot unmount $m"
        n=$((n + 1))
    done < <(mounts_under "$dir")
    # DIR may have been bind-mounted onto itself more than once (an up that crashed early).
    for i in $(seq 10); do
        is_mounted "$dir" || break
        umount "$dir" 2>/dev/null || umount -l "$dir"
        n=$((n + 1))
    done
    if [ -n "$(mounts_under "$dir")" ]; then
        die "mounts remain under $dir; not removing it:$(mounts_under "$dir" | sed 's/^/ /' | tr '\n' ' ')"
    fi
    rm -rf -- "$dir"
    echo "$prog: down: $dir removed ($n mounts undone)"
}

cmd_up() {
    local n=$1 dir=$2 i
    case "$n" in '' | *[!0-9]*) die "N must be a number of nodes, not '$n'" ;; esac
    [ "$n" -ge 1 ] || die "N must be at least 1"
    probe
    if [ -d "$dir" ]; then
        cmd_down "$dir" >/dev/null
    fi
    dir=$(abs_dir "$dir")
    up_dir=$dir
    up_done=0
    trap 'if [ "$up_done" = 0 ]; then echo "$prog: up failed; taking $up_dir down" >&2; cmd_down "$up_dir" >&2 || true; fi' EXIT
    mount --bind "$dir" "$dir"
    mount --make-private "$dir"
    local shm_opts="mode=1777"
    if [ -n "${ISHMEM_PRETEND_SHM_SIZE:-}" ]; then shm_opts="$shm_opts,size=$ISHMEM_PRETEND_SHM_SIZE"; fi
    for ((i = 0; i < n; i++)); do
        local d="$dir/node$i"
        mkdir -p "$d"
        : >"$d/uts"
        : >"$d/ipc"
        : >"$d/mnt"
        unshare --uts="$d/uts" --ipc="$d/ipc" --mount="$d/mnt" --propagation private \
            sh -c 'hostname "$1" && mount -t tmpfs -o "$2" ishmem-pretend-shm /dev/shm' \
            sh "ishmem-node$i" "$shm_opts" ||
            { echo "$prog: cannot make node $i under $d" >&2; false; }
    done
    echo "$n" >"$dir/nodes"
    echo "export ISHMEM_PRETEND_DIR=$dir" >"$dir/env"
    up_done=1
    echo "$prog: up: $n pretend nodes under $dir (host ipc $(readlink /proc/self/ns/ipc))"
    cmd_status "$dir"
    echo "$prog: run a job with: ISHMEM_PRETEND_DIR=$dir $(cd "$(dirname "$0")" && pwd)/run-pretend.sh LAUNCHER NP PPN prog args"
}

cmd_status() {
    local dir=$1 n i
    [ -f "$dir/nodes" ] || { echo "$prog: $dir is not up"; return 1; }
    n=$(cat "$dir/nodes")
    for ((i = 0; i < n; i++)); do
        local d="$dir/node$i"
        is_mounted "$d/mnt" || { echo "$prog: node $i: $d/mnt is not mounted (take it down and up again)"; return 1; }
        nsenter --uts="$d/uts" --ipc="$d/ipc" --mount="$d/mnt" -- \
            sh -c 'echo "node '"$i"': hostname $(hostname), $(readlink /proc/self/ns/ipc), $(readlink /proc/self/ns/mnt), /dev/shm: $(ls -A /dev/shm | wc -l) entries"'
    done
}

cmd_enter() {
    local dir=$1 i=$2
    shift 2
    [ $# -ge 1 ] || die "enter DIR I cmd [args...]: no command"
    local d="$dir/node$i"
    [ -e "$d/mnt" ] && is_mounted "$d/mnt" || die "node $i is not up under $dir"
    exec nsenter --uts="$d/uts" --ipc="$d/ipc" --mount="$d/mnt" --wd="$PWD" -- "$@"
}

[ $# -ge 1 ] || usage
case "$1" in
up) [ $# -eq 3 ] || usage; cmd_up "$2" "$3" ;;
down)
    [ $# -eq 2 ] || usage
    if [ -d "$2" ] && [ "$(id -u)" != 0 ]; then skip "needs root to unmount (uid is $(id -u))"; fi
    cmd_down "$2"
    ;;
status) [ $# -eq 2 ] || usage; cmd_status "$2" ;;
enter) [ $# -ge 4 ] || usage; cmd_enter "$2" "$3" "${@:4}" ;;
probe) [ $# -eq 1 ] || usage; probe; echo "$prog: pretend nodes can be made here" ;;
-h | --help | help) usage ;;
*) echo "$prog: unknown subcommand '$1'" >&2; usage ;;
esac
