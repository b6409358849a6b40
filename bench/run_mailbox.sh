#!/usr/bin/env bash
# run_mailbox.sh -- what the staging mailbox costs (issue 13's "raw fabric figure beside the
# host-initiated one"): every operation to another node's GPU heap, host-initiated or from a
# kernel through the proxy, is a mailbox request served by the target's progress thread. On a
# CPU the same path is taken with ISHMEM_OFI_STAGING=always, so this compares, between 2
# pretend nodes over tcp;ofi_rxm on loopback, 2 PEs:
#   direct   host_bench with the provider reading and writing the host heap itself
#   mailbox  host_bench with ISHMEM_OFI_STAGING=always (requests into the target's mailbox)
#   floor    fi_pingpong -e rdm (libfabric-bin), 8 B round trip: the raw provider floor
# RUNS (default 3) rounds, the variants alternating; each row's median and range.
#   bench/run_mailbox.sh            (after make install; needs libfabric-bin for the floor)
# Output: bench/results/mailbox/{direct,mailbox}-<round>.csv, floor-<round>.txt, table.md
set -u -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
RUNS=${RUNS:-3}
OPS=${OPS:-p,g,putmem,fetch_add,compare_swap,put_signal,barrier_all}
O=bench/results/mailbox
B=build/mailbox
mkdir -p "$O" "$B"
export PKG_CONFIG_PATH=$ROOT/build/prefix/lib/pkgconfig
# shellcheck disable=SC2046
cc -O2 -Wall bench/host_bench.c $(pkg-config --cflags --libs ishmem) -Wl,-rpath,"$ROOT/build/prefix/lib" \
    -o "$B/host_bench" || { echo "run_mailbox.sh: build failed (make install first)"; exit 1; }
export ISHMEM_NODE_SPLIT=2 ISHMEM_OFI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo FI_PROVIDER_IFACE=lo BENCH_PIN=0
rc=0
for r in $(seq 1 "$RUNS"); do
    for v in direct mailbox; do
        st=auto
        [ "$v" = mailbox ] && st=always
        if ! ISHMEM_OFI_STAGING=$st BENCH_BACKEND=$v build/prefix/bin/ishmrun --timeout 600 -n 2 "$B/host_bench" \
            --ops "$OPS" --max-bytes 1048576 --target-wait=barrier >"$O/$v-$r.csv" 2>"$O/$v-$r.log"; then
            echo "run_mailbox.sh: $v round $r FAILED"; tail -5 "$O/$v-$r.log"; rc=1
        fi
    done
    if command -v fi_pingpong >/dev/null; then
        # the client connects to 127.0.0.1; the provider is bound to lo
        FI_TCP_IFACE=lo timeout 120 fi_pingpong -p 'tcp;ofi_rxm' -e rdm -I 2000 -S 8 >"$O/floor-$r.srv" 2>&1 &
        sleep 1
        FI_TCP_IFACE=lo timeout 120 fi_pingpong -p 'tcp;ofi_rxm' -e rdm -I 2000 -S 8 127.0.0.1 >"$O/floor-$r.txt" 2>&1 ||
            { echo "run_mailbox.sh: fi_pingpong round $r FAILED"; cat "$O/floor-$r.txt"; }
        wait
    fi
done
python3 - "$O" "$RUNS" <<'EOF' | tee "$O/table.md"
import csv, glob, statistics, sys, re
o, runs = sys.argv[1], int(sys.argv[2])
rows = {}
for v in ("direct", "mailbox"):
    for f in glob.glob(f"{o}/{v}-*.csv"):
        for r in csv.DictReader(l for l in open(f) if l.strip()):
            if r.get("lib") != "ishmem":
                continue
            rows.setdefault((r["op"], int(r["bytes"]), r["unit"]), {}).setdefault(v, []).append(float(r["value"]))
floor = []
for f in glob.glob(f"{o}/floor-*.txt"):
    for line in open(f):
        m = re.match(r"\s*8\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+([0-9.]+)", line)
        if m:
            floor.append(float(m.group(1)))
def cell(xs):
    if not xs:
        return "-"
    return f"{statistics.median(xs):.4g} [{min(xs):.4g}-{max(xs):.4g}]"
print("| op | bytes | direct | mailbox | mailbox / direct |")
print("|---|---:|---:|---:|---:|")
for (op, b, unit), d in sorted(rows.items()):
    a, m = d.get("direct", []), d.get("mailbox", [])
    ratio = "-"
    if a and m:
        x, y = statistics.median(a), statistics.median(m)
        ratio = f"{(y / x if unit == 'us' else x / y):.2f}"
    print(f"| {op} | {b} | {cell(a)} {unit} | {cell(m)} {unit} | {ratio} |")
if floor:
    print(f"\nfi_pingpong tcp;ofi_rxm rdm, 8 B, usec/xfer as it reports it: {cell(floor)}; round trip = 2x")
EOF
exit $rc
