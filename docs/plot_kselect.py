#!/usr/bin/env python3
"""Plots batch k-selection throughput against sub-list length, one line per mode and peer,
from the JSON lines that `batch_kselect --json` prints. Usage:

    python3 docs/plot_kselect.py OUT.png "TITLE" results/a.jsonl [results/b.jsonl ...] [--without M1,M2]

Rows from several files are merged (a file's rows get a suffix with its d when d differs).
Rows marked "partial" (a peer's step that does not yet give the k-th) are left out, and so
are modes that start with a prefix given to --without (a set plotted on its own elsewhere).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    args = sys.argv[1:]
    without = []
    if "--without" in args:
        at = args.index("--without")
        without = args[at + 1].split(",")
        del args[at : at + 2]
    out, title, files = args[0], args[1], args[2:]
    series = {}
    ds = set()
    rows_all = []
    for f in files:
        rows = [json.loads(line) for line in open(f) if line.startswith("{")]
        rows = [
            r
            for r in rows
            if not r.get("partial") and not any(r["mode"].startswith(w) for w in without)
        ]
        rows_all.append(rows)
        ds.update(r["d"] for r in rows if "d" in r)
    for rows in rows_all:
        seen = set()
        for r in rows:
            name = r["mode"]
            if "d" in r and not name.startswith("peer") and len(ds) > 1:
                name = f"{name} (d={r['d']})"
            # One point per mode and length: the first run in the file (a later run of the
            # same mode on a key file repeats it on other keys).
            if (name, r["sublist"]) in seen:
                continue
            seen.add((name, r["sublist"]))
            rate = r.get("mkeys_per_s") or r["n"] / r["ms"] / 1e3
            series.setdefault(name, []).append((r["sublist"], rate / 1e3))
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for name, pts in sorted(series.items()):
        pts.sort()
        style = "--" if name.startswith("peer") else "-"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sub-list length (k = 0.1 · length)")
    ax.set_ylabel("throughput (G keys/s, log scale)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
