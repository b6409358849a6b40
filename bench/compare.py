#!/usr/bin/env python3
"""Compare benchmark CSVs (bench/host_bench.c output) of ishmem and peers.

    python3 bench/compare.py [--out TABLE.md] [--plots DIR] a.csv b.csv ...
    python3 bench/compare.py --merge OUT.csv run1.csv run2.csv ...

CSV columns: lib,version,backend,op,scope,npes,bytes,iters,value,unit,machine

Writes one markdown table row per (op, scope, npes, bytes) with every
library's value and, for each ishmem column against each peer column, how
many times better ishmem is (GB/s and Mops/s: higher is better; us: lower is
better), and one PNG per (scope, op) under --plots: value vs bytes on a log
x axis for ops measured at several sizes, a bar chart for single-size ops
(error bars: min-max over the runs, when --merge recorded them).
Only the standard library and matplotlib are needed.

--merge combines repeated runs of the same library: for every row identity
(all columns but iters and value) it keeps the run with the median value
(median_low, so the row is a real measurement), writes OUT.csv and exits.
"""
import argparse
import csv
import datetime
import os
import sys
from collections import OrderedDict

COLUMNS = ["lib", "version", "backend", "op", "scope", "npes", "bytes",
           "iters", "value", "unit", "machine"]
HIGHER_IS_BETTER = {"GB/s": True, "Mops/s": True, "MB/s": True, "us": False,
                    "ns": False, "ms": False, "s": False}
BASE_LIB = "ishmem"
OP_ORDER = ["putmem", "getmem", "p", "g", "fetch_add", "compare_swap", "add",
            "put_signal", "barrier_all", "team_sync", "broadcast", "fcollect", "alltoall",
            "sum_reduce"]


def human_bytes(n):
    n = int(n)
    if n == 0:
        return "—"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def fmt_value(v):
    if v is None:
        return "—"
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def better(base, peer, unit):
    """'N.NNx better' / 'N.NNx worse' for base (ishmem) against peer."""
    if base is None or peer is None or base <= 0 or peer <= 0:
        return "—"
    hib = HIGHER_IS_BETTER.get(unit)
    if hib is None:
        return f"ratio {base / peer:.2f}"
    r = base / peer if hib else peer / base  # > 1: base is better
    if abs(r - 1) < 0.005:
        return "1.00x (same)"
    return f"{r:.2f}x better" if r > 1 else f"{1 / r:.2f}x worse"


def read_rows(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"compare.py: {path}: missing columns {missing}")
            for r in reader:
                if r["lib"] == "lib":  # repeated header of concatenated files
                    continue
                try:
                    r["npes"] = int(r["npes"])
                    r["bytes"] = int(r["bytes"])
                    r["value"] = float(r["value"])
                except ValueError:
                    print(f"compare.py: {path}: skipping bad row {r}", file=sys.stderr)
                    continue
                rows.append(r)
    return rows


