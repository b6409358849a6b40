#!/bin/sh
# scripts/reliability.sh <what> [args]: the long reliability runs of issue 12 (not in CI), each
# printing its figures; run after `make test-c` (it uses build/prefix and build/tests).
#   soak [SECONDS=600] [NP=4]   the soak under ishmrun, OpenMPI mpirun and MPICH mpiexec
#   fabric [SECONDS=120] [NP=4] the soak in fabric mode (2 pretend nodes over tcp;ofi_rxm, lo)
#   faults [RUNS=5] [NP=4]      SIGKILL, SIGSEGV and exit(0) of a random PE at a random time of
#                               the soak, under each launcher: time from the fault to the job's
#                               end, the PE named, nothing left in the shm directory
#   initloop [JOBS=1000] [NP=4] init/finalize jobs in a row under ishmrun: descriptors before
#                               init and after finalize, files left, time per job (first and
#                               last 10%)
#   stress [OPS=1000000] [NP=4] the threaded stress test, 8 threads per PE, long mode
#   all                         all of the above with their defaults
# Every job runs with ISHMEM_SHM_DIR set to a private directory, so that what is left there is
# this job's (other jobs may share /dev/shm). Environment: PREFIX (build/prefix), TESTS
# (build/tests), GPU=1 runs with ISHMEM_GPU=1 (the CUDA backend; NP PEs share the GPUs).
# Exit status: 0 when every run met its figure (no errors, nothing left, job ended < 10 s).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-$root/build/prefix}
TESTS=${TESTS:-$root/build/tests}
RUN="$PREFIX/bin/ishmrun"
MPIRUN=$(command -v mpirun.openmpi || true)
MPIEXEC=$(command -v mpiexec.mpich || true)
# elsewhere (a GPU machine) plain mpirun may be OpenMPI's
if [ -z "$MPIRUN" ] && mpirun --version 2>/dev/null | grep -q "Open MPI"; then MPIRUN=$(command -v mpirun); fi
export RUN MPIRUN MPIEXEC
fail=0
[ -x "$TESTS/soak" ] || { echo "reliability: $TESTS/soak not built (run make test-c first)"; exit 2; }
if [ "${GPU:-0}" = 1 ]; then
    export ISHMEM_GPU=1
fi
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
shmdir=$(mktemp -d "$base/ishmem-reliability.XXXXXX") || exit 2
log=$(mktemp -d "${TMPDIR:-/tmp}/ishmem-reliability-log.XXXXXX") || exit 2
trap 'rm -rf "$shmdir" "$log"' EXIT
export ISHMEM_SHM_DIR="$shmdir"

now_ns() { date +%s%N; }
left_files() { ls -A "$shmdir" | wc -l; }
clean_dir() { rm -rf "$shmdir"/* "$shmdir"/.[!.]* 2>/dev/null; }
tree() { git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown; }

# launch <launcher> <np> <program> [args...]
launch() {
    l=$1 np=$2
    shift 2
    case $l in
    ishmrun) "$RUN" -n "$np" "$@" ;;
    openmpi) "$MPIRUN" --allow-run-as-root --oversubscribe -np "$np" "$@" ;;
    mpich) "$MPIEXEC" -n "$np" "$@" ;;
    esac
}
launchers() {
    echo ishmrun
    [ -n "$MPIRUN" ] && echo openmpi
    [ -n "$MPIEXEC" ] && echo mpich
}

soak() { # seconds np [env...]  (FABRIC=1: under ishmrun only)
    secs=$1 np=$2
    shift 2
    for l in $(launchers); do
        clean_dir
        seed=$(($(od -An -N2 -tu2 /dev/urandom) + 1))
        t0=$(now_ns)
        launch "$l" "$np" env "$@" SOAK_SEED=$seed "$TESTS/soak" "$secs" >"$log/soak.out" 2>"$log/soak.err"
        st=$?
        t1=$(now_ns)
        left=$(left_files)
        line=$(grep '^soak:' "$log/soak.out")
        echo "soak $l ${np} PEs ${secs} s${FABRIC:+ (fabric mode: $*)}: status $st, $(((t1 - t0) / 1000000)) ms; $line; files left in the shm directory: $left"
        if [ $st -ne 0 ] || [ "$left" -ne 0 ] || ! grep -q "errors 0;" "$log/soak.out"; then
            fail=1
            sed 's/^/    /' "$log/soak.err" | tail -20
        fi
        [ -n "${FABRIC:-}" ] && break
    done
}

faults() { # runs np
    runs=$1 np=$2
    worst=0
    for l in $(launchers); do
        for kind in kill segv exit0; do
            i=0
            while [ $i -lt "$runs" ]; do
                i=$((i + 1))
                pe=$(($(od -An -N2 -tu2 /dev/urandom) % np))
                ms=$((300 + $(od -An -N2 -tu2 /dev/urandom) % 2700))
                clean_dir
                SOAK_FAULT=$kind SOAK_FAULT_PE=$pe SOAK_FAULT_MS=$ms timeout -k 5 60 sh -c '
                    l=$1; np=$2; shift 2
                    case $l in
                    ishmrun) exec "$RUN" -n "$np" "$@" ;;
                    openmpi) exec "$MPIRUN" --allow-run-as-root --oversubscribe -np "$np" "$@" ;;
                    mpich) exec "$MPIEXEC" -n "$np" "$@" ;;
                    esac' sh "$l" "$np" "$TESTS/soak" 120 >"$log/f.out" 2>"$log/f.err"
                st=$?
                end=$(now_ns)
                sleep 0.5 # let a launcher's cleanup finish before looking at the directory
                left=$(left_files)
                at=$(sed -n "s/^soak: fault $kind on PE $pe (pid [0-9]*) at \([0-9]*\)$/\1/p" "$log/f.err" | head -n 1)
                pid=$(sed -n "s/^soak: fault $kind on PE $pe (pid \([0-9]*\)) at .*/\1/p" "$log/f.err" | head -n 1)
                named=no
                if grep -Eq "PE $pe \(pid [0-9]+\)|^\[PE $pe\] ERROR: ishmem_finalize: the job ends" "$log/f.out" "$log/f.err"; then
                    named=yes
                elif [ -n "$pid" ] && grep -Eq "^=   PID $pid RUNNING AT" "$log/f.out" "$log/f.err"; then
                    # MPICH's hydra killed the other PEs before their watchdogs spoke: its
                    # message names the process by pid only
                    named="by pid (hydra)"
                fi
                if [ -z "$at" ]; then
                    echo "fault $l $kind PE $pe at $ms ms: the fault did not happen (status $st)"
                    fail=1
                    tail -5 "$log/f.err" | sed 's/^/    /'
                    continue
                fi
                took=$(((end - at) / 1000000))
                [ $took -gt $worst ] && worst=$took
                ok=ok
                if [ $st -eq 0 ] || [ $st -eq 124 ] || [ $st -eq 137 -a "$kind" != kill ] || [ $took -ge 10000 ] || [ "$named" = no ] || [ "$left" -ne 0 ]; then
                    ok=FAILED
                    fail=1
                fi
                echo "fault $l $kind PE $pe at $ms ms: job ended $took ms after the fault, status $st, PE named: $named, files left: $left: $ok"
                [ $ok = ok ] || tail -8 "$log/f.err" | sed 's/^/    /'
            done
        done
    done
    echo "faults: longest time from a fault to the job's end: $worst ms"
}

