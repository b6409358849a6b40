#!/bin/sh
# shm_attack.sh MODE <shm_victim> [launcher...]   (issue 30, item 1)
# Another local user (nobody, through setpriv) attacks a job's files in ISHMEM_SHM_DIR (a
# private sticky directory on tmpfs, as /dev/shm is) before the job starts:
#   precreate: makes the job's control file and PE 1's heap file, mode 0666, under the names
#              the launcher's key gives;
#   symlink:   plants a symbolic link under the control file's name, to a file of the job's
#              user ("precious", which a job that follows the link truncates).
# MODE openmpi <mpirun>: OpenMPI 4.1's mpirun, started stopped so that the attacker computes its
#   PMIx namespace from its pid (job family = 16-bit hash of host name and pid, as OpenMPI does):
#   the names must not follow from it, so the job passes, the attacker's files stay empty and
#   unused, "precious" unchanged.
# MODE known: OpenMPI's environment without a PMIx server or transport key (no exchange, no
#   secret), so the names follow from the namespace alone and the attacker knows them (both the
#   old scheme and the one-way hash): the job must end with a clear error, never use the files.
# MODE launched, KIND <launcher...> after <shm_victim>: a job started by a launcher that keys
#   it (ishmrun: its job id; Slurm's srun: the job and step ids, which squeue shows every user;
#   MPICH hydra: its kvsname). The PEs are started through a wrapper that, on rank 0, hands
#   the launcher's key to the attacker (KIND says where it comes from: ishmrun =
#   ISHMRUN_JOBID, pmix = PMIX_NAMESPACE, pmi1 = the kvsname: Slurm's <job id>.<step id>, or
#   what hydra's PMI-1 server of PMI_FD gives) and holds every PE until the attacker is done. Cases precreate and symlink under the names that key gives:
#   the old scheme (ishmem-<key>-ctl, -heap-1) and the names derived from the key as the
#   library derives them where no secret exists ("launcher key <key>"): the job must pass, the
#   attacker's files stay empty, "precious" unchanged. KIND ishmrun adds leaked_precreate and
#   leaked_symlink: the attacker also gets ishmrun's job id itself (the node's secret, as if it
#   leaked) and plants the job's true control and heap names: the job must end with the clear
#   error naming another user (the O_EXCL/O_NOFOLLOW/owner checks), never use the files.
# Every case: no file of the job left in the directory. Needs root (exit 77 otherwise).
set -u
mode=$1
victim=$2
shift 2
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null 2>&1; then
    echo "skipped: needs root and setpriv (the attacker runs as nobody)"
    exit 77
fi
dir=$(mktemp -d /dev/shm/ishmem-attack.XXXXXX) || exit 2
out=$(mktemp "${TMPDIR:-/tmp}/shm_attack.XXXXXX") || exit 2
keep=$(mktemp -d "${TMPDIR:-/tmp}/shm_attack_keep.XXXXXX") || exit 2
trap 'rm -rf "$dir" "$out" "$keep"' EXIT
chmod 1777 "$dir"
export ISHMEM_SHM_DIR="$dir"
fail=0
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

