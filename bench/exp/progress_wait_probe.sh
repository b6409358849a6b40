#!/usr/bin/env bash
# bench/exp/progress_wait_probe.sh: is a kernel's put_signal round trip to another node (issue
# 23) the target's progress thread sleeping through work its wait fd did not announce? Runs
# bench/gpu_bench.cu's rows that need the target's mailbox server while the target's own kernel
# runs (put_signal, barrier_all) and two that do not (p, g: the target runs no kernel), one PE
# per GPU across 2 pretend nodes, with the progress thread's longest wait
# (ISHMEMI_PROGRESS_WAIT_US) at the default 1000 us, then 200 and 50 us, alternating twice;
# ISHMEMI_PROXY_PROFILE=1 prints how the waits ended.
#   device:  run(carry=[<a copy of the tree with build/carry>], kind="nvidia-h100-x2",
#                command="bench/exp/progress_wait_probe.sh")
set -u
cd "$(dirname "$0")/../.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-build}/progress-wait
B=/tmp/progress-wait
mkdir -p "$O" "$B/build"
cp build/carry/* "$B/build/"
scripts/install-prefix.sh "$B/prefix" "$B/build" >"$O/install.log" 2>&1 || { echo "install failed"; exit 1; }
nvcc -std=c++17 -arch=sm_90 -DBENCH_NO_COLL -DBENCH_NO_QUEUE -I"$B/prefix/include" bench/gpu_bench.cu \
    -L"$B/prefix/lib" -lishmem -Xlinker -rpath,"$B/prefix/lib" -o "$B/gpu_bench" >"$O/build.log" 2>&1 ||
    { echo "build failed"; tail -20 "$O/build.log"; exit 1; }
for r in 1 2; do
    for w in 1000 200 50; do
        env ISHMEM_GPU=1 NPES=2 ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm" ISHMEMI_PROXY_PROFILE=1 \
            ISHMEMI_PROGRESS_WAIT_US=$w BENCH_MACHINE="h100-x2-wait$w" timeout -k 5 150 "$B/gpu_bench" --quick \
            --ops p,g,put_signal,barrier_all --scopes thread,host --reps 3 >"$O/wait$w-$r.csv" 2>"$O/wait$w-$r.log" ||
            echo "wait $w round $r: FAILED ($?)"
        grep -v '^lib,' "$O/wait$w-$r.csv" | awk -F, -v w="$w" '{printf "wait_us=%s %-12s %-6s %10s %s\n", w, $4, $5, $9, $10}'
        grep -h "progress thread profile" "$O/wait$w-$r.log" | sed "s/^/  /"
    done
done
