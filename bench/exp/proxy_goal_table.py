#!/usr/bin/env python3
"""The proxy table of issue 23: per goal row, the kernel's operation through the proxy ring
(scope thread, or block for putmem_nbi) beside the same operation issued from the host on the
GPU heap (scope host), both from the same runs of bench/gpu_bench.cu (scripts/gpu-proxy-ab.sh),
median [min-max] over the runs, the paired difference or ratio (kernel vs host of the same run,
median [min-max]) and whether the goal is met (on the median of the paired values).
   bench/exp/proxy_goal_table.py DIR [VARIANT]
DIR holds <variant>-<lat|bw>-<round>.csv; VARIANT is carry (default) or carry-base."""
import csv
import glob
import os
import statistics
import sys

# (label, op in the CSV, kernel scope, bytes, goal kind, limit)
ROWS = [
    ("p + quiet, 4 B", "p", "thread", 4, "us", 2.0),
    ("putmem + quiet, 8 B", "putmem_quiet", "thread", 8, "us", 2.0),
    ("g, 4 B", "g", "thread", 4, "us", 2.0),
    ("fetch_add, 8 B", "fetch_add", "thread", 8, "us", 2.0),
    ("compare_swap, 8 B", "compare_swap", "thread", 8, "us", 2.0),
    ("put_signal round trip, 8 B", "put_signal", "thread", 8, "ratio", 1.10),
    ("barrier_all", "barrier_all", "thread", 0, "ratio", 1.10),
    ("putmem_nbi 1 MiB, block scope", "putmem_nbi", "block", 1 << 20, "bw", 0.90),
    ("putmem_nbi 1 MiB, thread scope (1024 threads)", "putmem_nbi", "thread", 1 << 20, "bw", 0.90),
]


def load(d, variant):
    runs = {}  # round -> {(op, scope, bytes): value}
    for path in sorted(glob.glob(os.path.join(d, f"{variant}-*-*.csv"))):
        name = os.path.basename(path)[: -len(".csv")]
        rest = name[len(variant) + 1 :]
        part, _, rnd = rest.partition("-")
        if part not in ("lat", "bw") or not rnd.isdigit():
            continue  # carry-base-... when variant is carry
        with open(path) as f:
            for row in csv.DictReader(f):
                try:
                    v = float(row["value"])
                except (KeyError, ValueError):
                    continue
                op = "putmem_nbi" if row["op"].startswith("putmem_nbi") else row["op"]
                runs.setdefault(int(rnd), {})[(op, row["scope"], int(row["bytes"]))] = v
    return runs


def fmt(xs, digits=4):
    if not xs:
        return "-"
    return f"{statistics.median(xs):.{digits}g} [{min(xs):.{digits}g}-{max(xs):.{digits}g}]"


def main():
    d = sys.argv[1]
    variant = sys.argv[2] if len(sys.argv) > 2 else "carry"
    runs = load(d, variant)
    if not runs:
        sys.exit(f"proxy_goal_table: no {variant}-*.csv in {d}")
    print("| row | host (GPU heap) | kernel via proxy | kernel vs host, same run | goal | met |")
    print("|---|---:|---:|---:|---|---|")
    for label, op, scope, n, kind, lim in ROWS:
        host, dev, rel = [], [], []
        for r in sorted(runs):
            h = runs[r].get((op, "host", n))
            k = runs[r].get((op, scope, n))
            if h is None or k is None:
                continue
            host.append(h)
            dev.append(k)
            rel.append(k - h if kind == "us" else k / h)
        unit = "GB/s" if kind == "bw" else "us"
        if not rel:
            print(f"| {label} | - | - | - | - | not measured |")
            continue
        m = statistics.median(rel)
        if kind == "us":
            goal, met = f"<= +{lim:g} us", m <= lim
            rs = f"{m:+.1f} us [{min(rel):+.1f} to {max(rel):+.1f}]"
        elif kind == "ratio":
            goal, met = f"<= {lim:.2f} x host", m <= lim
            rs = f"{m:.2f} x [{min(rel):.2f}-{max(rel):.2f}]"
        else:
            goal, met = f">= {lim:.2f} x host", m >= lim
            rs = f"{m:.2f} x [{min(rel):.2f}-{max(rel):.2f}]"
        print(f"| {label} | {fmt(host)} {unit} | {fmt(dev)} {unit} | {rs} | {goal} | {'met' if met else 'NOT met'} |")
    print()
    print(f"runs: {len(runs)} ({variant}); values: median [min-max] over the runs")


if __name__ == "__main__":
    main()
