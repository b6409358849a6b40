#!/usr/bin/env bash
# bench/exp/issue23_diag.sh: one device call that finds where a PE's kernel and its own
# library work wait for each other (issue 23): bench/exp/spin_probe.cu on each GPU (which
# driver operations run beside a spinning kernel of the same process), then the device tests
# across 2 pretend nodes with one PE per GPU (ISHMEM_GPU_DEVICE from the rank), with the host
# stacks of every PE (cuda-gdb, batch) taken while they hang. Needs the library carried in
# build/carry (with its symbols: strip --strip-debug). Output under $OUT/diag (packed).
set -u
cd "$(dirname "$0")/../.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
export PATH=$PATH:/usr/local/cuda/bin
D=${OUT:-/tmp}/diag
mkdir -p "$D" target/release
cp build/carry/* target/release/
P=/tmp/i23p
{ nvidia-smi -L; nvidia-smi topo -m; } >"$D/machine.txt" 2>&1
STRIP=0 scripts/install-prefix.sh $P >"$D/install.log" 2>&1 || echo "install failed" >>"$D/install.log"
FLAGS="-I$P/include -L$P/lib -lishmem -Xlinker -rpath=$P/lib"
B=/tmp/i23b
mkdir -p $B
nvcc -std=c++17 -arch=sm_90 bench/exp/spin_probe.cu -o $B/spin_probe -lcuda >"$D/build-probe.log" 2>&1 &
# shellcheck disable=SC2086
nvcc -arch=sm_90 tests/gpu/proxy_ops.cu $FLAGS -o $B/proxy_ops >"$D/build-proxy_ops.log" 2>&1 &
# shellcheck disable=SC2086
nvcc -arch=sm_90 tests/gpu/coll_ops.cu $FLAGS -o $B/coll_ops >"$D/build-coll_ops.log" 2>&1 &
wait
NG=$(nvidia-smi -L | grep -c '^GPU')
for g in $(seq 0 $((NG - 1))); do timeout 120 $B/spin_probe "$g" >"$D/probe$g.csv" 2>&1 & done
wait
CUDA_MODULE_LOADING=EAGER timeout 120 $B/spin_probe 0 >"$D/probe0-eager.csv" 2>&1

stacks() { # NAME FILE: host stacks of every process called NAME (in parallel)
    local p kids=()
    for p in $(pgrep -x "$1"); do
        {
            echo "== pid $p rank $(tr '\0' '\n' </proc/$p/environ | grep -E '^ISHMRUN_RANK=' | cut -d= -f2)"
            for t in /proc/$p/task/*; do echo "   $(cat $t/comm) wchan=$(cat $t/wchan) syscall=$(cut -d' ' -f1 $t/syscall)"; done
            timeout 25 cuda-gdb -batch -p "$p" -ex 'set pagination off' -ex 'thread apply all bt 30' 2>&1 |
                grep -vE '^\[New Thread|^warning:|^$' | head -n 400
        } >"$2.$p" 2>&1 &
        kids+=($!)
    done
    [ ${#kids[@]} -gt 0 ] && wait "${kids[@]}"
    cat "$2".* >"$2" 2>/dev/null && rm -f "$2".*
}
FAB=(ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm" ISHMEM_GPU=1 ISHMEM_PROXY_STALL_S=30)
# one_case NAME SECS_BEFORE_STACKS TIMEOUT PROG NP ENV...
one_case() {
    local name=$1 at=$2 lim=$3 prog=$4 np=$5
    shift 5
    local t0=$SECONDS
    env "${FAB[@]}" "$@" $P/bin/ishmrun --timeout "$lim" -n "$np" sh -c \
        'export ISHMEM_GPU_DEVICE=$((ISHMRUN_RANK % '"$NG"')); exec "$0"' "$B/$prog" >"$D/$name.log" 2>&1 &
    local pid=$!
    local w=0
    while [ $w -lt "$at" ] && kill -0 $pid 2>/dev/null; do sleep 1; w=$((w + 1)); done
    if kill -0 $pid 2>/dev/null; then stacks "$prog" "$D/$name.stacks"; fi
    wait $pid
    echo "$name: status $? after $((SECONDS - t0)) s" | tee -a "$D/summary.txt"
}
one_case proxy_ops.2pe.pergpu 12 45 proxy_ops 2
one_case proxy_ops.2pe.pergpu.eager 99 45 proxy_ops 2 CUDA_MODULE_LOADING=EAGER
one_case proxy_ops.4pe.pergpu 15 45 proxy_ops 4 ISHMEM_SYMMETRIC_SIZE=256M
one_case coll_ops.2pe.pergpu 35 50 coll_ops 2 COLL_OPS_TRACE=1
tar -C "$D/.." -czf "${OUT:-/tmp}/diag.tar.gz" diag && rm -rf "$D"
