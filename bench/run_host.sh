#!/usr/bin/env bash
# run_host.sh -- build and run the host benchmark for ishmem and for the peer
# (OpenMPI OSHMEM), 2 PEs each, then compare.
#
#   bench/run_host.sh                 # full run (both libraries, ~1 min idle)
#   bench/run_host.sh --quick         # fewer sizes, shorter runs
#   bench/run_host.sh --only oshmem   # or --only ishmem
#   bench/run_host.sh --update-doc    # also put the table into docs/PERFORMANCE.md
#   bench/run_host.sh --fabric        # between 2 pretend nodes on loopback: ishmem over
#                                     # libfabric tcp;ofi_rxm (ISHMEM_NODE_SPLIT=2), OSHMEM over
#                                     # UCX TCP (FABRIC-NOTES flags); results host-fabric-*
#   bench/run_host.sh -- --ops p,g    # everything after -- goes to host_bench
#
# Environment:
#   NP=2                     PEs per run
#   RUNS=5                   runs per library; each row keeps the median run
#                            (ping-pong and barrier rows differ by up to 4x
#                            between launches on a VM; see PERFORMANCE.md)
#   BENCH_BACKEND=cpu        backend column of the ishmem rows
#   BENCH_MACHINE=<name>     machine column (default: <hostname>-<nproc>core)
#   CC=cc                    compiler for the ishmem build (oshcc for the peer)
#   OSHRUN_FLAGS=...         replaces the default oshrun flags (see below)
#   WAIT_IDLE=300            before each run wait up to this many seconds for
#                            the CPUs to be idle (<= IDLE_MAX_BUSY=10 % busy)
#   NO_BUILD=1               do not run make install, use build/prefix as is
#   PYTHON=python3           interpreter for compare.py (default: the first of
#                            python3, /usr/bin/python3 that imports matplotlib)
#
# Outputs: bench/results/host-<lib>.csv, bench/results/host-table.md (NP other than 2:
#          host-np<NP>-*; --fabric: host-fabric-*),
#          bench/results/plots/*.png. A library that cannot be built or run
#          is skipped with a warning, and its previous CSV is left untouched.
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH="$ROOT/bench"
BUILD="$BENCH/build"
RESULTS="$BENCH/results"
PREFIX="$ROOT/build/prefix"
NP=${NP:-2}
RUNS=${RUNS:-5}
CC=${CC:-cc}
CFLAGS="-O2 -Wall -Wextra"
export BENCH_BACKEND=${BENCH_BACKEND:-cpu}

# OSHMEM flags that exit cleanly on a small VM (see docs/PERFORMANCE.md):
#  --mca osc ^rdma   without it the osc/rdma component segfaults in
#                    shmem_finalize (rc 139) with OpenMPI 4.1.4 + UCX 1.13
#  --oversubscribe   allow NP > cores (2-core VMs)
#  --allow-run-as-root  containers/VMs often run as root
OSHRUN_FLAGS=${OSHRUN_FLAGS:---allow-run-as-root --oversubscribe --mca osc ^rdma}

ONLY=""
FABRIC=0
DOC=()
QUICK=()
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=(--quick) ;;
        --update-doc) DOC=(--doc "$ROOT/docs/PERFORMANCE.md") ;;
        --only) ONLY=$2; shift ;;
        --fabric) FABRIC=1 ;;
        --only=*) ONLY=${1#--only=} ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
        *) echo "run_host.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

# Fabric mode: every PE of the 2 is its own pretend node, so every operation crosses
# loopback TCP. OSHMEM needs its flags to leave shared memory (and its targets must make
# progress in a barrier: --target-wait=barrier, for both libraries alike).
TAG=host
if [ "$FABRIC" = 1 ]; then
    TAG=host-fabric
    export ISHMEM_NODE_SPLIT=2 ISHMEM_OFI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo
    OSHRUN_FLAGS="--allow-run-as-root --oversubscribe --mca osc ^rdma --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo"
    EXTRA=(--target-wait=barrier "${EXTRA[@]}")
    export BENCH_BACKEND=fabric-tcp
