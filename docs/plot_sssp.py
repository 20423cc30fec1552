#!/usr/bin/env python3
"""Plots `sssp --json` lines: per graph, each mode's time split into heap and compute time,
with Dijkstra's time as a line, and the vertices each mode expanded. Usage:

    python3 docs/plot_sssp.py OUT.png RESULTS.jsonl [MORE.jsonl ...]

A graph searched in both numberings (`vertex_order`: bfs, given) gets a column for each.
When a graph appears in several files, the rows of the last file win; within a file, the
first row of each mode and order (a sweep of delta-stepping widths adds later ones).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODES = [
    ("cpu", "frontier"),
    ("cpu", "heap"),
    ("cpu", "delta"),
    ("gpu", "frontier"),
    ("gpu", "heap"),
    ("gpu", "delta"),
    ("coop", "heap"),
    ("coop", "delta"),
]


def main():
    out, paths = sys.argv[1], sys.argv[2:]
    graphs = {}
    for path in paths:
        file_rows = {}
        for line in open(path):
            if line.startswith("{"):
                r = json.loads(line)
                if "mode" in r:  # peers' rows (GAP) have none
                    key = r["graph"]
                    if "vertex_order" in r:
                        key += f", {r['vertex_order']} numbering"
                    file_rows.setdefault(key, []).append(r)
        graphs.update(file_rows)
    names = list(graphs)
    fig, ax = plt.subplots(2, len(names), figsize=(4.2 * len(names), 7.5), squeeze=False)
    for col, name in enumerate(names):
        rows = graphs[name]
        got = [(m, o, next((r for r in rows if r["mode"] == m and r["order"] == o), None)) for m, o in MODES]
        got = [(m, o, r) for m, o, r in got if r is not None]
        labels = [f"{m}\n{o}" for m, o, _ in got]
        heap = [r["heap_ms"] for _, _, r in got]
        comp = [r["ms"] - r["heap_ms"] for _, _, r in got]
        a = ax[0][col]
        a.bar(labels, comp, label="compute (expansion)", color="tab:blue")
        a.bar(labels, heap, bottom=comp, label="heap", color="tab:orange")
        dijkstra = next((r["ms"] for r in rows if r["order"] == "dijkstra"), None)
        if dijkstra is not None:
            a.axhline(dijkstra, color="black", linestyle="--", label="Dijkstra, 1 core")
        v, e = rows[0]["vertices"], rows[0]["edges"]
        a.set_title(f"{name}\n{v / 1e6:.1f} M vertices, {e / 1e6:.1f} M edges")
        a.set_ylabel("ms")
        if col == 0:
            a.legend(fontsize=8)
        b = ax[1][col]
        b.bar(labels, [r["visited"] / 1e6 for _, _, r in got], color="tab:green")
        b.set_ylabel("vertices expanded (M)")
    device = next((r["device"] for rs in graphs.values() for r in rs if r.get("device")), "no device")
    fig.suptitle(f"SSSP — {paths[-1].split('/')[-1].removesuffix('.jsonl')}: {device}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
