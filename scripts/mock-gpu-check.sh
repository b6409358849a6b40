#!/bin/sh
# shellcheck disable=SC2086,SC2016
# Runs libishmem's CUDA backend without a GPU: against tests/gpu/mock_libcuda.c, a stand-in
# libcuda whose "device memory" is shared memory mapped PROT_NONE at the addresses handed out
# (a host dereference of a device pointer by the library crashes) and whose host-AMO kernel
# runs on the CPU. Exercises init (heap, IPC handles, peer mappings, binders), every host
# operation's GPU path, threads, finalize, the proxy's collective requests across pretend
# nodes (posted from the host as kernels post them; two teams' collectives in opposite orders;
# faults: the proxy thread panics, a stuck request behind which the ring fills, a PE of the other
# node dies while a collective waits on it), and the on-queue RMA forms and collectives to
# PEs of another node (the mock runs their proxy kernels' and one-kernel collectives' posts),
# and the host calls made while such a kernel waits for this PE's proxy (the mock's driver waits
# where a real one does beside a running kernel); not the kernels or real CUDA semantics (that is
# scripts/gpu-check.sh on a GPU machine). Needs cc only.
#   scripts/mock-gpu-check.sh            (after make build)
# MOCK_GPU_BUILD=dir installs the library from dir instead of target/release, and
# MOCK_GPU_ONLY=name runs only the run of that name (scripts/mutation-check.sh: a mutant
# against proxy_quiet.fabric.4pe); both leave the stand-in driver and programs as they are.
set -eu
cd "$(dirname "$0")/.."
B=build/mock-gpu
PREFIX=$B/prefix
mkdir -p "$B/lib"
scripts/install-prefix.sh "$PREFIX" ${MOCK_GPU_BUILD:+"$MOCK_GPU_BUILD"} >/dev/null
cc -shared -fPIC -O1 -Wall -Wextra -Iinclude tests/gpu/mock_libcuda.c -o "$B/lib/libcuda.so.1" -lpthread
ln -sf libcuda.so.1 "$B/lib/libcuda.so"
# shellcheck disable=SC2046
cc -O1 -Wall -Wextra -DGPU_TEST_NO_CUDART tests/gpu/host_ops.c -I"$PREFIX/include" -L"$PREFIX/lib" -lishmem \
    -Wl,-rpath,"$PWD/$PREFIX/lib" -lpthread -o "$B/host_ops"
cc -O1 -Wall -Wextra tests/gpu/mock_binders.c -I"$PREFIX/include" -L"$PREFIX/lib" -lishmem \
    -Wl,-rpath,"$PWD/$PREFIX/lib" -o "$B/mock_binders"
# the reliability programs (issue 12): the soak and the heap test touch the heap only through
# the API, so they run on the GPU heap too
# the proxy's collective requests, posted from the host as a kernel would (issue 13)
cc -O1 -Wall -Wextra -DGPU_TEST_NO_CUDART tests/gpu/mock_proxy_coll.c -I"$PREFIX/include" -L"$PREFIX/lib" -lishmem \
    -Wl,-rpath,"$PWD/$PREFIX/lib" -o "$B/mock_proxy_coll"
# the on-queue RMA forms to PEs of another node (the mock runs their proxy kernels' requests)
cc -O1 -Wall -Wextra -DGPU_TEST_NO_CUDART tests/gpu/mock_queue_remote.c -I"$PREFIX/include" -L"$PREFIX/lib" -lishmem \
    -Wl,-rpath,"$PWD/$PREFIX/lib" -o "$B/mock_queue_remote"
# the proxy thread serving its PE's mailbox while the PE's host thread is away (issue 23)
cc -O1 -Wall -Wextra tests/gpu/mock_proxy_serve.c -I"$PREFIX/include" -L"$PREFIX/lib" -lishmem \
    -Wl,-rpath,"$PWD/$PREFIX/lib" -o "$B/mock_proxy_serve"
# the on-queue puts and gets inside one node: which path (SM kernel or copy engine) each takes
cc -O1 -Wall -Wextra -DGPU_TEST_NO_CUDART tests/gpu/mock_queue_local.c -I"$PREFIX/include" -L"$PREFIX/lib" -lishmem \
    -Wl,-rpath,"$PWD/$PREFIX/lib" -o "$B/mock_queue_local"
# a kernel that waits for this PE's proxy while the host calls the library (issue 23); it calls
# the mock's cuStreamCreate and cuModuleLoadData itself
cc -O1 -Wall -Wextra tests/gpu/mock_running_kernel.c -I"$PREFIX/include" -L"$PREFIX/lib" -lishmem \
    -Wl,-rpath,"$PWD/$PREFIX/lib" -L"$B/lib" -lcuda -o "$B/mock_running_kernel"
