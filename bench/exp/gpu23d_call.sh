#!/usr/bin/env bash
# Issue 23 (gpu23d), the one device call on nvidia-h100-x2 (one PE per GPU, 2 pretend nodes over
# tcp;ofi_rxm): the across-node GPU checks that go through the proxy ring (proxy_ops, coll_ops,
# queue_ops at 2 and 4 PEs, ishmrun and mpirun), bench/exp/proxy_lat_probe.cu (per-phase
# globaltimer, torn-poll counts), then `ROUNDS=3 scripts/gpu-proxy-ab.sh`: main's library
# (carry-base, with main's device headers) and this tree's (carry) alternating, 3 rounds, each
# run of bench/gpu_bench.cu with the proxy rows (scope thread/block) and the host rows on the GPU
# heap (scope host) in one program: the A/B and the proxy table in one set of runs.
# The device tool copies main's tree: this tree travels as build/gpu23d/src.tgz, with its build
# (build/gpu23d/new: libishmem.so, ishmrun, ishmem-info), main's (build/gpu23d/base) and main's
# include/ (build/gpu23d/base-include.tgz).
#   device: run(carry=["build/gpu23d"], kind="nvidia-h100-x2", command="bash build/gpu23d/call.sh")
# Output: $OUT/gpu23d.tar.gz (logs, CSVs, table) and times.txt.
set -u
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 # never NVLink multicast
export PATH=$PATH:/usr/local/cuda/bin
MAIN=$PWD
C=$MAIN/build/gpu23d
W=/tmp/w
O=/tmp/g23d
mkdir -p "$W" "$O"
T0=$(date +%s)
t() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$O/times.txt"; }
tar -C "$W" -xzf "$C/src.tgz"
cd "$W" || exit 1
mkdir -p target/release build/carry build/carry-base
cp "$C"/new/* target/release/
cp "$C"/new/* build/carry/
cp "$C"/base/* build/carry-base/
tar -C build/carry-base -xzf "$C/base-include.tgz" # main's device headers (the ring before)
{ nvidia-smi -L; nvidia-smi topo -m; } >"$O/machine.txt" 2>&1
t "unpacked"
AB_PHASE=build OUT=$O scripts/gpu-proxy-ab.sh >"$O/ab-build.log" 2>&1 &
abb=$!
(scripts/install-prefix.sh /tmp/probe-prefix target/release >/dev/null 2>&1 &&
    nvcc -std=c++17 -arch=sm_90 -I/tmp/probe-prefix/include bench/exp/proxy_lat_probe.cu -L/tmp/probe-prefix/lib -lishmem \
        -Xlinker -rpath,/tmp/probe-prefix/lib -o /tmp/proxy_lat_probe) >"$O/probe-build.log" 2>&1 &
pb=$!
ONLY=${SUITE_ONLY:-'^(proxy_ops\.fabric\.(2pe|4pe|samegpu|mpirun|mpirun4)|coll_ops\.fabric\.(2pe|4pe|mpirun)|queue_ops\.fabric\.(2pe|4pe))$'}
NO_DEBUG_RERUN=1 NO_PTX_TEXT=1 BUILD_ONLY='proxy_ops|coll_ops|queue_ops' ONLY="$ONLY" OUT=$O LIMIT=60 COLL_LIMIT=90 \
    timeout "${SUITE_LIMIT:-200}" scripts/gpu-check.sh >"$O/suite.log" 2>&1
t "suite: exit $?"
grep -E "FAILED|passed|: ok" "$O/suite.log"
wait $abb $pb
t "builds done"
F=(ISHMEM_GPU=1 ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm" ISHMEMI_PROXY_PROFILE=1)
if [ -x /tmp/proxy_lat_probe ]; then
    env "${F[@]}" timeout 45 /tmp/probe-prefix/bin/ishmrun --timeout 40 -n 2 /tmp/proxy_lat_probe 400 3 >"$O/probe.txt" 2>&1
    t "probe: exit $?"
    grep -E "proxy_lat_probe|profile" "$O/probe.txt"
else
    t "probe: not built"
    tail -5 "$O/probe-build.log"
fi
AB_PHASE=run ROUNDS=${ROUNDS:-3} OUT=$O timeout "${AB_LIMIT:-170}" scripts/gpu-proxy-ab.sh >"$O/ab.log" 2>&1
t "ab: exit $?"
grep -vE "^  " "$O/ab.log" | tail -40
R=${OUT:-/tmp/g23res}
mkdir -p "$R"
tar -C /tmp -czf "$R/gpu23d.tar.gz" g23d
cp "$O/times.txt" "$R/" 2>/dev/null