# The attacker makes what the case asks under each name given.
attack() { # case name...
    c=$1
    shift
    for n in "$@"; do
        case $c in
        precreate) as_nobody sh -c 'umask 0; : >"$1"' sh "$dir/$n-ctl" && as_nobody sh -c 'umask 0; : >"$1"' sh "$dir/$n-heap-1" ;;
        symlink) as_nobody ln -s "$keep/precious" "$dir/$n-ctl" ;;
        esac
    done
}
attacker_files() { find "$dir" -user nobody | sort; }
# after a case: the attacker's files are still empty (never used), precious is unchanged, and
# nothing else is left in the directory
verify() { # case
    if [ "$(wc -c <"$keep/precious")" -ne 9 ] || [ "$(cat "$keep/precious")" != "precious" ]; then
        echo "FAIL: $1: the job changed a file of its user through the attacker's link (now $(wc -c <"$keep/precious") bytes)"
        fail=1
    fi
    for f in $(find "$dir" -user nobody -type f); do
        if [ -s "$f" ]; then
            echo "FAIL: $1: the job used the attacker's file $f ($(wc -c <"$f") bytes now)"
            fail=1
        fi
    done
    left=$(find "$dir" -mindepth 1 ! -user nobody)
    if [ -n "$left" ]; then
        echo "FAIL: $1: files of the job left in $dir: $left"
        fail=1
    fi
    rm -rf "${dir:?}"/*
}

# OpenMPI 4.1: opal's string hash (Jenkins one-at-a-time) of the host name, xor the pid, folded
# to 16 bits, is the job family; the job's namespace is family << 16 | 1.
ompi_nspace() { # pid
    h=0
    host=$(hostname)
    i=1
    while [ "$i" -le "${#host}" ]; do
        c=$(printf '%d' "'$(printf '%s' "$host" | cut -c "$i")")
        h=$(((h + c) & 0xffffffff))
        h=$(((h + (h << 10)) & 0xffffffff))
        h=$((h ^ (h >> 6)))
        i=$((i + 1))
    done
    h=$(((h + (h << 3)) & 0xffffffff))
    h=$((h ^ (h >> 11)))
    h=$(((h + (h << 15)) & 0xffffffff))
    h=$((h ^ $1))
    echo $(((((h >> 16) & 0xffff) ^ (h & 0xffff)) << 16 | 1))
}

# sha256 of the parts, each followed by a NUL, first $1 hex digits (the library's derive_hex)
derive() { # n parts...
    n=$1
    shift
    for p in "$@"; do printf '%s\000' "$p"; done | sha256sum | cut -c "1-$n"
}

case $mode in
openmpi)
    for c in precreate symlink; do
        echo precious >"$keep/precious"
        sh -c 'kill -STOP $$; exec "$@"' sh "$@" "$victim" >"$out" 2>&1 &
        pid=$!
        while ! grep -q '^State:.*T' "/proc/$pid/status" 2>/dev/null; do sleep 0.05; done
        ns=$(ompi_nspace "$pid")
        attack "$c" "ishmem-x$ns"
        echo "$c: namespace $ns predicted from mpirun's pid $pid; attacker made: $(attacker_files | tr '\n' ' ')"
        kill -CONT "$pid"
        wait "$pid"
        st=$?
        sed "s/^/  job: /" "$out"
        if [ "$st" -ne 0 ] || ! grep -q '^PASS: shm_victim (2 PEs)$' "$out"; then
            echo "FAIL: openmpi $c: the job failed (status $st) beside the attacker's files"
            fail=1
        fi
        verify "openmpi $c"
    done
    ;;
known)
    ns="4242424243"
    secret="launcher key x$ns"
    job=$(derive 16 "ishmem job" "$secret")
    new="ishmem-$job-$(derive 32 "ishmem file" "$secret" 0 ctl)"
    newheap="ishmem-$job-$(derive 32 "ishmem file" "$secret" 0 heap-1)"
    for c in precreate symlink; do
        echo precious >"$keep/precious"
        attack "$c" "ishmem-x$ns"
        case $c in
        precreate) as_nobody sh -c 'umask 0; : >"$1"; : >"$2"' sh "$dir/$new" "$dir/$newheap" ;;
        symlink) as_nobody ln -s "$keep/precious" "$dir/$new" ;;
        esac
        echo "$c: attacker made: $(attacker_files | tr '\n' ' ')"
        pids=""
        for r in 0 1; do
            env -u PMIX_SERVER_URI -u PMIX_SERVER_URI2 -u PMIX_SERVER_URI21 -u PMIX_SERVER_URI3 -u PMIX_SERVER_URI4 \
                -u OMPI_MCA_orte_precondition_transports -u ISHMRUN_JOBID -u PMI_FD -u PMI_PORT \
                -u PMIX_NAMESPACE -u PMIX_RANK ISHMEM_BOOTSTRAP=pmix ISHMEM_BOOTSTRAP_TIMEOUT=10 OMPI_MCA_ess_base_jobid=$ns \
                OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
                timeout -k 5 60 "$victim" >"$out.$r" 2>&1 &
            pids="$pids $!"
        done
        st=0
        for p in $pids; do wait "$p" || st=$?; done
        cat "$out.0" "$out.1" | sed "s/^/  job: /"
        case $c in
        precreate) want="not a file of this job|exists already" ;;
        symlink) want="symbolic link" ;;
        esac
        if [ "$st" -eq 0 ]; then
            echo "FAIL: known $c: the job ran on files another user made (exit 0)"
            fail=1
        elif ! cat "$out.0" "$out.1" | grep -Eq "ERROR: ishmem_init: .*($want).*another user"; then
            echo "FAIL: known $c: the job failed without saying another user made its file"
            fail=1
        fi
        rm -f "$out.0" "$out.1"
        verify "known $c"
    done
    ;;
launched)
    kind=$1
    shift
    cases="precreate symlink"
    [ "$kind" = ishmrun ] && cases="$cases leaked_precreate leaked_symlink"
    # rank 0 hands the key (and, for ishmrun, the job id) over; every PE waits for "go"
    wrapper='r=${ISHMRUN_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
if [ "$r" = 0 ]; then
    case $ATTACK_KIND in
    ishmrun) k=r$ISHMRUN_JOBID; printf "%s\n" "$ISHMRUN_JOBID" >"$ATTACK_KEEP/secret" ;;
    pmix) k=x$PMIX_NAMESPACE ;;
    pmi1)
        # Slurm (--mpi=pmi2): the kvsname is <job id>.<step id> (asking its server here as
        # well left the job hung); MPICH hydra: its server says
        if [ -n "${SLURM_JOB_ID:-}" ] && [ -n "${SLURM_STEP_ID:-}" ]; then
            k=h$SLURM_JOB_ID.$SLURM_STEP_ID
        else
            k=h$("$0" --pmi1-kvsname) || exit 2
        fi
        ;;
    esac
    printf "%s\n" "$k" | tr -c "A-Za-z0-9.\n-" _ >"$ATTACK_KEEP/key.part" && mv "$ATTACK_KEEP/key.part" "$ATTACK_KEEP/key"
fi
i=0
while [ ! -e "$ATTACK_KEEP/go" ]; do
    i=$((i + 1))
    [ "$i" -lt 1200 ] || { echo "FAIL: rank $r: no go from the attack after 60 s"; exit 3; }
    sleep 0.05
done
exec "$0"'
    for c in $cases; do
        echo precious >"$keep/precious"
        rm -f "$keep/key" "$keep/secret" "$keep/go"
        ATTACK_KEEP=$keep ATTACK_KIND=$kind "$@" sh -c "$wrapper" "$victim" >"$out" 2>&1 &
        pid=$!
        i=0
        while [ ! -s "$keep/key" ] && kill -0 "$pid" 2>/dev/null && [ "$i" -lt 1200 ]; do
            i=$((i + 1))
            sleep 0.05
        done
        if [ ! -s "$keep/key" ]; then
            touch "$keep/go"
            wait "$pid"
            # the launcher cannot run here (srun-local.sh without a private Slurm)
            if grep -q '^skipped: ' "$out"; then
                grep '^skipped: ' "$out"
                exit 77
            fi
            sed "s/^/  job: /" "$out"
            echo "FAIL: launched $kind $c: the job's rank 0 never handed over the launcher's key"
            fail=1
            continue
        fi
        key=$(cat "$keep/key")
        secret="launcher key $key"
        job=$(derive 16 "ishmem job" "$secret")
        derived="ishmem-$job-$(derive 32 "ishmem file" "$secret" 0 ctl)"
        derivedheap="ishmem-$job-$(derive 32 "ishmem file" "$secret" 0 heap-1)"
        case $c in
        precreate | symlink)
            attack "$c" "ishmem-$key"
            case $c in
            precreate) as_nobody sh -c 'umask 0; : >"$1"; : >"$2"' sh "$dir/$derived" "$dir/$derivedheap" ;;
            symlink) as_nobody ln -s "$keep/precious" "$dir/$derived" ;;
            esac
            ;;
        leaked_*)
            # the job's true names, from ishmrun's job id (the secret of the node)
            s=$(cat "$keep/secret")
            job=$(derive 16 "ishmem job" "$s")
            ctl="ishmem-$job-$(derive 32 "ishmem file" "$s" 0 ctl)"
            heap="ishmem-$job-$(derive 32 "ishmem file" "$s" 0 heap-1)"
            case $c in
            leaked_precreate) as_nobody sh -c 'umask 0; : >"$1"; : >"$2"' sh "$dir/$ctl" "$dir/$heap" ;;
            leaked_symlink) as_nobody ln -s "$keep/precious" "$dir/$ctl" ;;
            esac
            ;;
        esac
        echo "$c: launcher key $key; attacker made: $(attacker_files | tr '\n' ' ')"
        touch "$keep/go"
        wait "$pid"
        st=$?
        sed "s/^/  job: /" "$out"
        case $c in
        leaked_*)
            case $c in
            leaked_precreate) want="not a file of this job|exists already" ;;
            leaked_symlink) want="symbolic link" ;;
            esac
            if [ "$st" -eq 0 ]; then
                echo "FAIL: launched $kind $c: the job ran on files another user made (exit 0)"
                fail=1
            elif ! grep -Eq "ERROR: ishmem_init: .*($want).*another user" "$out"; then
                echo "FAIL: launched $kind $c: the job failed without saying another user made its file"
                fail=1
            fi
            ;;
        *)
            if [ "$st" -ne 0 ] || ! grep -q '^PASS: shm_victim (2 PEs)$' "$out"; then
                echo "FAIL: launched $kind $c: the job failed (status $st) beside the attacker's files"
                fail=1
            fi
            ;;
        esac
        verify "launched $kind $c"
    done
    ;;
*)
    echo "usage: shm_attack.sh openmpi|known <shm_victim> [launcher...] | launched <shm_victim> ishmrun|pmix|pmi1 <launcher...>" >&2
    exit 2
    ;;
esac
[ "$fail" = 0 ] && echo "PASS: shm_attack $mode"
exit $fail
