#!/usr/bin/env bash
# GPU latency work on ONE GPU (issue 16), in one device call: installs the carried build (and,
# for an A/B, an older one), runs bench/run_gpu.sh --one-gpu (NVSHMEM and ishmem, 1 PE each
# targeting itself, alternating REPEAT times; ishmem with 2 PEs on the GPU), then the
# profiling that says where an on-queue call's time goes:
#   - ISHMEM_QUEUE_STATS=1: what each on-queue form hands the driver (launches, copies,
#     queries, context pushes per call);
#   - ncu: the kernels each library launches per on-queue call (names and GPU time), for
#     putmem_on_queue_lat and the on-queue collectives at 8 B;
#   - cuobjdump -res-usage: registers and stack of the benchmark's device kernels, both builds.
# Everything is packed into $OUT/gpu-latency.tar.gz (the device tool returns at most 8 files),
# with onegpu-table.md beside it.
#   here:   cargo build --release --workspace && mkdir -p build/carry && cp target/release/{libishmem.so,ishmrun,ishmem-info} build/carry/ && strip build/carry/*
#           (A/B: the same of the older tree into build/carry-base)
#   device: run(carry=["build/carry","build/carry-base"], command="scripts/gpu-latency.sh")
#   Variables: REPEAT (3), REPEAT_2PE (1), NO_PROFILE=1 (tables only), ONE_ARGS (gpu_bench rows),
#   NCU_OPS (rows profiled by ncu), NCU_TIMEOUT (60 s each), DEADLINE (run_gpu.sh's, 520 s).
set -u
cd "$(dirname "$0")/.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0   # never NVLink multicast on the shared GPUs
OUT=${OUT:-build/gpu-latency-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
rc=0
scripts/install-prefix.sh build/prefix build/carry >"$OUT/install.log" 2>&1 || { echo "install failed"; tail "$OUT/install.log"; exit 1; }
if [ -f build/carry-base/libishmem.so ]; then
    # the base's headers: its own tree's, carried beside it (include/ of the older commit)
    if [ -d build/carry-base/include ]; then
        mkdir -p build/base-tree && cp -r build/carry-base/include build/base-tree/
        ISHMEM_BASE_PREFIX=$PWD/build/prefix-base
        mkdir -p "$ISHMEM_BASE_PREFIX/lib" "$ISHMEM_BASE_PREFIX/include"
        cp build/carry-base/libishmem.so "$ISHMEM_BASE_PREFIX/lib/libishmem.so.1"
        ln -sf libishmem.so.1 "$ISHMEM_BASE_PREFIX/lib/libishmem.so"
        cp -r build/carry-base/include/. "$ISHMEM_BASE_PREFIX/include/"
        export ISHMEM_BASE_PREFIX
    else
        echo "gpu-latency: build/carry-base has no include/: base left out" >&2
    fi
fi
export ISHMEM_PREFIX=$PWD/build/prefix
OUT=$OUT/bench bash bench/run_gpu.sh --one-gpu || rc=1
cp "$OUT/bench/onegpu-table.md" "$OUT/" 2>/dev/null

if [ -z "${NO_PROFILE:-}" ]; then
    P=$OUT/profile
    mkdir -p "$P"
    B=bench/build
    ops=putmem_on_queue_lat,broadcast_on_queue,fcollect_on_queue,sum_reduce_on_queue,team_sync_on_queue,barrier_all_on_queue
    # what the on-queue forms hand the driver, per call (1 PE and 2 PEs)
    for np in 1 2; do
        ISHMEM_QUEUE_STATS=1 NPES=$np timeout 120 "$B/gpu_bench_ishmem" --quick --ops "$ops" --coll-sizes 8 \
            >"$P/stats-$np.csv" 2>"$P/stats-$np.log"
        grep 'ISHMEM_QUEUE_STATS' "$P/stats-$np.log" | sed "s/^/NPES=$np /"
    done | tee "$P/queue-stats.txt"
    # one thread's chains of loads, atomics and fences on its own GPU's memory, by form
    NVCC_=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    "$NVCC_" -O2 -std=c++17 -arch=sm_90 bench/exp/scope_probe.cu -o "$B/scope_probe" >"$P/scope_probe.log" 2>&1 &&
        timeout 60 "$B/scope_probe" | tee "$P/scope-probe.txt"
    # kernels per on-queue call: ncu lists every launch; the benchmark's own kernels (k_*) are
    # left out of the count
    if command -v ncu >/dev/null && [ -n "${NCU_OPS-x}" ]; then
        for lib in nvshmem ishmem; do
            [ -x "$B/gpu_bench_$lib" ] || continue
            for op in ${NCU_OPS-putmem_on_queue_lat broadcast_on_queue}; do
                NPES=1 timeout "${NCU_TIMEOUT:-60}" ncu --launch-count 400 --metrics gpu__time_duration.sum --csv \
                    "$B/gpu_bench_$lib" --quick --reps 1 --target-ms 0.05 --ops "$op" --coll-sizes 8 \
                    >"$P/ncu-$lib-$op.csv" 2>"$P/ncu-$lib-$op.log"
                python3 - "$P/ncu-$lib-$op.csv" "$lib" "$op" <<'EOF' | tee -a "$P/ncu-summary.txt"
import csv, sys, collections, re
path, lib, op = sys.argv[1:4]
rows = []
with open(path) as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    rows.append(r)
names = collections.Counter()
dur = collections.defaultdict(list)
for r in rows:
    n = r.get("Kernel Name", "?")
    n = re.sub(r"\(.*", "", n)
    if n.startswith("k_") or "k_fill" in n or "k_check" in n or "k_icheck" in n or "k_ifill" in n:
        continue
    names[n] += 1
    try:
        dur[n].append(float(r.get("Metric Value", "0").replace(",", "")))
    except ValueError:
        pass
print(f"{lib} {op}: library kernels launched (name: count, median GPU time ns)")
for n, c in names.most_common():
    d = sorted(dur[n])
    print(f"   {n}: {c}, {d[len(d)//2] if d else 0:.0f} ns")
EOF
            done
        done
    fi
    # registers / stack / shared memory of the benchmark kernels
    for lib in nvshmem ishmem ishmem_base; do
        [ -x "$B/gpu_bench_$lib" ] || continue
        cuobjdump -res-usage "$B/gpu_bench_$lib" 2>&1 | grep -A1 -E 'Function .*(k_coll|k_p|k_g|k_fetch|k_putmem|k_barrier|k_pingpong)' \
            | grep -v '^--' >"$P/res-usage-$lib.txt"
    done
fi
echo "gpu-latency: done in $(( $(date +%s) - T0 ))s (status $rc)"
tgz=$(mktemp "${TMPDIR:-/tmp}/gpu-latency.XXXXXX") && tar -C "$OUT" -czf "$tgz" . && find "$OUT" -mindepth 1 -maxdepth 1 ! -name onegpu-table.md -exec rm -rf {} + &&
    mv "$tgz" "$OUT/gpu-latency.tar.gz"
exit $rc
