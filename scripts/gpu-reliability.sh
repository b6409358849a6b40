#!/bin/sh
# The reliability runs of issue 12 on the CUDA backend (ISHMEM_GPU=1: the symmetric heap in GPU
# memory), on a GPU machine from the repository root, like scripts/gpu-check.sh: it installs
# the library built elsewhere (target/release carried to the machine), builds the soak, heap,
# and init/finalize programs with cc against the install, and runs scripts/reliability.sh with
# GPU=1:
#   - the soak, SOAK_S seconds (default 60) at NP (default 2) PEs under each launcher found;
#   - the fault runs: SIGKILL, SIGSEGV, exit(0) of a random PE at a random time, RUNS (3) each;
#   - JOBS (100) init/finalize jobs in a row;
#   - heap exhaustion and fragmentation with a 4 MiB GPU heap.
# With one GPU the PEs share it; with several, PE i uses GPU i mod count.
#   scripts/gpu-reliability.sh        (SOAK_S=, NP=, RUNS=, JOBS= may be set; log in $OUT)
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
B=$ROOT/build/gpu-reliability
PREFIX=$B/prefix
mkdir -p "$B"
OUTDIR=${OUT:-$ROOT/build}
SECS=${SOAK_S:-60}
NP=${NP:-2}
RUNS=${RUNS:-3}
JOBS=${JOBS:-100}
scripts/install-prefix.sh "$PREFIX" >"$B/install.log" 2>&1 || { echo "gpu-reliability: install failed"; cat "$B/install.log"; exit 1; }
CFLAGS="-std=c11 -O2 -I$PREFIX/include -Itests/c"
LIBS="-L$PREFIX/lib -lishmem -Wl,-rpath,$PREFIX/lib -lpthread"
for p in soak heap initfini; do
    # shellcheck disable=SC2086
    cc $CFLAGS "tests/c/$p.c" $LIBS -o "$B/$p" || { echo "gpu-reliability: cannot build $p"; exit 1; }
done
nvidia-smi -L 2>/dev/null
fail=0
run() {
    GPU=1 PREFIX=$PREFIX TESTS=$B scripts/reliability.sh "$@" 2>&1 | tee -a "$OUTDIR/gpu-reliability.log"
    # tee hides the status: the script's last line says it
    tail -n 1 "$OUTDIR/gpu-reliability.log" | grep -q PASSED || fail=1
}
: >"$OUTDIR/gpu-reliability.log"
run soak "$SECS" "$NP"
run faults "$RUNS" "$NP"
run initloop "$JOBS" "$NP"
# heap exhaustion on a 4 MiB GPU heap
if ISHMEM_GPU=1 ISHMEM_SYMMETRIC_SIZE=4M "$PREFIX/bin/ishmrun" --timeout 120 -n "$NP" "$B/heap" >"$B/heap.log" 2>&1 &&
    grep -q "^PASS: heap" "$B/heap.log"; then
    echo "gpu-reliability: heap ($NP PEs, 4 MiB GPU heap): $(grep '^heap:' "$B/heap.log")" | tee -a "$OUTDIR/gpu-reliability.log"
else
    echo "gpu-reliability: heap: FAILED" | tee -a "$OUTDIR/gpu-reliability.log"
    tail -n 20 "$B/heap.log"
    fail=1
fi
if [ $fail -eq 0 ]; then echo "gpu-reliability: PASSED"; else echo "gpu-reliability: FAILED"; fi
exit $fail
