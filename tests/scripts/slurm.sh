#!/usr/bin/env bash
# slurm.sh: a private one-node Slurm on 127.0.0.1 for the test suite (Debian slurm-wlm, munge).
#
#   slurm.sh up DIR       start munged, slurmctld and slurmd with everything under DIR; wait
#                         (bounded) until the node is idle; print `srun --mpi=list`; write
#                         DIR/env. Re-running first takes down what DIR holds.
#   slurm.sh down DIR     stop the daemons (and steps left running) by their PIDs, remove DIR
#                         (idempotent; also after a crash)
#   slurm.sh status DIR   sinfo and the daemons' PIDs; exit 0 when up
#   slurm.sh check DIR list|pmix|pmi2 [N]
#                         a test of the cluster: `srun --mpi=list` shows pmix, pmix_v4 and
#                         pmi2; or `srun --mpi=pmix|pmi2 -n N` (default 2) runs N ranks that
#                         see their rank (PMIX_RANK / PMI_RANK and PMI_FD); prints PASS or FAIL
#   slurm.sh probe        exit 0 when a private Slurm can run here, else 77 ("skipped: ...")
#
# Then, in a shell:   . DIR/env      (export SLURM_CONF=DIR/etc/slurm.conf)
#                     srun --mpi=pmix -n 2 hostname
#
# The cluster: munged with its own key, socket, pid and log under DIR/munge (no clash with a
# system munged); slurm.conf with SlurmctldHost=<hostname>(127.0.0.1) and one node, this
# machine (its CPUs but at least ISHMEM_SLURM_CPUS, default 8, with config_overrides, so that
# `srun -n 8` runs on a small machine; RealMemory ISHMEM_SLURM_MEMORY_MB, default 1024),
# NodeAddr 127.0.0.1, in a partition with
# OverSubscribe=FORCE; MpiDefault=none; no cgroups (proctrack/linuxproc, task/none), no
# accounting; state, spool and logs under DIR; SlurmUser=root. Ports: the first free pair from
# ISHMEM_SLURM_PORT (default 16817): slurmctld there, slurmd one above. DIR should be short
# (unix socket paths are limited to 107 bytes).
#
# Needs root, munged/mungekey (munge), slurmctld/slurmd (slurm-wlm), srun/sinfo (slurm-client).
# Where those are missing or not root, up prints one line "skipped: <reason>" and exits 77
# (CTest: SKIP_RETURN_CODE 77). No systemd needed.
set -euo pipefail

SKIP=77
prog=slurm.sh
WAIT_S=${ISHMEM_SLURM_WAIT:-60}

die() { echo "$prog: error: $*" >&2; exit 1; }
skip() { echo "skipped: $prog: $*"; exit "$SKIP"; }
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

check_tools() {
    [ "$(id -u)" = 0 ] || skip "needs root (uid is $(id -u)): slurmd runs jobs as root here"
    local t
    for t in munged:munge munge:munge unmunge:munge slurmctld:slurmctld slurmd:slurmd \
        srun:slurm-client sinfo:slurm-client scontrol:slurm-client scancel:slurm-client \
        setsid:util-linux timeout:coreutils; do
        command -v "${t%%:*}" >/dev/null 2>&1 ||
            skip "'${t%%:*}' is not installed (Debian package ${t#*:}; .ci/run installs slurm-wlm munge)"
    done
}

# The PID recorded for a daemon, if that process is alive and still ours (its command line
# names DIR).
live_pid() {
    local dir=$1 name=$2 pid
    [ -f "$dir/run/$name.pid" ] || return 1
    pid=$(cat "$dir/run/$name.pid")
    case "$pid" in '' | *[!0-9]*) return 1 ;; esac
    kill -0 "$pid" 2>/dev/null || return 1
    local cmd
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
    [[ "$cmd" == *"$dir/"* ]] || return 1
    echo "$pid"
}