def merge(paths, out):
    import statistics
    groups = OrderedDict()
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r.get("lib") in (None, "lib"):
                    continue
                key = tuple(r[c] for c in COLUMNS if c not in ("iters", "value"))
                groups.setdefault(key, []).append(r)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for runs in groups.values():
            med = statistics.median_low(float(r["value"]) for r in runs)
            w.writerow(next(r for r in runs if float(r["value"]) == med))
    # every run's rows, for the min-max spread shown by the table and plots
    with open(runs_path(out), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for runs in groups.values():
            for r in runs:
                w.writerow({c: r[c] for c in COLUMNS})
    print(f"compare.py: merged {len(paths)} runs into {out} ({len(groups)} rows; "
          f"all runs in {runs_path(out)})", file=sys.stderr)


def runs_path(path):
    """results/host-x.csv -> results/runs-host-x.csv (sidecar of --merge)."""
    d, b = os.path.split(path)
    return os.path.join(d, "runs-" + b)


def read_spreads(paths):
    """(lib, backend, op, scope, npes, bytes) -> (min, max, n) over the runs
    recorded next to each merged CSV (absent when it was not merged)."""
    vals = {}
    for path in paths:
        rp = runs_path(path)
        if not os.path.exists(rp) or os.path.basename(path).startswith("runs-"):
            continue
        with open(rp, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    k = (r["lib"], r["backend"], r["op"], r["scope"], int(r["npes"]),
                         int(r["bytes"]))
                    vals.setdefault(k, []).append(float(r["value"]))
                except (KeyError, ValueError):
                    continue
    return {k: (min(v), max(v), len(v)) for k, v in vals.items()}


NOISY = 1.2  # show the run-to-run range when max/min exceeds this
SPLIT = 2.0  # a row whose runs of one library differ by more than this is not compared
# Rows whose name means something else for a peer (bench/peer_oshmem.h).
OP_NOTES = {("oshmem", "put_signal"): "oshmem: putmem + fence + atomic set, 3 calls; OpenSHMEM 1.4 has no put_signal"}


def split_runs(spreads, keys):
    """The series (of `keys`) whose runs disagree by more than SPLIT."""
    return [k for k in keys if (sp := spreads.get(k)) and sp[2] > 1 and sp[0] > 0 and sp[1] / sp[0] > SPLIT]


def fmt_cell(v, spread):
    text = fmt_value(v)
    if v is not None and spread and spread[2] > 1 and spread[0] > 0 and \
            spread[1] / spread[0] > NOISY:
        text += f" ({fmt_value(spread[0])}–{fmt_value(spread[1])})"
    return text


def series_labels(rows):
    """Column identity is (lib, backend); label is lib, or lib[backend]
    when one lib appears with several backends."""
    backends = OrderedDict()
    for r in rows:
        backends.setdefault(r["lib"], OrderedDict())[r["backend"]] = True
    labels = OrderedDict()
    libs = sorted(backends, key=lambda l: (l != BASE_LIB, l))
    for lib in libs:
        for be in backends[lib]:
            labels[(lib, be)] = lib if len(backends[lib]) == 1 else f"{lib}[{be}]"
    return labels


def op_key(op):
    return (OP_ORDER.index(op) if op in OP_ORDER else len(OP_ORDER), op)


def build(rows):
    """data[(scope, npes)][(op, bytes)] = {"unit":u, (lib,be): value}"""
    data = OrderedDict()
    for r in rows:
        grp = data.setdefault((r["scope"], r["npes"]), {})
        cell = grp.setdefault((r["op"], r["bytes"]), {"unit": r["unit"]})
        if cell["unit"] != r["unit"]:
            print(f"compare.py: unit mismatch for {r['op']} {r['bytes']}: "
                  f"{cell['unit']} vs {r['unit']}", file=sys.stderr)
        cell[(r["lib"], r["backend"])] = r["value"]  # last one wins
    return data


def markdown(rows, data, labels, plot_dir, md_path, spreads):
    series = list(labels)
    bases = [s for s in series if s[0] == BASE_LIB]
    peers = [s for s in series if s[0] != BASE_LIB]
    out = []
    out.append("# Host benchmark comparison\n")
    out.append(f"Generated by `bench/compare.py` on "
               f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}.\n")
    out.append("| library | version | backend | machine | rows | runs per row |")
    out.append("|---|---|---|---|---|---|")
    seen = OrderedDict()
    for r in rows:
        k = (r["lib"], r["version"], r["backend"], r["machine"])
        seen[k] = seen.get(k, 0) + 1
    for (lib, ver, be, mach), n in seen.items():
        runs = max([sp[2] for k, sp in spreads.items() if k[0] == lib and k[1] == be] or [1])
        out.append(f"| {lib} | {ver} | {be} | {mach} | {n} | {runs} |")
    out.append("")
    out.append("GB/s and Mops/s: higher is better; us: lower is better. "
               "\"Nx better\" compares ishmem with the peer in that direction. "
               "Values are the median over runs; `(a–b)` is the range over the runs "
               f"where it exceeds {NOISY}x; \"best runs\" compares each library's "
               "best run (a check on rows whose runs are bimodal). A row where one "
               f"library's runs differ by more than {SPLIT:g}x is not compared by its "
               "median (\"not compared\"). `put_signal` is ishmem's fused call against "
               "the peer's three-call emulation where the peer lacks it.\n")
    for (scope, npes), grp in data.items():
        out.append(f"## scope `{scope}`, {npes} PEs\n")
        head = ["op", "bytes", "unit"] + [labels[s] for s in series]
        head += [f"{labels[b]} vs {labels[p]}" for b in bases for p in peers]
        with_best = bool(spreads) and bool(bases) and bool(peers)
        if with_best:
            head += [f"{labels[b]} vs {labels[p]} (best runs)" for b in bases for p in peers]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * 3 + "---:|" * (len(head) - 3))
        for (op, nbytes) in sorted(grp, key=lambda k: (op_key(k[0]), k[1])):
            cell = grp[(op, nbytes)]
            notes = [OP_NOTES[(s[0], op)] for s in series if (s[0], op) in OP_NOTES]
            line = [f"`{op}`" + "".join(f" ({n})" for n in notes), human_bytes(nbytes), cell["unit"]]
            line += [fmt_cell(cell.get(s), spreads.get((s[0], s[1], op, scope, npes, nbytes)))
                     for s in series]
            split = split_runs(spreads, [(s[0], s[1], op, scope, npes, nbytes) for s in series])
            if split:
                # Not claimed either way: a library's own runs span more than SPLIT.
                why = "runs of " + ", ".join(k[0] for k in split) + f" disagree >{SPLIT:g}x: not compared"
                line += [why for b in bases for p in peers]
            else:
                line += [better(cell.get(b), cell.get(p), cell["unit"]) for b in bases for p in peers]
            if with_best:
                def best(srs):
                    sp = spreads.get((srs[0], srs[1], op, scope, npes, nbytes))
                    if not sp:
                        return cell.get(srs)
                    return sp[1] if HIGHER_IS_BETTER.get(cell["unit"], True) else sp[0]
                line += [better(best(b), best(p), cell["unit"]) for b in bases for p in peers]
            out.append("| " + " | ".join(line) + " |")
        out.append("")
        if plot_dir:
            rel = os.path.relpath(plot_dir, os.path.dirname(os.path.abspath(md_path)))
            ops = sorted({op for op, _ in grp}, key=op_key)
            links = [f"[{op}]({rel}/{plot_name(scope, npes, op, data)})" for op in ops]
            out.append("Plots: " + ", ".join(links) + "\n")
    return "\n".join(out)


BEGIN, END = "<!-- host-table:begin -->", "<!-- host-table:end -->"


def update_doc(path, md):
    """Put md (its H1 dropped, headings one level down) between the markers."""
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        sys.exit(f"compare.py: {path} lacks the {BEGIN} / {END} markers")
    lines = md.splitlines()
    body = [("#" + l if l.startswith("## ") else l) for l in lines if not l.startswith("# ")]
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + "\n".join(body).strip() + "\n" + END + tail)
    print(f"compare.py: updated {path}", file=sys.stderr)