for p in soak heap; do
    cc -O1 -Wall -Wextra -std=c11 -Itests/c tests/c/$p.c -I"$PREFIX/include" -L"$PREFIX/lib" -lishmem \
        -Wl,-rpath,"$PWD/$PREFIX/lib" -o "$B/$p"
done
RUN="$PREFIX/bin/ishmrun --timeout 60"
# the collective requests across pretend nodes: the whole check takes 47 s idle, but 4 PEs took
# 72-76 s beside two other jobs
RUN_LONG="$PREFIX/bin/ishmrun --timeout 150"
pass=0
fail=0
run() { # name, env..., -- command
    name=$1
    shift
    if [ -n "${MOCK_GPU_ONLY:-}" ] && [ "$name" != "$MOCK_GPU_ONLY" ]; then return 0; fi
    if env "$@" >"$B/$name.log" 2>&1; then
        pass=$((pass + 1))
        echo "mock-gpu-check: $name: ok"
    else
        fail=$((fail + 1))
        echo "mock-gpu-check: $name: FAILED (log: $B/$name.log)"
        tail -n 20 "$B/$name.log"
    fi
}
# expect_fail NAME PATTERN env... -- the job must end nonzero, not by ishmrun's timeout, and
# its log must hold PATTERN (an extended regex)
expect_fail() {
    local name=$1 pat=$2 rc=0
    shift 2
    if [ -n "${MOCK_GPU_ONLY:-}" ] && [ "$name" != "$MOCK_GPU_ONLY" ]; then return 0; fi
    env "$@" >"$B/$name.log" 2>&1 || rc=$?
    if [ "$rc" = 0 ]; then
        fail=$((fail + 1)); echo "mock-gpu-check: $name: FAILED (exit 0)"; cat "$B/$name.log"
    elif [ "$rc" = 124 ]; then
        fail=$((fail + 1)); echo "mock-gpu-check: $name: FAILED (hung until ishmrun's timeout)"; cat "$B/$name.log"
    elif grep -qE "$pat" "$B/$name.log"; then
        pass=$((pass + 1)); echo "mock-gpu-check: $name: ok"
    else
        fail=$((fail + 1)); echo "mock-gpu-check: $name: FAILED (no line matching: $pat)"; cat "$B/$name.log"
    fi
}
# expect_each NAME PATTERN env... -- the job must pass and every one of its 2 PEs print a line
# matching PATTERN (an extended regex)
expect_each() {
    local name=$1 pat=$2 rc=0 n
    shift 2
    if [ -n "${MOCK_GPU_ONLY:-}" ] && [ "$name" != "$MOCK_GPU_ONLY" ]; then return 0; fi
    env "$@" >"$B/$name.log" 2>&1 || rc=$?
    n=$(grep -cE "$pat" "$B/$name.log" || true)
    if [ "$rc" = 0 ] && [ "$n" = 2 ]; then
        pass=$((pass + 1)); echo "mock-gpu-check: $name: ok"
    else
        fail=$((fail + 1)); echo "mock-gpu-check: $name: FAILED (exit $rc, $n of 2 PEs printed a line matching: $pat)"
        cat "$B/$name.log"
    fi
}
LIB="LD_LIBRARY_PATH=$PWD/$B/lib"
# Contiguous on-queue puts and gets inside one node (issue 24): to a PE on another GPU every one
# is a copy-engine copy, as NVSHMEM's (a kernel per small put cost twice the time on two H100s);
# within one GPU the SM kernel serves those up to ISHMEM_QUEUE_KERNEL_MAX (see the program).
expect_each queue_local.2dev "ISHMEM_QUEUE_STATS: 9 on_queue calls, 2 kernel launches \\([0-9.]+ per call\\), 6 copy-engine copies" \
    "$LIB" ISHMEM_GPU=1 MOCK_CUDA_DEVICES=2 ISHMEM_QUEUE_STATS=1 ISHMEM_SYMMETRIC_SIZE=64M $RUN -n 2 "$B/mock_queue_local"
expect_each queue_local.1dev "ISHMEM_QUEUE_STATS: 9 on_queue calls, 5 kernel launches \\([0-9.]+ per call\\), 3 copy-engine copies" \
    "$LIB" ISHMEM_GPU=1 ISHMEM_QUEUE_STATS=1 ISHMEM_SYMMETRIC_SIZE=64M $RUN -n 2 "$B/mock_queue_local"
