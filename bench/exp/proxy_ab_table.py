#!/usr/bin/env python3
"""Table of scripts/gpu-proxy-ab.sh: per (op, scope, bytes), the median [min-max] over the
rounds of each variant (carry = the build under test, carry-base = the older one), and the
device row beside the host row of the same build.
   bench/exp/proxy_ab_table.py DIR   (the CSVs DIR/<variant>-<part>-<round>.csv)"""
import csv
import glob
import os
import statistics
import sys


def main():
    d = sys.argv[1]
    vals = {}  # (variant, op, scope, bytes) -> [values]
    units = {}
    for path in sorted(glob.glob(os.path.join(d, "*.csv"))):
        name = os.path.basename(path)[:-4]
        variant = "carry-base" if name.startswith("carry-base-") else "carry"
        with open(path) as f:
            for row in csv.DictReader(f):
                try:
                    v = float(row["value"])
                except (KeyError, ValueError):
                    continue
                op = row["op"]
                if op.startswith("putmem_nbi_"):
                    op = "putmem_nbi"
                key = (variant, op, row["scope"], int(row["bytes"]))
                vals.setdefault(key, []).append(v)
                units[(op, int(row["bytes"]))] = row["unit"]
    variants = [v for v in ("carry-base", "carry") if any(k[0] == v for k in vals)]
    rows = sorted({k[1:] for k in vals}, key=lambda k: (k[0], k[2], k[1]))

    def cell(v, op, scope, n):
        xs = vals.get((v, op, scope, n))
        if not xs:
            return "-"
        m = statistics.median(xs)
        return f"{m:.4g} [{min(xs):.4g}-{max(xs):.4g}]"

    head = ["op", "scope", "bytes", "unit"] + [("before" if v == "carry-base" else "after") + " (median [range])" for v in variants]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for op, scope, n in rows:
        print("| " + " | ".join([op, scope, str(n), units[(op, n)]] + [cell(v, op, scope, n) for v in variants]) + " |")
    print()
    print(f"rounds per variant: {max((len(x) for x in vals.values()), default=0)}")


if __name__ == "__main__":
    main()