stop_pids() {
    # stop_pids "pid name" ...: TERM them all, wait up to 10 s, KILL what is left
    local pn pid i left
    for pn in "$@"; do kill -TERM "${pn%% *}" 2>/dev/null || true; done
    for i in $(seq 100); do
        left=0
        for pn in "$@"; do kill -0 "${pn%% *}" 2>/dev/null && left=1; done
        [ "$left" = 0 ] && break
        sleep 0.1
    done
    for pn in "$@"; do
        pid=${pn%% *}
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid" 2>/dev/null || true
            echo "$prog: killed ${pn#* } (pid $pid): it did not stop within 10 s"
        else
            echo "$prog: stopped ${pn#* } (pid $pid)"
        fi
    done
}

cmd_down() {
    local dir=$1
    if [ ! -d "$dir" ]; then
        echo "$prog: $dir: nothing to take down"
        return 0
    fi
    dir=$(cd "$dir" && pwd -P)
    local pid conf=$dir/etc/slurm.conf
    # jobs first (bounded), while slurmctld still answers
    if [ -f "$conf" ] && live_pid "$dir" slurmctld >/dev/null; then
        SLURM_CONF=$conf timeout 10 scancel --user=root >/dev/null 2>&1 || true
    fi
    # the daemons, and steps left behind (slurmstepd processes started from our slurmd: their
    # environment holds our SLURM_CONF; the tasks under them end with them), all at once
    local name p stop=()
    for name in slurmd slurmctld munged; do
        if pid=$(live_pid "$dir" "$name"); then stop+=("$pid $name"); fi
    done
    for p in /proc/[0-9]*; do
        [ "$(cat "$p/comm" 2>/dev/null || true)" = slurmstepd ] || continue
        if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "SLURM_CONF=$conf"; then
            stop+=("${p#/proc/} slurmstepd left over")
        fi
    done
    [ "${#stop[@]}" = 0 ] || stop_pids "${stop[@]}"
    # tasks of steps whose slurmstepd is gone (a killed slurmd): processes that our cluster
    # started (our SLURM_CONF and a SLURM_STEP_ID in their environment)
    stop=()
    local env
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" != $$ ] || continue
        env=$(tr '\0' '\n' 2>/dev/null <"$p/environ") || continue
        if grep -qxF "SLURM_CONF=$conf" <<<"$env" && grep -q '^SLURM_STEP_ID=' <<<"$env"; then
            stop+=("${p#/proc/} task left over ($(cat "$p/comm" 2>/dev/null || echo '?'))")
        fi
    done
    [ "${#stop[@]}" = 0 ] || stop_pids "${stop[@]}"
    rm -rf -- "$dir"
    echo "$prog: down: $dir removed"
}

