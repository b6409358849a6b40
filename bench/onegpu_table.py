#!/usr/bin/env python3
"""onegpu_table.py -- the one-GPU side-by-side table of bench/run_gpu.sh --one-gpu.

Inputs: CSVs of gpu_bench named one-<lib>-<round>.csv (1 PE targeting itself) and
two-<lib>-<round>.csv (ishmem with 2 PEs on the one GPU), <lib> nvshmem, ishmem or
ishmem_base (an older ishmem build: the A/B of a change). Output: markdown with, per row
(op, scope, bytes), each library's median over the rounds and its range [min-max], and the
ratio ishmem / NVSHMEM in time (latency rows as they are, bandwidth rows inverted): below or
at 1.00 ishmem is at or ahead of NVSHMEM; likewise ishmem / each other variant (ishmem_base:
an older build, ishmem_alt: the build with other settings).

    bench/onegpu_table.py --kind nvidia-h100-x1 --command "..." --out table.md CSV...
"""
import argparse
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

# Rows whose 1-PE figure says nothing about the 2-GPU case (the "remote" side is this GPU's
# own memory, a team of one has nobody to wait for): listed under the table.
NOT_REPRESENTED = {
    "putmem_nbi": "bandwidth to self is an HBM copy, not NVLink",
    "getmem_nbi": "bandwidth from self is an HBM copy, not NVLink",
    "putmem_on_queue": "large sizes: HBM copy, not NVLink",
    "p": "a store to local memory: no NVLink round trip",
    "g": "a load from local memory",
    "putmem_quiet": "local store + fence",
    "fetch_add": "atomics on local memory",
    "compare_swap": "atomics on local memory",
    "put_signal": "a round trip to itself, no peer",
    "barrier_all": "one PE: nobody to wait for",
    "team_sync": "team of one: nobody to wait for",
    "team_sync_on_queue": "team of one: the call's overhead alone",
    "barrier_all_on_queue": "one PE: the call's overhead alone",
}


def load(paths):
    # data[(mode, lib)][(op, scope, bytes)] = [values...]; units[(op, scope, bytes)] = unit
    data = defaultdict(lambda: defaultdict(list))
    units = {}
    order = []
    for p in paths:
        m = re.match(r"(one|two)-(.+)-(\d+)\.csv$", os.path.basename(p))
        if not m:
            print(f"onegpu_table: {p}: not one-<lib>-<n>.csv or two-<lib>-<n>.csv, skipped", file=sys.stderr)
            continue
        mode, lib = m.group(1), m.group(2)
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    key = (r["op"], r["scope"], int(r["bytes"]))
                    v = float(r["value"])
                except (KeyError, ValueError):
                    continue
                data[(mode, lib)][key].append(v)
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
    return f"{med:.4g} [{min(vals):.4g}-{max(vals):.4g}] {unit} (n={len(vals)})"


def time_ratio(a, b, unit):
    """a / b in time: latency as is, bandwidth inverted."""
    if not a or not b:
        return None
    ma, mb = statistics.median(a), statistics.median(b)
    if ma <= 0 or mb <= 0:
        return None
    return ma / mb if unit != "GB/s" else mb / ma


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="?")
    ap.add_argument("--command", default="bench/run_gpu.sh --one-gpu")
    ap.add_argument("--out", required=True)
    ap.add_argument("csvs", nargs="+")
    a = ap.parse_args()
    data, units, order = load(a.csvs)
    def libs_of(mode):
        found = sorted(l for (m, l) in data if m == mode)
        first = [l for l in ("nvshmem", "ishmem") if l in found]
        return first + [l for l in found if l not in first]

    def table(mode, libs):
        """The rows of one mode: per library the cell, then ishmem / NVSHMEM (when both ran) and
        ishmem / each other ishmem variant. Returns the lines and the rows behind NVSHMEM."""
        others = [l for l in libs if l.startswith("ishmem_")] if "ishmem" in libs else []
        vs_nv = "nvshmem" in libs and "ishmem" in libs
        hdr = ["op", "scope", "bytes"] + libs + (["ratio"] if vs_nv else []) + [f"ishmem/{o}" for o in others]
        lines = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
        behind = []
        for key in order:
            if not any(key in data[(mode, l)] for l in libs):
                continue
            u = units[key]
            row = [key[0], key[1], str(key[2])] + [cell(data[(mode, l)].get(key), u) for l in libs]
            for ref in (["nvshmem"] if vs_nv else []) + others:
                r = time_ratio(data[(mode, "ishmem")].get(key), data[(mode, ref)].get(key), u)
                row.append("-" if r is None else f"{r:.2f}")
                if ref == "nvshmem" and r is not None and r > 1.0:
                    behind.append((key, r))
            lines.append("| " + " | ".join(row) + " |")
        return lines, behind

    libs1 = libs_of("one")
    libs2 = libs_of("two")
    out = []
    out.append(f"### One GPU, 1 PE targeting itself: `{a.command}` on {a.kind}\n")
    out.append("Median over the rounds, [min-max], n = rounds. ratio = ishmem / NVSHMEM in time "
               "(bandwidth inverted): at or below 1.00 ishmem is at or ahead.\n")
    lines, behind = table("one", libs1)
    out += lines + [""]
    seen = sorted({k[0] for k in order} & set(NOT_REPRESENTED))
    if seen:
        out.append("Rows a 1-PE run cannot represent (both libraries measure the same local case; "
                   "the 2-GPU table of the issue \"Runs on two GPUs\" holds the real figure):")
        for op in seen:
            out.append(f"- `{op}`: {NOT_REPRESENTED[op]}")
        out.append("")
    if behind:
        out.append(f"Rows where ishmem's median is behind NVSHMEM's ({len(behind)}):")
        for (op, sc, b), r in sorted(behind, key=lambda x: -x[1]):
            out.append(f"- {op} {sc} {b} B: {r:.2f}x")
        out.append("")
    if libs2:
        out.append(f"### One GPU, ishmem with 2 PEs on it (NVSHMEM cannot run this): {a.kind}\n")
        out += table("two", libs2)[0] + [""]
    with open(a.out, "w") as f:
        f.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