run host_ops.2pe "$LIB" ISHMEM_GPU=1 $RUN -n 2 "$B/host_ops"
run host_ops.3pe.2dev "$LIB" ISHMEM_GPU=1 MOCK_CUDA_DEVICES=2 ISHMEM_SYMMETRIC_SIZE=64M $RUN -n 3 "$B/host_ops"
run soak.3pe "$LIB" ISHMEM_GPU=1 ISHMEM_SYMMETRIC_SIZE=64M $RUN -n 3 "$B/soak" 5
run heap.2pe "$LIB" ISHMEM_GPU=1 ISHMEM_SYMMETRIC_SIZE=4M $RUN -n 2 "$B/heap"
run host_ops.1pe "$LIB" ISHMEM_GPU=auto "$B/host_ops"
run binders.2pe "$LIB" ISHMEM_GPU=1 $RUN -n 2 "$B/mock_binders"
run host_ops.cpu "$LIB" ISHMEM_GPU=0 EXPECT_GPU=0 $RUN -n 2 "$B/host_ops"
# The GPU heap across nodes (2 pretend nodes, tcp;ofi_rxm on loopback): every access to the
# other node's heap goes through its staging mailbox and its GPU copies and AMO kernel.
if [ -e /usr/lib/x86_64-linux-gnu/libfabric.so.1 ] || ldconfig -p 2>/dev/null | grep -q 'libfabric.so.1 '; then
    FAB="ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo ISHMEM_OFI_PROVIDER=tcp;ofi_rxm"
    run host_ops.fabric.2pe "$LIB" ISHMEM_GPU=1 $FAB $RUN -n 2 "$B/host_ops"
    run host_ops.fabric.4pe "$LIB" ISHMEM_GPU=1 $FAB ISHMEM_SYMMETRIC_SIZE=64M $RUN -n 4 "$B/host_ops"
    # Device collectives across nodes (issue 13): COLL requests of the proxy ring, run by the
    # proxy threads as host collectives on the GPU heap; 2 nodes of 1 and 2 nodes of 2 PEs.
    run proxy_coll.fabric.2pe "$LIB" ISHMEM_GPU=1 $FAB $RUN_LONG -n 2 "$B/mock_proxy_coll"
    run proxy_coll.fabric.4pe "$LIB" ISHMEM_GPU=1 $FAB ISHMEM_SYMMETRIC_SIZE=64M $RUN_LONG -n 4 "$B/mock_proxy_coll"
    # The on-queue RMA forms to a PE of the other node (issue 13): proxy kernels, in order.
    run queue_remote.fabric.2pe "$LIB" ISHMEM_GPU=1 $FAB $RUN -n 2 "$B/mock_queue_remote"
    run queue_remote.fabric.4pe "$LIB" ISHMEM_GPU=1 $FAB ISHMEM_SYMMETRIC_SIZE=64M $RUN -n 4 "$B/mock_queue_remote"
    # quiet_on_queue completes the proxy's nbi puts: checked after a flag on another path by
    # the target itself (its own heap) and by a node peer of the putter (through the target's
    # mailbox) (issue 26, the mutant proxy_quiet_noop; 100 rounds: 83 s at a load average of 80)
    run proxy_quiet.fabric.4pe "$LIB" ISHMEM_GPU=1 $FAB ISHMEM_SYMMETRIC_SIZE=64M $RUN_LONG -n 4 "$B/mock_queue_remote" quiet
    # the same without a race: the target is stopped (SIGSTOP by its node peer) while the
    # writer's quiet_on_queue runs, which must not return until the target runs again (issue 26:
    # kills proxy_quiet_noop every time; 2 rounds, each holds the target 3 s)
    run proxy_quiet_stopped.fabric.4pe "$LIB" ISHMEM_GPU=1 $FAB ISHMEM_SYMMETRIC_SIZE=64M $RUN -n 4 "$B/mock_queue_remote" quiet_stopped
    # Host calls while a kernel waits for this PE's proxy (issue 23): a module loaded at first
    # use, or a synchronous copy, would wait for that kernel while the proxy waits for them
    # (the mock reports "DEADLOCK" after MOCK_CUDA_WAIT_S and aborts the PE).
    run running_kernel.fabric.2pe "$LIB" ISHMEM_GPU=1 $FAB MOCK_CUDA_WAIT_S=10 $RUN -n 2 "$B/mock_running_kernel"
    run running_kernel.fabric.4pe "$LIB" ISHMEM_GPU=1 $FAB MOCK_CUDA_WAIT_S=10 ISHMEM_SYMMETRIC_SIZE=64M $RUN -n 4 \
        "$B/mock_running_kernel"
    # The idle proxy thread serves its PE's mailbox (issue 23: a kernel waiting for a signal
    # from another node): the progress threads kept out of it, PE 1's host thread asleep outside
    # the library while PE 0 reaches its GPU heap (p, g, fetch_add, put_signal).
    rm -f "$B/proxy_serve.flag"
    run proxy_serve.fabric.2pe "$LIB" ISHMEM_GPU=1 $FAB ISHMEMI_TEST_PROGRESS_NO_SERVE=1 $RUN -n 2 "$B/mock_proxy_serve" \
        "$PWD/$B/proxy_serve.flag"
    # Bad arguments and requests end the job with a PE-tagged error naming the call: on-queue
    # RMA to the other node (mock_queue_remote), device collectives through the proxy
    # (mock_proxy_coll). Each case: program, its argument, the error after "ERROR: ".
    for c in "queue_remote:bad_global:ishmemx_long_put_on_queue: dest 0x[0-9a-f]+ \(8 bytes\) is in the symmetric data segment: an on-queue operation to PE [0-9] of another node needs the symmetric heap" \
        "queue_remote:bad_sym:ishmemx_putmem_on_queue: dest 0x[0-9a-f]+ \(64 bytes\) is outside the symmetric heap" \
        "proxy_coll:bad_root:a device broadcast \(through the proxy\): root 5 out of range" \
        "proxy_coll:bad_kind:a device collective \(through the proxy\): malformed request [0-9]+ of the proxy ring \(collective 42\)" \
        "proxy_coll:bad_sym:a device fcollect \(through the proxy\): dest 0x[0-9a-f]+ \(16 bytes\) is outside the symmetric heap" \
        "proxy_coll:bad_inline:a device put \(through the proxy\): malformed request [0-9]+ of the proxy ring \(inline, kind 1, 1025 bytes; inline puts carry at most 1024\)"; do
        prog=${c%%:*}
        rest=${c#*:}
        arg=${rest%%:*}
        expect_fail "$prog.$arg" "^\[PE [0-9]\] ERROR: ${rest#*:}" \
            "$LIB" ISHMEM_GPU=1 $FAB $RUN -n 2 "$B/mock_$prog" "$arg"
    done
    # Faults (issue 13 item 5), each ending the job with a message naming the fault: the proxy
    # thread dies (a planted panic); a request that never finishes while the poster fills the
    # ring (planted stall, the proxy's 2 s monitor); a PE of the other node SIGKILLed while PE 0
    # waits in a collective through the proxy (4 PEs: its node peer sees it die, or ishmrun).
    for c in "proxy_panic|2|ISHMEMI_TEST_PROXY_FAULT=panic@0|PE 0\] ERROR: the proxy thread \(kernels' calls to other nodes\): internal error: planted fault at request 0" \
        "ring_full|2|ISHMEMI_TEST_PROXY_FAULT=stall@3 ISHMEM_PROXY_STALL_S=2|PE 0\] ERROR: a device p \(through the proxy\): request 3 of the proxy ring \(to PE 1\) has not finished after 2 s" \
        "peer_dies|4|ISHMEMI_TEST_PROXY_FAULT=|(PE 3 \(pid [0-9]+\) (died|was killed)|because PE 3 failed)"; do
        arg=${c%%|*}
        rest=${c#*|}
        np=${rest%%|*}
        rest=${rest#*|}
        fenv=${rest%%|*}
        pat=${rest#*|}
        expect_fail "proxy_coll.$arg" "$pat" \
            "$LIB" ISHMEM_GPU=1 $FAB ISHMEM_SYMMETRIC_SIZE=64M $fenv $RUN -n "$np" "$B/mock_proxy_coll" "$arg"
    done
else
    echo "mock-gpu-check: host_ops.fabric: skipped (libfabric.so.1 not found)"
fi
run host_ops.nodev "$LIB" MOCK_CUDA_DEVICES=0 EXPECT_GPU=0 $RUN -n 2 "$B/host_ops"
# Negative: a PE asked for a device that is not there; mixed backends.
expect_fail baddev "ISHMEM_GPU_DEVICE=5 but only 1 CUDA devices" "$LIB" ISHMEM_GPU_DEVICE=5 $RUN -n 2 "$B/host_ops"
expect_fail mixed "every PE must use the same backend" \
    "$LIB" $RUN -n 2 sh -c 'if [ "$ISHMRUN_RANK" = 1 ]; then export ISHMEM_GPU=0; fi; exec "$0"' "$B/host_ops"
# Device files of PEs that died (the failing runs above) stay behind: remove those.
for f in /dev/shm/mockcuda-*; do
    [ -e "$f" ] || continue
    pid=$(basename "$f" | cut -d- -f2)
    kill -0 "$pid" 2>/dev/null || rm -f "$f"
done
echo "mock-gpu-check: $pass passed, $fail failed"
if [ -n "${MOCK_GPU_ONLY:-}" ] && [ $((pass + fail)) = 0 ]; then
    echo "mock-gpu-check: no run is named $MOCK_GPU_ONLY" >&2
    exit 2
fi
[ "$fail" = 0 ]
