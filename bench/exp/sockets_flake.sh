#!/usr/bin/env bash
# sockets_flake.sh -- the stress that found the sixth round's wrong collective results (issue 31,
# docs/PERFORMANCE.md "Sixth round"): a test program at 4 PEs on 2 pretend nodes over the
# sockets provider on loopback, K runs at once, ROUNDS times; every failing run's whole log is
# kept under OUTDIR. Run after `make test-c` (build/tests) on an otherwise idle machine.
#   bench/exp/sockets_flake.sh ROUNDS K [LIBDIR] [PROGRAM]   (PROGRAM: build/tests/coverage)
#   PROGRAM_ARGS: arguments of PROGRAM (bench/exp/coll_stress.c takes its iterations).
#   PROVIDER: the libfabric provider (default sockets; "tcp;ofi_rxm" to compare).
#   LIBDIR: a directory with libishmem.so.1 to run instead of build/prefix/lib.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=$1 K=$2 LIBDIR=${3:-} PROG=${4:-$ROOT/build/tests/coverage}
OUTDIR=${OUTDIR:-$(mktemp -d)}
export ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo ISHMEM_OFI_PROVIDER="${PROVIDER:-sockets}" ISHMEM_BOOTSTRAP_UID_ADDR=127.0.0.1
fails=0
for r in $(seq 1 "$ROUNDS"); do
    for k in $(seq 1 "$K"); do
        env ${LIBDIR:+LD_LIBRARY_PATH=$LIBDIR} timeout -k 5 120 "$ROOT/build/prefix/bin/ishmrun" --timeout 80 -n 4 "$PROG" ${PROGRAM_ARGS:-} \
            >"$OUTDIR/run.$k.log" 2>&1 &
    done
    wait
    for k in $(seq 1 "$K"); do
        if ! grep -q '^PASS' "$OUTDIR/run.$k.log"; then
            fails=$((fails + 1))
            mv "$OUTDIR/run.$k.log" "$OUTDIR/fail.$fails.log"
            grep -v DEBUG "$OUTDIR/fail.$fails.log" | grep -m 3 -E 'FAIL|ERROR'
        fi
    done
done
echo "sockets_flake: $fails of $((ROUNDS * K)) runs failed; logs of failures in $OUTDIR"
