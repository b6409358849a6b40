#!/usr/bin/env bash
# run_host.sh -- build and run the host benchmark for ishmem and for the peer
# (OpenMPI OSHMEM), 2 PEs each, then compare.
#
#   bench/run_host.sh                 # full run (both libraries, ~1 min)
#   bench/run_host.sh --quick         # fewer sizes, shorter runs
#   bench/run_host.sh --only oshmem   # or --only ishmem
#   bench/run_host.sh -- --ops p,g    # everything after -- goes to host_bench
#
# Environment:
#   NP=2                     PEs per run
#   BENCH_BACKEND=cpu        backend column of the ishmem rows
#   BENCH_MACHINE=<name>     machine column (default: <hostname>-<nproc>core)
#   CC=cc                    compiler for the ishmem build (oshcc for the peer)
#   OSHRUN_FLAGS=...         replaces the default oshrun flags (see below)
#   PYTHON=python3           interpreter for compare.py (default: the first of
#                            python3, /usr/bin/python3 that imports matplotlib)
#
# Outputs: bench/results/host-<lib>.csv, bench/results/host-table.md,
#          bench/results/plots/*.png. A library that cannot be built or run
#          is skipped with a warning, and its previous CSV is left untouched.
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH="$ROOT/bench"
BUILD="$BENCH/build"
RESULTS="$BENCH/results"
PREFIX="$ROOT/build/prefix"
NP=${NP:-2}
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
QUICK=()
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=(--quick) ;;
        --only) ONLY=$2; shift ;;
        --only=*) ONLY=${1#--only=} ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "run_host.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

mkdir -p "$BUILD" "$RESULTS"
warn() { echo "run_host.sh: WARNING: $*" >&2; }
note() { echo "run_host.sh: $*" >&2; }

load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
if awk "BEGIN{exit !($load > 0.5)}"; then
    warn "load average is $load: other work on this machine will skew the numbers"
fi

status=0

# ---------------------------------------------------------------- ishmem
build_ishmem() {
    local pc="$PREFIX/lib/pkgconfig"
    if [ ! -f "$PREFIX/lib/libishmem.so" ] || [ ! -f "$pc/ishmem.pc" ]; then
        if [ -f "$ROOT/Makefile" ]; then
            note "building ishmem: make install PREFIX=$PREFIX"
            (cd "$ROOT" && make install PREFIX="$PREFIX") >"$BUILD/ishmem-make.log" 2>&1 ||
                { warn "make install failed (see $BUILD/ishmem-make.log)"; return 1; }
        else
            warn "no $PREFIX/lib/libishmem.so and no Makefile to build it"; return 1
        fi
    fi
    local flags
    flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs ishmem) ||
        { warn "pkg-config ishmem failed"; return 1; }
    # shellcheck disable=SC2086
    $CC $CFLAGS "$BENCH/host_bench.c" -o "$BUILD/host_bench_ishmem" $flags \
        -Wl,-rpath,"$PREFIX/lib" || { warn "compiling host_bench against ishmem failed"; return 1; }
}

run_ishmem() {
    local launcher="$PREFIX/bin/ishmrun" out="$RESULTS/host-ishmem.csv"
    [ -x "$launcher" ] || { warn "$launcher missing"; return 1; }
    note "running ishmem ($BENCH_BACKEND backend), $NP PEs"
    if timeout 900 "$launcher" -n "$NP" "$BUILD/host_bench_ishmem" "${QUICK[@]}" "${EXTRA[@]}" \
        >"$out.tmp"; then
        mv "$out.tmp" "$out"; note "wrote $out"
    else
        warn "ishmem run failed (rc=$?); partial output in $out.tmp"; return 1
    fi
}

# ---------------------------------------------------------------- oshmem
build_oshmem() {
    command -v oshcc >/dev/null || { warn "oshcc not found (apt-get install openmpi-bin libopenmpi-dev)"; return 1; }
    oshcc $CFLAGS -DBENCH_PEER_OSHMEM -I"$BENCH" "$BENCH/host_bench.c" \
        -o "$BUILD/host_bench_oshmem" || { warn "compiling host_bench with oshcc failed"; return 1; }
}

run_oshmem() {
    local out="$RESULTS/host-oshmem.csv"
    command -v oshrun >/dev/null || { warn "oshrun not found"; return 1; }
    note "running oshmem, $NP PEs: oshrun $OSHRUN_FLAGS -np $NP"
    # 2 x 64 MiB buffers + small ones: make the symmetric heap big enough.
    # shellcheck disable=SC2086
    if SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-512M} timeout 900 \
        oshrun $OSHRUN_FLAGS -np "$NP" "$BUILD/host_bench_oshmem" "${QUICK[@]}" "${EXTRA[@]}" \
        >"$out.tmp"; then
        mv "$out.tmp" "$out"; note "wrote $out"
    else
        warn "oshmem run failed (rc=$?); partial output in $out.tmp"; return 1
    fi
}

if [ -z "$ONLY" ] || [ "$ONLY" = ishmem ]; then
    if build_ishmem; then run_ishmem || status=1; else status=1; fi
fi
if [ -z "$ONLY" ] || [ "$ONLY" = oshmem ]; then
    if build_oshmem; then run_oshmem || status=1; else status=1; fi
fi

# ---------------------------------------------------------------- compare
shopt -s nullglob
csvs=("$RESULTS"/host-*.csv)
if [ ${#csvs[@]} -gt 0 ]; then
    # prefer a python that has matplotlib (pyenv shims often lack it)
    PY=${PYTHON:-}
    if [ -z "$PY" ]; then
        for cand in python3 /usr/bin/python3; do
            if command -v "$cand" >/dev/null && "$cand" -c 'import matplotlib' 2>/dev/null; then
                PY=$cand; break
            fi
        done
        PY=${PY:-python3}
    fi
    "$PY" "$BENCH/compare.py" --out "$RESULTS/host-table.md" --plots "$RESULTS/plots" \
        "${csvs[@]}" || { warn "compare.py failed"; status=1; }
else
    warn "no results to compare"; status=1
fi
exit $status
