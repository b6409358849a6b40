#!/usr/bin/env bash
# The proxy's rows with one PE per GPU across 2 pretend nodes (issue 23), beside the same
# operations issued from the host on the GPU heap, in one program and one run
# (bench/gpu_bench.cu, scope host): p + quiet, putmem + quiet, g, fetch_add, compare_swap,
# put_signal round trip, barrier_all, and putmem_nbi bandwidth (block and thread scope, host).
# Optionally an A/B: a second build carried in build/carry-base (with its include/ when its
# device headers differ from this tree's) runs alternately with build/carry, ROUNDS rounds
# each (default 3); bench/exp/proxy_ab_table.py writes the table of
# medians. BW_MAX: the largest putmem_nbi size (default 1 MiB; --quick's sizes are 4 KiB, 64 KiB,
# 1 MiB, 16 MiB). With ISHMEMI_PROXY_PROFILE=1 (set here for the carried build) each PE prints at
# finalize where its proxy thread's and mailbox server's time went (logs).
#   device:  run(carry=["build/carry","build/carry-base"], kind="nvidia-h100-x2",
#                command="scripts/gpu-proxy-ab.sh")
# Output: $OUT/proxy-ab/ (CSVs, logs, table.md), packed into $OUT/proxy-ab.tar.gz.
set -u
cd "$(dirname "$0")/.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0   # never NVLink multicast
export PATH=$PATH:/usr/local/cuda/bin
ROUNDS=${ROUNDS:-3}
# Each timed latency run lasts about LAT_MS ms (--quick's 1 ms was 13-19 operations of 50-70 us:
# a few microseconds of noise per row; 10 ms costs a second per run).
LAT_MS=${LAT_MS:-10}
O=${OUT:-build}/proxy-ab
B=/tmp/proxy-ab
mkdir -p "$O" "$B"
NG=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
{ nvidia-smi -L; nvidia-smi topo -m; } >"$O/machine.txt" 2>&1
[ "$NG" -ge 2 ] || echo "gpu-proxy-ab: only $NG GPU(s): both PEs share GPU 0 (not the one-PE-per-GPU case)" | tee -a "$O/machine.txt"
# AB_PHASE=build: install and compile only (beside other work: it measures nothing);
# AB_PHASE=run: the runs only, with what a build phase left; unset: both.
PHASE=${AB_PHASE:-all}
VARIANTS=()
for v in carry carry-base; do
    [ -d "build/$v" ] || continue
    if [ "$PHASE" = run ]; then VARIANTS+=("$v"); continue; fi
    rm -rf "$B/$v-build" && mkdir -p "$B/$v-build" && cp "build/$v"/{libishmem.so,ishmrun,ishmem-info} "$B/$v-build/"
    if ! scripts/install-prefix.sh "$B/$v" "$B/$v-build" >"$O/install-$v.log" 2>&1; then
        echo "gpu-proxy-ab: install of $v failed"; tail -5 "$O/install-$v.log"; exit 1
    fi
    # A build whose headers differ from this tree's (the device side of the ring changed)
    # carries its own include/: the benchmark is compiled against the headers of its library.
    if [ -d "build/$v/include" ]; then
        cp -r "build/$v/include/." "$B/$v/include/" && echo "gpu-proxy-ab: $v: its own include/" >>"$O/install-$v.log"
    fi
    nvcc -std=c++17 -arch=sm_90 -DBENCH_NO_COLL -DBENCH_NO_QUEUE -I"$B/$v/include" bench/gpu_bench.cu \
        -L"$B/$v/lib" -lishmem -Xlinker -rpath,"$B/$v/lib" -o "$B/gpu_bench-$v" >"$O/build-$v.log" 2>&1 &
    VARIANTS+=("$v")
done
wait
for v in "${VARIANTS[@]}"; do
    [ -x "$B/gpu_bench-$v" ] || { echo "gpu-proxy-ab: build for $v failed"; tail -20 "$O/build-$v.log"; exit 1; }
done
[ "$PHASE" = build ] && { echo "gpu-proxy-ab: built ${VARIANTS[*]}"; exit 0; }
ENV=(ISHMEM_GPU=1 NPES=2 ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm")
rc=0
for r in $(seq 1 "$ROUNDS"); do
    for v in "${VARIANTS[@]}"; do
        prof=()
        [ "$v" = carry ] && prof=(ISHMEMI_PROXY_PROFILE=1)
        for part in lat bw; do
            if [ $part = lat ]; then
                args=(--ops p,putmem_quiet,g,fetch_add,compare_swap,put_signal,barrier_all --scopes thread,host --reps 3 --target-ms "$LAT_MS")
            else
                args=(--ops putmem_nbi --scopes block,thread,host --grids 1 --max-bytes "${BW_MAX:-1048576}" --reps 3)
            fi
            tag=$v-$part-$r
            t0=$SECONDS
            if env "${ENV[@]}" "${prof[@]}" BENCH_MACHINE="h100-x2-$v" timeout -k 5 200 "$B/gpu_bench-$v" --quick "${args[@]}" \
                >"$O/$tag.csv" 2>"$O/$tag.log"; then
                echo "gpu-proxy-ab: $tag ok ($((SECONDS - t0)) s)"
            else
                echo "gpu-proxy-ab: $tag FAILED (status $?, $((SECONDS - t0)) s)"; tail -5 "$O/$tag.log"; rc=1
            fi
            grep -h "profile" "$O/$tag.log" | sed "s/^/  $tag: /"
        done
    done
done
python3 bench/exp/proxy_ab_table.py "$O" >"$O/table.md" 2>"$O/table.err" || { echo "table failed"; cat "$O/table.err"; }
cat "$O/table.md"
if [ -n "${OUT:-}" ]; then
    tar -C "$OUT" -czf /tmp/proxy-ab.tar.gz proxy-ab && rm -rf "$O" && mkdir -p "$O" && mv /tmp/proxy-ab.tar.gz "$OUT/" &&
        tar -C "$OUT" -xzf "$OUT/proxy-ab.tar.gz" proxy-ab/table.md 2>/dev/null
fi
exit $rc
