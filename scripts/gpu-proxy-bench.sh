#!/usr/bin/env bash
# The proxy ring's benchmark rows (issue 13) on one GPU: bench/gpu_bench.cu with 2 PEs on the
# one GPU (fork mode), once as one node (direct loads, stores and atomics) and once as 2 pretend
# nodes (ISHMEM_NODE_SPLIT=2: every device operation goes through the proxy ring, then the
# target's staging mailbox over tcp;ofi_rxm on loopback). Latency rows of one thread (p + quiet,
# putmem + quiet, g, fetch_add, compare_swap, put_signal round trip, barrier_all) and the
# block-scope putmem_nbi bandwidth; then bench/exp/ring_probe.cu (the ring's placement).
# CSVs and logs go to $OUT/gpu-proxy-bench (else build/).
#   device:  run(carry=["build/carry"], command="scripts/gpu-proxy-bench.sh")
set -u
cd "$(dirname "$0")/.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
CARRY=${CARRY:-build/carry}
if [ -d "$CARRY" ]; then mkdir -p target/release && cp "$CARRY"/* target/release/; fi
O=${OUT:-build}/gpu-proxy-bench
B=build/proxy-bench
mkdir -p "$O" "$B"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
scripts/install-prefix.sh "$B/prefix" >"$O/install.log" 2>&1 || { echo "install failed"; exit 1; }
"$NVCC" -std=c++17 -arch=sm_90 -DBENCH_NO_COLL -DBENCH_NO_QUEUE -I"$B/prefix/include" bench/gpu_bench.cu \
    -L"$B/prefix/lib" -lishmem -Xlinker -rpath,"$PWD/$B/prefix/lib" -o "$B/gpu_bench" >"$O/build.log" 2>&1 ||
    { echo "build failed"; tail -20 "$O/build.log"; exit 1; }
rc=0
for mode in direct proxy; do
    env_=(ISHMEM_GPU=1 NPES=2 CUDA_VISIBLE_DEVICES=0 BENCH_MACHINE="one-gpu-$mode")
    [ "$mode" = proxy ] && env_+=(ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm")
    for ops in "p,putmem_quiet,g,fetch_add,compare_swap,put_signal,barrier_all" "putmem_nbi"; do
        tag=$mode-${ops%%,*}
        if env "${env_[@]}" timeout -k 5 240 "$B/gpu_bench" --quick --ops "$ops" --scopes thread,block --grids 1 \
            --max-bytes 4194304 >"$O/$tag.csv" 2>"$O/$tag.log"; then
            echo "gpu-proxy-bench: $tag: ok"
        else
            echo "gpu-proxy-bench: $tag: FAILED (status $?)"; tail -5 "$O/$tag.log"; rc=1
        fi
        grep -v '^lib,' "$O/$tag.csv" | awk -F, '{printf "  %-8s %-22s %-6s %9s B %10s %s\n", "'"$mode"'", $4, $5, $7, $9, $10}'
    done
done
# Where the ring should live (issue 13 item 1): pinned host memory (ishmem's choice), device
# memory polled by the host, or slots in host memory with done words in device memory.
if "$NVCC" -std=c++17 -arch=sm_90 -O2 bench/exp/ring_probe.cu -o "$B/ring_probe" >"$O/ring-probe-build.log" 2>&1; then
    if timeout -k 5 180 "$B/ring_probe" >"$O/ring-probe.csv" 2>"$O/ring-probe.log"; then
        echo "gpu-proxy-bench: ring_probe: ok"
    else
        echo "gpu-proxy-bench: ring_probe: FAILED (status $?)"; tail -5 "$O/ring-probe.log"; rc=1
    fi
    cat "$O/ring-probe.csv"
else
    echo "gpu-proxy-bench: ring_probe: build failed"; tail -20 "$O/ring-probe-build.log"; rc=1
fi
exit $rc
