#!/usr/bin/env bash
# fabric-check.sh PREFIX [PROVIDER]: the host test programs as 2 pretend nodes over libfabric on
# loopback, against an installed ishmem (no cargo or CMake needed: for a machine whose
# libfabric differs from the build machine's, e.g. the GPU image's libfabric 1.20).
#   scripts/fabric-check.sh build/gpu-check-work/prefix 'tcp;ofi_rxm'
# Prints the libfabric and provider in use, one line per program, and "N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
PREFIX=${1:?usage: fabric-check.sh PREFIX [PROVIDER]}
export ISHMEM_OFI_PROVIDER=${2:-tcp;ofi_rxm}
export ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo ISHMEM_GPU=0
W=$(mktemp -d "${TMPDIR:-/tmp}/fabric-check.XXXXXX")
trap 'rm -rf "$W"' EXIT
flags=$(PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --cflags --libs ishmem) || { echo "fabric-check: no ishmem.pc under $PREFIX"; exit 2; }
"$PREFIX/bin/ishmem-info" | grep '^network:'
pass=0 fail=0
for p in setup rma amo signal p2p order coll team; do
    args=""
    [ "$p" = setup ] && args="ISHMRUN 4"
    # shellcheck disable=SC2086
    if ! cc -O2 -Itests/c "tests/c/$p.c" $flags -lpthread -o "$W/$p" 2>"$W/$p.cc"; then
        echo "fabric-check: $p: FAILED to compile"; sed 's/^/    /' "$W/$p.cc" | head -5; fail=$((fail + 1)); continue
    fi
    # shellcheck disable=SC2086
    if timeout 120 "$PREFIX/bin/ishmrun" -n 4 "$W/$p" $args >"$W/$p.log" 2>&1 && grep -q "^PASS: $p (4 PEs)" "$W/$p.log"; then
        echo "fabric-check: $p: ok"; pass=$((pass + 1))
    else
        echo "fabric-check: $p: FAILED"; grep -E "FAIL|ERROR" "$W/$p.log" | head -5 | sed 's/^/    /'; fail=$((fail + 1))
    fi
done
ISHMEM_INFO=1 timeout 60 "$PREFIX/bin/ishmrun" -n 2 "$W/setup" ISHMRUN 2 2>&1 | grep -E '^(nodes|network)' | head -3
echo "fabric-check: $pass passed, $fail failed"
[ "$fail" = 0 ]