# TCP ports something listens on (from /proc/net/tcp{,6}: state 0A)
listening_ports() {
    local f hex
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        awk 'NR > 1 && $4 == "0A" { n = split($2, a, ":"); print a[n] }' "$f"
    done | while read -r hex; do echo $((16#$hex)); done
}

free_port_pair() {
    local p=${ISHMEM_SLURM_PORT:-16817} i used
    used=$(listening_ports)
    for i in $(seq 50); do
        if ! grep -qxF "$p" <<<"$used" && ! grep -qxF "$((p + 1))" <<<"$used"; then
            echo "$p"
            return 0
        fi
        p=$((p + 2))
    done
    die "no free port pair from ${ISHMEM_SLURM_PORT:-16817} on (set ISHMEM_SLURM_PORT)"
}

log_tails() {
    local dir=$1 f
    for f in "$dir"/log/*.log "$dir"/log/*.out; do
        [ -s "$f" ] || continue
        echo "---- last lines of $f"
        tail -n 25 "$f"
    done
}

# Starts "$@" in the background in its own session, stdio to DIR/log/<name>.out (so that it
# holds none of the caller's pipes, e.g. CTest's), records its PID.
start_daemon() {
    local dir=$1 name=$2
    shift 2
    setsid "$@" </dev/null >"$dir/log/$name.out" 2>&1 &
    local pid=$! i
    echo "$pid" >"$dir/run/$name.pid"
    # Until the forked shell has exec'd the daemon, /proc/PID/cmdline is this script's, which
    # live_pid does not take for ours: wait for the exec (or the end) so that neither the start
    # check nor a `down` after a failed start mistakes a daemon being born for one that exited.
    for ((i = 0; i < 100; i++)); do
        live_pid "$dir" "$name" >/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.05
    done
}

# die_exited DIR NAME: NAME (started by start_daemon) is gone; say how it ended
die_exited() {
    local dir=$1 name=$2 pid rc=0
    pid=$(cat "$dir/run/$name.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null || rc=$?
        die "$name (pid $pid) exited with status $rc (its logs below)"
    fi
    die "$name (pid ${pid:-?}) is not running as ours: /proc/${pid:-?}/cmdline is '$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" || true)' (its logs below)"
}

wait_for() {
    # wait_for SECONDS what cmd...: poll cmd every 0.2 s
    local s=$1 what=$2 i
    shift 2
    for ((i = 0; i < s * 5; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.2
    done
    echo "$prog: error: $what not within $s s" >&2
    return 1
}

cmd_up() {
    local dir=$1
    check_tools
    case "$dir" in *[[:space:]]*) die "DIR '$dir' contains whitespace" ;; esac
    if [ -d "$dir" ]; then cmd_down "$dir" >/dev/null; fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd -P)
    up_dir=$dir
    up_done=0
    trap 'if [ "$up_done" = 0 ]; then echo "$prog: up failed; taking $up_dir down" >&2; log_tails "$up_dir" >&2; cmd_down "$up_dir" >&2 || true; fi' EXIT
    local sock=$dir/munge/munge.socket.2
    [ "${#sock}" -le 100 ] || die "DIR is too long for a unix socket path ($sock): use a shorter one"
    mkdir -p "$dir"/{munge,etc,state,spool,log,run,tmp}
    chmod 700 "$dir/munge"
    chmod 755 "$dir" "$dir/etc" "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
    chmod 1777 "$dir/tmp"

    # munge: a fresh key, munged on its own socket
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile="$dir/munge/munge.key" 2>/dev/null ||
            dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    else
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    fi
    chmod 400 "$dir/munge/munge.key"
    start_daemon "$dir" munged munged --foreground --force --socket="$sock" \
        --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
        --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log"
    wait_for 10 "munged answering on $sock" sh -c "munge -n -S '$sock' | unmunge -S '$sock'"

    # slurm.conf
    local host cpus real_cpus mem port
    host=$(hostname -s)
    # at least ISHMEM_SLURM_CPUS (default 8) CPUs, so that `srun -n 4` on a 2-core machine
    # runs instead of waiting forever for resources (config_overrides: slurmd does not drain
    # the node for having fewer)
    real_cpus=$(nproc --all)
    cpus=${ISHMEM_SLURM_CPUS:-8}
    [ "$cpus" -ge "$real_cpus" ] || cpus=$real_cpus
    mem=${ISHMEM_SLURM_MEMORY_MB:-1024}
    port=$(free_port_pair)
    local conf=$dir/etc/slurm.conf
    cat >"$conf" <<EOC
# written by tests/scripts/slurm.sh: a private one-node cluster on 127.0.0.1
ClusterName=ishmem
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pidfile
SlurmdPidFile=$dir/run/slurmd.pidfile
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$dir/tmp
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
MailProg=/bin/true
InactiveLimit=0
KillWait=5
MinJobAge=10
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=ishmem Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOC
    echo "export SLURM_CONF=$conf" >"$dir/env"
    export SLURM_CONF=$conf

    start_daemon "$dir" slurmctld slurmctld -D -i -f "$conf"
    start_daemon "$dir" slurmd slurmd -D -f "$conf" -N "$host"
    local i state=""
    for ((i = 0; i < WAIT_S * 5; i++)); do
        live_pid "$dir" slurmctld >/dev/null || die_exited "$dir" slurmctld
        live_pid "$dir" slurmd >/dev/null || die_exited "$dir" slurmd
        state=$(timeout 5 sinfo -h -n "$host" -o %T 2>/dev/null || true)
        [ "$state" = idle ] && break
        sleep 0.2
    done
    [ "$state" = idle ] || die "node $host is not idle after $WAIT_S s (sinfo says '${state:-nothing}')"

    local list
    list=$(timeout 20 srun --mpi=list 2>&1) || die "srun --mpi=list failed: $list"
    echo "$prog: srun --mpi=list:"
    echo "$list" | sed 's/^/    /'
    local want
    for want in pmix pmix_v4 pmi2; do
        grep -qE "(^|[[:space:]])$want\$" <<<"$list" || die "srun --mpi=list does not show $want"
    done
    up_done=1
    echo "$prog: up: node $host idle ($cpus CPUs declared, $real_cpus real), slurmctld on 127.0.0.1:$port, slurmd on :$((port + 1)); pids:" \
        "munged $(cat "$dir/run/munged.pid"), slurmctld $(cat "$dir/run/slurmctld.pid"), slurmd $(cat "$dir/run/slurmd.pid")"
    echo "$prog: use it with:  export SLURM_CONF=$conf    (or: . $dir/env)"
}

cmd_status() {
    local dir=$1 name pid ok=0
    [ -f "$dir/env" ] || { echo "$prog: $dir is not up"; return 1; }
    for name in munged slurmctld slurmd; do
        if pid=$(live_pid "$dir" "$name"); then echo "$name: pid $pid"; else echo "$name: not running"; ok=1; fi
    done
    SLURM_CONF=$dir/etc/slurm.conf timeout 10 sinfo || ok=1
    return "$ok"
}

cmd_check() {
    local dir=$1 what=$2 n=${3:-2}
    if [ ! -f "$dir/env" ]; then
        check_tools
        echo "FAIL: slurm.$what: no Slurm under $dir (run slurm.sh up $dir)"
        return 1
    fi
    export SLURM_CONF=$dir/etc/slurm.conf
    local out st=0
    case "$what" in
    list)
        out=$(timeout 20 srun --mpi=list 2>&1) || st=$?
        echo "$out"
        local want miss=""
        for want in pmix pmix_v4 pmi2; do
            grep -qE "(^|[[:space:]])$want\$" <<<"$out" || miss="$miss $want"
        done
        if [ "$st" = 0 ] && [ -z "$miss" ]; then
            echo "PASS: slurm.list (srun --mpi=list shows pmix, pmix_v4, pmi2)"
            return 0
        fi
        echo "FAIL: slurm.list: status $st, missing:${miss:- none}"
        return 1
        ;;
    pmix | pmi2)
        local var=PMIX_RANK
        [ "$what" = pmi2 ] && var=PMI_RANK
        # shellcheck disable=SC2016
        out=$(cd / && timeout 60 srun --mpi="$what" -n "$n" \
            sh -c 'echo "rank ${'"$var"':-unset} of ${SLURM_NTASKS:-?} on $(hostname) pmi_fd ${PMI_FD:-none}"' 2>&1) || st=$?
        echo "srun --mpi=$what -n $n:"
        echo "$out" | sed 's/^/    /'
        local want got
        want=$(seq 0 $((n - 1)) | paste -sd, -)
        got=$(sed -n 's/^rank \([0-9]*\) of .*/\1/p' <<<"$out" | sort -n | paste -sd, -)
        if [ "$st" = 0 ] && [ "$got" = "$want" ] &&
            { [ "$what" = pmix ] || ! grep -q 'pmi_fd none' <<<"$out"; }; then
            echo "PASS: slurm.$what (srun --mpi=$what -n $n: ranks $got)"
            return 0
        fi
        echo "FAIL: slurm.$what: srun status $st, ranks '$got' (want '$want')"
        return 1
        ;;
    *) die "check: unknown check '$what' (list, pmix, pmi2)" ;;
    esac
}

[ $# -ge 1 ] || usage
case "$1" in
up) [ $# -eq 2 ] || usage; cmd_up "$2" ;;
down) [ $# -eq 2 ] || usage; cmd_down "$2" ;;
status) [ $# -eq 2 ] || usage; cmd_status "$2" ;;
check) [ $# -ge 3 ] && [ $# -le 4 ] || usage; cmd_check "$2" "$3" "${4:-2}" ;;
probe) [ $# -eq 1 ] || usage; check_tools; echo "$prog: a private Slurm can run here" ;;
-h | --help | help) usage ;;
*) echo "$prog: unknown subcommand '$1'" >&2; usage ;;
esac
