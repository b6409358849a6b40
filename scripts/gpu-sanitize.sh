#!/usr/bin/env bash
# Issue 12, item 6 on a GPU machine: compute-sanitizer (memcheck, racecheck) over the GPU test
# programs at 2 PEs on one GPU, and a PE killed while the other waits inside a kernel (the job
# must end, naming it; then a fresh job must run on the GPU). Like scripts/gpu-check.sh it
# installs the carried build. Summary on stdout, logs in $OUT/gpu-sanitize (else build/).
#   device:  run(carry=["build/carry"], command="scripts/gpu-sanitize.sh")
set -u
cd "$(dirname "$0")/.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
CARRY=${CARRY:-build/carry}
if [ -d "$CARRY" ]; then mkdir -p target/release && cp "$CARRY"/* target/release/; fi
O=${OUT:-build}/gpu-sanitize
B=build/gpu-sanitize
mkdir -p "$O" "$B"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CS=${CS:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
scripts/install-prefix.sh "$B/prefix" >"$O/install.log" 2>&1 || { echo "install failed"; exit 1; }
FLAGS=(-std=c++17 -arch=sm_90 -I"$B/prefix/include" -L"$B/prefix/lib" -lishmem -Xlinker -rpath,"$PWD/$B/prefix/lib")
RUN=("$B/prefix/bin/ishmrun" --timeout 240 -n 2)
rc=0
for p in kernel_api proxy_ops kill_in_kernel; do
    "$NVCC" "tests/gpu/$p.cu" "${FLAGS[@]}" -o "$B/$p" >"$O/build-$p.log" 2>&1 || { echo "build $p: FAILED"; rc=1; }
done
for tool in memcheck racecheck; do
    for p in kernel_api proxy_ops; do
        env=(ISHMEM_GPU=1)
        [ "$p" = proxy_ops ] && env+=(ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm")
        log="$O/$tool-$p.log"
        env "${env[@]}" timeout 280 "${RUN[@]}" "$CS" --tool "$tool" --error-exitcode 42 "$B/$p" >"$log" 2>&1
        st=$?
        sums=$(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$log" | sort | uniq -c | tr '\n' ';')
        if [ $st = 0 ]; then echo "sanitize $tool $p: ok ($sums)"; else echo "sanitize $tool $p: FAILED status $st ($sums)"; rc=1; fi
    done
done
# A PE killed while the other waits in a kernel.
t0=$(date +%s%N)
ISHMEM_GPU=1 timeout 60 "${RUN[@]}" "$B/kill_in_kernel" >"$O/kill_in_kernel.log" 2>&1
st=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
named=no; grep -q 'PE 1' "$O/kill_in_kernel.log" && named=yes
if [ $st != 0 ] && [ $st != 124 ] && [ $named = yes ]; then echo "kill_in_kernel: ok (job ended in $ms ms, status $st, PE 1 named)"
else echo "kill_in_kernel: FAILED (status $st after $ms ms, named $named)"; rc=1; fi
tail -5 "$O/kill_in_kernel.log"
# The GPU is usable afterwards: a fresh job with kernels.
if ISHMEM_GPU=1 timeout 120 "${RUN[@]}" "$B/kernel_api" >"$O/after-kill.log" 2>&1; then echo "after kill: kernel_api ok"
else echo "after kill: kernel_api FAILED"; rc=1; fi
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >"$O/nvidia-smi-after.txt" 2>&1
echo "compute processes left: $(grep -vc pid "$O/nvidia-smi-after.txt")"
exit $rc