def plot_name(scope, npes, op, data):
    multi_np = len({n for s, n in data if s == scope}) > 1
    return f"{scope}-{op}" + (f"-np{npes}" if multi_np else "") + ".png"


def plots(data, labels, plot_dir, spreads):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("compare.py: matplotlib not available, no plots "
              "(apt-get install python3-matplotlib)", file=sys.stderr)
        return []
    os.makedirs(plot_dir, exist_ok=True)
    written = []
    for (scope, npes), grp in data.items():
        for op in sorted({op for op, _ in grp}, key=op_key):
            sizes = sorted(b for o, b in grp if o == op)
            unit = grp[(op, sizes[0])]["unit"]
            hib = HIGHER_IS_BETTER.get(unit)
            hint = "" if hib is None else (" (higher is better)" if hib else " (lower is better)")
            fig, ax = plt.subplots(figsize=(7, 4.2))
            if len(sizes) > 1:
                for i, (s, label) in enumerate(labels.items()):
                    pts = [(b, grp[(op, b)][s]) for b in sizes if s in grp[(op, b)]]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                                label=label, color=f"C{i}")
                        band = [(b, spreads.get((s[0], s[1], op, scope, npes, b)))
                                for b, _ in pts]
                        if all(sp for _, sp in band):
                            ax.fill_between([b for b, _ in band], [sp[0] for _, sp in band],
                                            [sp[1] for _, sp in band], color=f"C{i}",
                                            alpha=0.15, lw=0)
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_xticks(sizes)
                ax.set_xticklabels([human_bytes(b).replace(" ", "") for b in sizes],
                                   rotation=45, ha="right")
                ax.set_xlabel("message size")
                ax.grid(True, which="both", alpha=0.3)
            else:
                cell = grp[(op, sizes[0])]
                present = [(i, s) for i, s in enumerate(labels) if s in cell]
                names = [labels[s] for _, s in present]
                vals = [cell[s] for _, s in present]
                lo, hi = [], []
                for (_, sr), v in zip(present, vals):
                    sp = spreads.get((sr[0], sr[1], op, scope, npes, sizes[0]))
                    lo.append(max(0.0, v - sp[0]) if sp else 0.0)
                    hi.append(max(0.0, sp[1] - v) if sp else 0.0)
                bars = ax.bar(names, vals, color=[f"C{i}" for i, _ in present],
                              yerr=[lo, hi] if any(lo) or any(hi) else None, capsize=6,
                              error_kw={"ecolor": "0.3", "lw": 1})
                for b, v in zip(bars, vals):
                    ax.annotate(fmt_value(v), (b.get_x() + b.get_width() * 0.7, v),
                                ha="left", va="bottom", fontsize=9)
                ax.set_xlabel(f"{human_bytes(sizes[0])} per operation" if sizes[0] else "")
                ax.grid(True, axis="y", alpha=0.3)
                ax.margins(y=0.15)
            ax.set_ylabel(unit)
            ax.set_title(f"{op} — {scope}, {npes} PEs{hint}")
            if len(sizes) > 1:
                ax.legend(title="median of runs; band: min-max" if spreads else None)
            fig.tight_layout()
            path = os.path.join(plot_dir, plot_name(scope, npes, op, data))
            fig.savefig(path, dpi=100)
            plt.close(fig)
            written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="CSV files from host_bench")
    ap.add_argument("--out", default=None,
                    help="markdown output (default: <dir of first csv>/host-table.md)")
    ap.add_argument("--plots", default=None,
                    help="PNG directory (default: <dir of first csv>/plots); '' for none")
    ap.add_argument("--doc", default=None,
                    help="also replace the text between <!-- host-table:begin --> and "
                         "<!-- host-table:end --> in this markdown file (docs/PERFORMANCE.md)")
    ap.add_argument("--merge", metavar="OUT", default=None,
                    help="write the per-row median of the input runs to OUT and exit")
    args = ap.parse_args()
    if args.merge:
        merge(args.csv, args.merge)
        return
    base_dir = os.path.dirname(os.path.abspath(args.csv[0]))
    out = args.out or os.path.join(base_dir, "host-table.md")
    plot_dir = os.path.join(base_dir, "plots") if args.plots is None else args.plots

    rows = read_rows(args.csv)
    if not rows:
        sys.exit("compare.py: no rows")
    labels = series_labels(rows)
    data = build(rows)
    spreads = read_spreads(args.csv)
    written = plots(data, labels, plot_dir, spreads) if plot_dir else []
    md = markdown(rows, data, labels, plot_dir if written else "", out, spreads)
    with open(out, "w") as f:
        f.write(md)
    print(md)
    if args.doc:
        update_doc(args.doc, markdown(rows, data, labels, plot_dir if written else "",
                                      args.doc, spreads))
    print(f"compare.py: wrote {out} and {len(written)} plots", file=sys.stderr)


if __name__ == "__main__":
    main()
