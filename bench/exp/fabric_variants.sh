#!/usr/bin/env bash
# fabric_variants.sh -- A/B of settings (or library builds) for the across-node latency rows
# (issue 31): runs host_bench between 2 pretend nodes (tcp;ofi_rxm on loopback) once per
# variant per round, rounds alternating, and prints per variant and row the median and range.
#
#   bench/exp/fabric_variants.sh ROUNDS NP OPS 'name|ENV=V ENV2=V2|host_bench args|libdir' ...
#     libdir: a directory holding libishmem.so.1 to run instead of the installed one (empty:
#     build/prefix/lib); `oshmem`: OpenMPI OSHMEM over UCX TCP with the flags of
#     shared/FABRIC-NOTES.md (HB_OSH: its host_bench, built with oshcc -DBENCH_PEER_OSHMEM).
#     Every field must be there (4 fields, 3 bars). Example:
#   bench/exp/fabric_variants.sh 5 2 p,g,fetch_add,barrier_all 'base||' 'slowprog|ISHMEM_OFI_PROGRESS_US=1000||'
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=$1 NP=$2 OPS=$3; shift 3
HB=${HB:-$ROOT/bench/build/host_bench_ishmem}
if [ ! -x "$HB" ]; then
    PC=$ROOT/build/prefix/lib/pkgconfig
    mkdir -p "$(dirname "$HB")"
    # shellcheck disable=SC2046
    cc -O2 "$ROOT/bench/host_bench.c" -o "$HB" $(PKG_CONFIG_PATH=$PC pkg-config --cflags --libs ishmem) \
        -Wl,-rpath,"$ROOT/build/prefix/lib" || exit 1
fi
OUT=$(mktemp -d)
export ISHMEM_NODE_SPLIT=2 ISHMEM_OFI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo
for r in $(seq 1 "$ROUNDS"); do
    for v in "$@"; do
        IFS='|' read -r name envs args libdir <<<"$v"
        if [ "$libdir" = oshmem ]; then
            # shellcheck disable=SC2086
            env $envs timeout -k 5 180 oshrun --allow-run-as-root --oversubscribe --mca osc ^rdma --mca pml ob1 \
                --mca btl self,tcp --mca btl_tcp_if_include lo -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo -np "$NP" \
                "${HB_OSH:-$ROOT/bench/build/host_bench_oshmem}" --no-header --ops "$OPS" --max-bytes "${MAXB:-8}" \
                --target-ms "${TMS:-300}" --target-wait=barrier $args 2>/dev/null |
                awk -F, -v n="$name" '{print n","$4","$7","$9","$10}' >>"$OUT/all.csv"
            continue
        fi
        # shellcheck disable=SC2086
        env $envs ${libdir:+LD_LIBRARY_PATH=$libdir} timeout -k 5 180 "$ROOT/build/prefix/bin/ishmrun" -n "$NP" "$HB" \
            --no-header --ops "$OPS" --max-bytes "${MAXB:-8}" --target-ms "${TMS:-300}" --target-wait=barrier $args \
            2>/dev/null | awk -F, -v n="$name" '{print n","$4","$7","$9","$10}' >>"$OUT/all.csv"
    done
done
python3 - "$OUT/all.csv" <<'PY'
import sys, statistics, collections
d = collections.OrderedDict()
for line in open(sys.argv[1]):
    n, op, b, v, u = line.strip().split(',')
    d.setdefault((op, b, u), collections.OrderedDict()).setdefault(n, []).append(float(v))
for (op, b, u), per in d.items():
    cells = []
    for n, vs in per.items():
        cells.append(f"{n} {statistics.median(vs):.4g} ({min(vs):.3g}-{max(vs):.3g}, n={len(vs)})")
    print(f"{op} {b}B [{u}]: " + " | ".join(cells))
PY
rm -rf "$OUT"
