#!/usr/bin/env python3
"""Plots the red-black tree's update throughput against batch size from the rbtree bench's
rows (docs/results/rbtree-updates-<machine>-<date>.jsonl: one JSON object per criterion
median, {op, mode, batch, ms, mkeys_per_s}): inserts and deletes of new random keys in a
2^22-key tree, every mode beside BTreeMap on one thread. Usage:

    python3 docs/plot_rbtree.py OUT.png RESULTS.jsonl
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {
    "gpu_resident": "gpu, resident sorted batch (insert_svm / delete_svm)",
    "gpu": "gpu, from a host slice",
    "coop": "coop (coarse SVM: the faster side)",
    "cpu": "cpu, 16 latency threads",
    "peer_btreemap_one_thread": "peer: BTreeMap, one thread",
}


def main():
    out, path = sys.argv[1], sys.argv[2]
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.0), sharey=True)
    for ax, op in zip(axes, ["insert", "delete"]):
        for mode, label in LABELS.items():
            pts = sorted((r["batch"], r["mkeys_per_s"]) for r in rows
                         if r["op"] == op and r["mode"] == mode)
            if not pts:
                continue
            style = "--" if mode.startswith("peer") else "-"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=label)
        ax.axhline(100, color="grey", linewidth=0.8, linestyle=":")
        ax.annotate("target 100 M keys/s", (1024, 110), fontsize=8, color="grey")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size (keys)")
        ax.set_title(f"{op}: new random keys {'into' if op == 'insert' else 'out of'} a tree of 2^22 keys")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("million keys per second")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