fi
# results of another PE count go beside the 2-PE ones (host-np4-*, host-fabric-np4-*)
[ "$NP" != 2 ] && TAG="$TAG-np$NP"
mkdir -p "$BUILD" "$RESULTS"
warn() { echo "run_host.sh: WARNING: $*" >&2; }
note() { echo "run_host.sh: $*" >&2; }

# busy_pct: percent of all CPUs busy over the next 0.5 s (from /proc/stat)
busy_pct() {
    local a b
    a=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6; exit}' /proc/stat)
    sleep 0.5
    b=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6; exit}' /proc/stat)
    echo "$a $b" | awk '{busy=$3-$1; idle=$4-$2; t=busy+idle; print (t>0)?int(100*busy/t):0}'
}
# wait_idle: on a shared machine, wait (up to WAIT_IDLE seconds) until other
# work leaves the CPUs idle; a benchmark next to a compiler measures nothing.
wait_idle() {
    local waited=0 b
    [ -r /proc/stat ] || return 0
    while :; do
        b=$(busy_pct)
        [ "$b" -le "$IDLE_MAX_BUSY" ] && return 0
        if [ "$waited" -ge "$WAIT_IDLE" ]; then
            warn "CPUs still ${b}% busy after ${waited}s: running anyway, numbers will be skewed"
            return 0
        fi
        [ "$waited" = 0 ] && note "CPUs ${b}% busy with other work: waiting (up to ${WAIT_IDLE}s)"
        sleep 2; waited=$((waited + 3))
    done
}
WAIT_IDLE=${WAIT_IDLE:-300}
IDLE_MAX_BUSY=${IDLE_MAX_BUSY:-10}

status=0

# a python for compare.py that has matplotlib (pyenv shims often lack it)
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    for cand in python3 /usr/bin/python3; do
        if command -v "$cand" >/dev/null && "$cand" -c 'import matplotlib' 2>/dev/null; then
            PY=$cand; break
        fi
    done
    PY=${PY:-python3}
fi

# ---------------------------------------------------------------- ishmem
build_ishmem() {
    local pc="$PREFIX/lib/pkgconfig" have=0
    [ -f "$PREFIX/lib/libishmem.so" ] && [ -f "$pc/ishmem.pc" ] && have=1
    # (re)install when a Makefile exists (cargo makes it incremental), so the
    # numbers are for the current tree; NO_BUILD=1 uses what is installed.
    if [ -f "$ROOT/Makefile" ] && [ "${NO_BUILD:-0}" != 1 ]; then
        note "building ishmem: make install PREFIX=$PREFIX (log: $BUILD/ishmem-make.log)"
        if ! (cd "$ROOT" && make install PREFIX="$PREFIX") >"$BUILD/ishmem-make.log" 2>&1; then
            if [ $have = 1 ]; then
                warn "make install failed (see $BUILD/ishmem-make.log); using the existing install"
            else
                warn "make install failed (see $BUILD/ishmem-make.log)"; return 1
            fi
        fi
    elif [ $have = 0 ]; then
        warn "no $PREFIX/lib/libishmem.so and no Makefile to build it"; return 1
    fi
    local flags
    flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs ishmem) ||
        { warn "pkg-config ishmem failed"; return 1; }
    # version column: <ishmem_info_get_version>-<package version>+g<commit>
    local ver sha
    ver=$(PKG_CONFIG_PATH="$pc" pkg-config --modversion ishmem 2>/dev/null || echo unknown)
    sha=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)
    # shellcheck disable=SC2086
    $CC $CFLAGS -DBENCH_VERSION_SUFFIX="\"-$ver${sha:++g$sha}\"" \
        "$BENCH/host_bench.c" -o "$BUILD/host_bench_ishmem" $flags \
        -Wl,-rpath,"$PREFIX/lib" || { warn "compiling host_bench against ishmem failed"; return 1; }
}

