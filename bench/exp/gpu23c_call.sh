#!/usr/bin/env bash
# Issue 23 (gpu23c), one device call on nvidia-h100-x2 (one PE per GPU, 2 pretend nodes): the
# across-node GPU checks of the proxy paths, bench/exp/proxy_lat_probe.cu, and
# `ROUNDS=3 scripts/gpu-proxy-ab.sh` (main's build before, this tree's after, alternating).
# The device tool copies main's tree: this tree travels as build/gpu23c/src.tgz with its build
# (build/gpu23c/new: libishmem.so, ishmrun, ishmem-info) and main's (build/gpu23c/base).
#   device: run(carry=["build/gpu23c"], kind="nvidia-h100-x2", command="bash build/gpu23c/call.sh")
# Output: $OUT/gpu23c.tar.gz and the summaries beside it.
set -u
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 # never NVLink multicast
export PATH=$PATH:/usr/local/cuda/bin
MAIN=$PWD
W=/tmp/w
O=/tmp/g23out
mkdir -p "$W" "$O"
T0=$(date +%s)
t() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$O/times.txt"; }
tar -C "$W" -xzf build/gpu23c/src.tgz
cd "$W" || exit 1
mkdir -p target/release build/carry build/carry-base
cp "$MAIN"/build/gpu23c/new/* target/release/
cp "$MAIN"/build/gpu23c/new/* build/carry/
cp "$MAIN"/build/gpu23c/base/* build/carry-base/
cp -r "$MAIN/include" build/carry-base/include # main's device headers (the ring before)
t "unpacked"
# builds side by side: the A/B's two benchmarks, the probe
AB_PHASE=build OUT=$O scripts/gpu-proxy-ab.sh >"$O/ab-build.log" 2>&1 &
abb=$!
(scripts/install-prefix.sh /tmp/probe-prefix target/release >/dev/null 2>&1 &&
    nvcc -std=c++17 -arch=sm_90 -I/tmp/probe-prefix/include bench/exp/proxy_lat_probe.cu -L/tmp/probe-prefix/lib -lishmem \
        -Xlinker -rpath,/tmp/probe-prefix/lib -o /tmp/proxy_lat_probe) >"$O/probe-build.log" 2>&1 &
pb=$!
ONLY=${SUITE_ONLY:-'^(proxy_ops\.fabric\.(2pe|4pe|mpirun4)|coll_ops\.fabric\.(2pe|4pe)|queue_ops\.fabric\.2pe)$'}
NO_DEBUG_RERUN=1 NO_PTX_TEXT=1 BUILD_ONLY='proxy_ops|coll_ops|queue_ops' ONLY="$ONLY" OUT=$O LIMIT=60 COLL_LIMIT=90 \
    timeout "${SUITE_LIMIT:-240}" scripts/gpu-check.sh >"$O/suite.log" 2>&1
t "suite: exit $?"
grep -E "FAILED|passed" "$O/suite.log"
wait $abb $pb
t "builds done"
F=(ISHMEM_GPU=1 ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm" ISHMEMI_PROXY_PROFILE=1)
if [ -x /tmp/proxy_lat_probe ]; then
    env "${F[@]}" timeout 60 /tmp/probe-prefix/bin/ishmrun --timeout 55 -n 2 /tmp/proxy_lat_probe 400 3 >"$O/probe.txt" 2>&1
    t "probe: exit $?"
    grep -E "proxy_lat_probe|profile" "$O/probe.txt"
else
    t "probe: not built"; tail -5 "$O/probe-build.log"
fi
AB_PHASE=run ROUNDS=${ROUNDS:-3} OUT=$O timeout "${AB_LIMIT:-190}" scripts/gpu-proxy-ab.sh >"$O/ab.log" 2>&1
t "ab: exit $?"
grep -vE "^  " "$O/ab.log" | tail -40
R=${OUT:-/tmp/g23res}
mkdir -p "$R"
tar -C /tmp -czf "$R/gpu23c.tar.gz" g23out
cp "$O/times.txt" "$R/" 2>/dev/null