initloop() { # jobs np
    jobs=$1 np=$2
    [ -x "$TESTS/initfini" ] || { echo "initloop: $TESTS/initfini not built"; fail=1; return; }
    tenth=$((jobs / 10))
    [ $tenth -ge 1 ] || tenth=1
    first=0 last=0 bad=0 i=0
    clean_dir
    shm0=$(ls /dev/shm | wc -l)
    while [ $i -lt "$jobs" ]; do
        i=$((i + 1))
        t0=$(now_ns)
        "$RUN" --timeout 60 -n "$np" "$TESTS/initfini" >"$log/i.out" 2>&1
        st=$?
        t1=$(now_ns)
        dt=$(((t1 - t0) / 1000))
        [ $i -le $tenth ] && first=$((first + dt))
        [ $i -gt $((jobs - tenth)) ] && last=$((last + dt))
        if [ $st -ne 0 ] || [ "$(left_files)" -ne 0 ] || ! grep -q "^PASS: initfini" "$log/i.out"; then
            bad=$((bad + 1))
            echo "initloop: job $i: status $st, files left $(left_files)"
            tail -5 "$log/i.out" | sed 's/^/    /'
            clean_dir
        fi
    done
    shm1=$(ls /dev/shm | wc -l)
    fds=$(grep -h "^initfini: PE 0" "$log/i.out")
    echo "initloop: $jobs jobs of $np PEs under ishmrun: $bad failed; mean time per job: first $tenth $((first / tenth / 1000)) ms, last $tenth $((last / tenth / 1000)) ms; last job: $fds; files left in the shm directory: $(left_files); /dev/shm entries before $shm0, after $shm1"
    [ $bad -eq 0 ] || fail=1
}

stress() { # ops np
    ops=$1 np=$2
    t0=$(now_ns)
    "$RUN" -n "$np" "$TESTS/stress" "$ops" 8 >"$log/s.out" 2>"$log/s.err"
    st=$?
    t1=$(now_ns)
    echo "stress: $np PEs x 8 threads x $ops operations: status $st, $(((t1 - t0) / 1000000)) ms"
    grep -E "^(stress|PASS|FAIL)" "$log/s.out" "$log/s.err" | sed 's/^[^:]*://' | sed 's/^/    /'
    [ $st -eq 0 ] || fail=1
}

echo "reliability: tree $(tree), $(date -u +%Y-%m-%d), $(nproc) cores, backend: ${ISHMEM_GPU:-auto}"
what=${1:-all}
[ $# -gt 0 ] && shift
case $what in
soak) soak "${1:-600}" "${2:-4}" ;;
fabric)
    FABRIC=1 soak "${1:-120}" "${2:-4}" ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm" ;;
faults) faults "${1:-5}" "${2:-4}" ;;
initloop) initloop "${1:-1000}" "${2:-4}" ;;
stress) stress "${1:-1000000}" "${2:-4}" ;;
all)
    stress 1000000 4
    initloop 1000 4
    faults 5 4
    FABRIC=1 soak 120 4 ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm"
    soak 600 4 ;;
*) echo "usage: reliability.sh soak|fabric|faults|initloop|stress|all [args]"; exit 2 ;;
esac
if [ $fail -eq 0 ]; then echo "reliability $what: PASSED"; else echo "reliability $what: FAILED"; fi
exit $fail
