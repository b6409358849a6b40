#!/usr/bin/env python3
"""scale_plot.py: the plots of docs/SCALING.md from scripts/scale-check.sh's results.csv.

    python3 bench/scale_plot.py build/scale/results.csv docs/scaling

writes <prefix>_latency.png, <prefix>_time.png and <prefix>_state.png. Each measured series is
drawn against the PE count with the growth it should have (dashed, scaled to the first point):
collectives O(log N) rounds (fcollect: O(N) data), init O(N) (the exchange carries every PE's
entry), per-PE state O(N) small entries or O(1). Needs matplotlib (pip install matplotlib)."""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path) as f:
        rows = [r for r in csv.DictReader(f)]
    return rows


def col(rows, k):
    out = []
    for r in rows:
        try:
            out.append(float(r[k]))
        except (KeyError, ValueError):
            out.append(float("nan"))
    return out


def model(ns, y0, kind):
    n0 = ns[0]
    if kind == "log":
        return [y0 * math.log2(n) / math.log2(n0) for n in ns]
    if kind == "n":
        return [y0 * n / n0 for n in ns]
    return [y0 for _ in ns]


def panel(ax, ns, rows, series, title, ylabel):
    for key, label, kind in series:
        ys = col(rows, key)
        if all(math.isnan(y) for y in ys):
            continue
        line = ax.plot(ns, ys, "o-", label=label)[0]
        if kind:
            ax.plot(ns, model(ns, ys[0], kind), "--", color=line.get_color(), alpha=0.6,
                    label=f"{label}: {'O(log N)' if kind == 'log' else 'O(N)' if kind == 'n' else 'O(1)'}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns)
    ax.set_xticklabels([str(int(n)) for n in ns])
    ax.set_xlabel("PEs (2 per pretend node)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scale_plot.py results.csv out-prefix")
    rows = load(sys.argv[1])
    ns = col(rows, "npes")
    prefix = sys.argv[2]

    fig, ax = plt.subplots(figsize=(7, 4.5))
    panel(ax, ns, rows, [
        ("barrier_all_us", "barrier_all", "log"),
        ("broadcast8_us", "broadcast 8 B", "log"),
        ("sum_reduce8_us", "sum_reduce 8 B", "log"),
        ("fcollect8_us", "fcollect 8 B", "log"),
    ], "Collective latency, max over PEs (2 loaded cores)", "us per call")
    ax.set_yscale("log")
    fig.tight_layout()
    fig.savefig(f"{prefix}_latency.png", dpi=110)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    panel(ax, ns, rows, [
        ("init_s", "ishmem_init", "n"),
        ("finalize_s", "ishmem_finalize", "n"),
    ], "Init and finalize, max over PEs (2 loaded cores)", "seconds")
    fig.tight_layout()
    fig.savefig(f"{prefix}_time.png", dpi=110)

    fig, axs = plt.subplots(1, 2, figsize=(11, 4.5))
    panel(axs[0], ns, rows, [
        ("fds_after", "fds (max PE)", "n"),
        ("tcp_conns_after", "TCP connections (max PE)", "n"),
        ("threads_after", "threads (max PE)", None),
        ("av_entries", "AV entries (PE 0)", "n"),
        ("live_conns", "liveness conns (PE 0)", "n"),
    ], "Per-PE handles", "count")
    for r in rows:
        try:
            r["team_area_kib"] = float(r["team_area_bytes"]) / 1024
        except (KeyError, ValueError):
            r["team_area_kib"] = "nan"
    panel(axs[1], ns, rows, [
        ("rss_after_kib", "RSS KiB (max PE)", None),
        ("team_area_kib", "team areas KiB (PE 0)", None),
    ], "Per-PE memory (O(1) expected)", "KiB")
    axs[1].set_yscale("log")
    fig.tight_layout()
    fig.savefig(f"{prefix}_state.png", dpi=110)


if __name__ == "__main__":
    main()