# ---------------------------------------------------------------- oshmem
build_oshmem() {
    command -v oshcc >/dev/null || { warn "oshcc not found (apt-get install openmpi-bin libopenmpi-dev)"; return 1; }
    oshcc $CFLAGS -DBENCH_PEER_OSHMEM -I"$BENCH" "$BENCH/host_bench.c" \
        -o "$BUILD/host_bench_oshmem" || { warn "compiling host_bench with oshcc failed"; return 1; }
}

# ---------------------------------------------------------------- run
# Runs are interleaved (ishmem, oshmem, ishmem, oshmem, ...) so that both
# libraries see the same drift of a shared/virtual machine; every row keeps
# its median over the RUNS runs of its library.
libs=()
if [ -z "$ONLY" ] || [ "$ONLY" = ishmem ]; then
    if build_ishmem; then
        if [ -x "$PREFIX/bin/ishmrun" ]; then libs+=(ishmem); else warn "$PREFIX/bin/ishmrun missing"; status=1; fi
    else status=1; fi
fi
if [ -z "$ONLY" ] || [ "$ONLY" = oshmem ]; then
    if build_oshmem; then
        if command -v oshrun >/dev/null; then libs+=(oshmem); else warn "oshrun not found"; status=1; fi
    else status=1; fi
fi

# 2 x 64 MiB buffers + small ones: make the symmetric heaps big enough.
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-512M}
export ISHMEM_SYMMETRIC_SIZE=${ISHMEM_SYMMETRIC_SIZE:-1G}

launch() { # launch LIB ARGS...: run host_bench of LIB at NP PEs
    local lib=$1; shift
    case "$lib" in
        ishmem) "$PREFIX/bin/ishmrun" -n "$NP" "$BUILD/host_bench_ishmem" "$@" ;;
        # shellcheck disable=SC2086
        oshmem) oshrun $OSHRUN_FLAGS -np "$NP" "$BUILD/host_bench_oshmem" "$@" ;;
    esac
}
launch_line() {
    case "$1" in
        ishmem) echo "$PREFIX/bin/ishmrun -n $NP $BUILD/host_bench_ishmem" ;;
        oshmem) echo "oshrun $OSHRUN_FLAGS -np $NP $BUILD/host_bench_oshmem" ;;
    esac
}

declare -A failed=()
for lib in "${libs[@]}"; do note "$lib: $(launch_line "$lib") ${QUICK[*]} ${EXTRA[*]} (x$RUNS)"; done
for r in $(seq 1 "$RUNS"); do
    for lib in "${libs[@]}"; do
        [ -n "${failed[$lib]:-}" ] && continue
        f="$BUILD/$TAG-$lib.run$r.csv"
        wait_idle
        if ! launch "$lib" "${QUICK[@]}" "${EXTRA[@]}" >"$f"; then
            warn "$lib run $r failed; partial output in $f"; failed[$lib]=1; status=1
        fi
    done
done
for lib in "${libs[@]}"; do
    [ -n "${failed[$lib]:-}" ] && continue
    files=()
    for r in $(seq 1 "$RUNS"); do files+=("$BUILD/$TAG-$lib.run$r.csv"); done
    if "$PY" "$BENCH/compare.py" --merge "$RESULTS/$TAG-$lib.csv" "${files[@]}"; then
        note "wrote $RESULTS/$TAG-$lib.csv"
    else
        status=1
    fi
done

# ---------------------------------------------------------------- compare
shopt -s nullglob
csvs=()
for l in ishmem oshmem; do [ -f "$RESULTS/$TAG-$l.csv" ] && csvs+=("$RESULTS/$TAG-$l.csv"); done
if [ ${#csvs[@]} -gt 0 ]; then
    "$PY" "$BENCH/compare.py" --out "$RESULTS/$TAG-table.md" --plots "$RESULTS/plots-$TAG" \
        "${DOC[@]}" "${csvs[@]}" || { warn "compare.py failed"; status=1; }
else
    warn "no results to compare"; status=1
fi
exit $status
