#!/usr/bin/env python3
"""twogpu_table.py -- the two-GPU side-by-side table of bench/run_gpu.sh with REPEAT rounds.

Inputs: CSVs of gpu_bench named x2-<lib>-<round>.csv (2 PEs, one per GPU), <lib> nvshmem,
ishmem or ishmem_base (an older ishmem build: the A/B of a change). Output: markdown with, per
row (op, scope, bytes), each library's median over the rounds and its range [min-max], the
ratio ishmem / NVSHMEM in time (latency as is, bandwidth inverted: at or below 1.00 ishmem is
at or ahead), ishmem / ishmem_base when the base ran, and the list of rows more than 5% behind
NVSHMEM. With --reasons FILE (lines `op scope bytes: reason`, `*` matching any scope or size),
each behind row carries its measured reason.

    bench/twogpu_table.py --kind NVIDIA_H100_80GB_HBM3-x2 --command "..." --out table.md CSV...
"""
import argparse
import csv
import fnmatch
import os
import re
import statistics
import sys
from collections import defaultdict

from onegpu_table import time_ratio  # a / b in time: latency as is, bandwidth inverted


def load(paths):
    data = defaultdict(lambda: defaultdict(list))
    units, order = {}, []
    for p in paths:
        m = re.match(r"x2-(.+)-(\d+)\.csv$", os.path.basename(p))
        if not m:
            print(f"twogpu_table: {p}: not x2-<lib>-<n>.csv, skipped", file=sys.stderr)
            continue
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    key = (r["op"], r["scope"], int(r["bytes"]))
                    v = float(r["value"])
                except (KeyError, ValueError):
                    continue
                data[m.group(1)][key].append(v)
                units[key] = r["unit"]
                if key not in order:
                    order.append(key)
    return data, units, order


def cell(vals, unit):
    if not vals:
        return "-"
    med = statistics.median(vals)
    if len(vals) == 1:
        return f"{med:.4g} {unit}"
    return f"{med:.4g} [{min(vals):.4g}-{max(vals):.4g}] {unit}"


def load_reasons(path):
    out = []
    if not path:
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or ":" not in line:
                continue
            pat, why = line.split(":", 1)
            parts = pat.split()
            if len(parts) == 3:
                out.append((parts, why.strip()))
    return out


def reason_for(reasons, key):
    for (op, sc, b), why in reasons:
        if fnmatch.fnmatch(key[0], op) and fnmatch.fnmatch(key[1], sc) and fnmatch.fnmatch(str(key[2]), b):
            return why
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="?")
    ap.add_argument("--command", default="bench/run_gpu.sh")
    ap.add_argument("--reasons")
    ap.add_argument("--out", required=True)
    ap.add_argument("csvs", nargs="+")
    a = ap.parse_args()
    data, units, order = load(a.csvs)
    found = sorted(data)
    libs = [l for l in ("nvshmem", "ishmem") if l in found] + [l for l in found if l not in ("nvshmem", "ishmem")]
    others = [l for l in libs if l.startswith("ishmem_")] if "ishmem" in libs else []
    vs_nv = "nvshmem" in libs and "ishmem" in libs
    rounds = {l: len({os.path.basename(p) for p in a.csvs if re.match(rf"x2-{re.escape(l)}-\d+\.csv$", os.path.basename(p))}) for l in libs}
    reasons = load_reasons(a.reasons)
    hdr = ["op", "scope", "bytes"] + libs + (["ishmem/nvshmem"] if vs_nv else []) + [f"ishmem/{o}" for o in others]
    lines = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    behind, ahead, even = [], 0, 0
    for key in order:
        u = units[key]
        row = [key[0], key[1], str(key[2])] + [cell(data[l].get(key), u) for l in libs]
        if vs_nv:
            r = time_ratio(data["ishmem"].get(key), data["nvshmem"].get(key), u)
            row.append("-" if r is None else f"{r:.2f}")
            if r is not None:
                if r > 1.05:
                    behind.append((key, r))
                elif r < 0.95:
                    ahead += 1
                else:
                    even += 1
        for o in others:
            r = time_ratio(data["ishmem"].get(key), data[o].get(key), u)
            row.append("-" if r is None else f"{r:.2f}")
        lines.append("| " + " | ".join(row) + " |")
    out = [f"### Two GPUs, one PE per GPU: `{a.command}` on {a.kind}\n",
           "Median over the rounds [min-max]; rounds per library: " +
           ", ".join(f"{l} {rounds[l]}" for l in libs) + ". ratio = ishmem / other in time "
           "(bandwidth inverted): at or below 1.00 ishmem is at or ahead.\n"]
    out += lines + [""]
    if vs_nv:
        out.append(f"Rows compared: {len(behind) + ahead + even}; ishmem ahead by more than 5%: {ahead}; "
                   f"within 5%: {even}; behind by more than 5%: {len(behind)}.\n")
        if behind:
            out.append("Rows more than 5% behind NVSHMEM (ratio, and the measured reason where one is known):")
            for key, r in sorted(behind, key=lambda x: -x[1]):
                why = reason_for(reasons, key)
                out.append(f"- {key[0]} {key[1]} {key[2]} B: {r:.2f}x" + (f" -- {why}" if why else ""))
            out.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(out))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
