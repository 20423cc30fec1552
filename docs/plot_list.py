#!/usr/bin/env python3
"""Plots the lock-free list seed's experiment from `list_ops --json` lines: time per mode for
10,000 and 40,000 initial nodes (100,000 operations; the fastest run of each mode), and the
CPU mode's time against the number of pinned threads (from SCALING.jsonl when given: a
thread sweep of its own run, with its single-threaded list). Usage:

    python3 docs/plot_list.py OUT.png RESULTS.jsonl [SCALING.jsonl]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    return [r for r in rows if r["verified"]]


def main():
    out, path = sys.argv[1], sys.argv[2]
    rows = load(path)
    scaling = load(sys.argv[3]) if len(sys.argv) > 3 else rows
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    modes = ["seq", "cpu", "gpu", "coop"]
    most = max(r["threads"] for r in rows if r["mode"] == "cpu")
    labels = {"seq": "seq (1 core)", "cpu": f"cpu ({most} threads)", "gpu": "gpu",
              "coop": "coop (50/50)"}
    width = 0.38
    for k, initial in enumerate(sorted({r["initial"] for r in rows})[:2]):
        best = []
        for m in modes:
            ms = [r["ms"] for r in rows if r["initial"] == initial and r["mode"] == m
                  and (m not in ("cpu", "coop") or r["threads"] == most)
                  and (m != "coop" or r["device_ops"] == r["ops"] // 2)]
            best.append(min(ms) if ms else float("nan"))
        xs = [i + (k - 0.5) * width for i in range(len(modes))]
        bars = ax[0].bar(xs, best, width, label=f"{initial:,} initial nodes")
        for b, v in zip(bars, best):
            ax[0].annotate(f"{v:,.0f}" if v >= 100 else f"{v:.1f}", (b.get_x() + b.get_width() / 2, v),
                           ha="center", va="bottom", fontsize=8)
    ax[0].set_xticks(range(len(modes)), [labels[m] for m in modes])
    ax[0].set_yscale("log")
    ax[0].set_ylabel("ms for 100,000 operations (log)")
    ax[0].set_title("The seed's experiment, every run verified")
    ax[0].legend()
    threads = sorted({r["threads"] for r in scaling if r["mode"] == "cpu"})
    cpu = [min(r["ms"] for r in scaling if r["mode"] == "cpu" and r["threads"] == t
               and r["initial"] == 10000) for t in threads]
    seq = min(r["ms"] for r in scaling if r["mode"] == "seq" and r["initial"] == 10000)
    ax[1].plot(threads, cpu, "o-", label="concurrent list, CPU threads")
    ax[1].axhline(seq, color="grey", ls="--", label="single-threaded list")
    ax[1].set_xscale("log", base=2)
    ax[1].set_yscale("log")
    ax[1].set_xlabel("pinned threads")
    ax[1].set_ylabel("ms (log)")
    commit = scaling[0].get("commit", "")
    ax[1].set_title(f"CpuOnly scaling, 10,000 nodes / 100,000 ops {commit}".rstrip())
    ax[1].legend()
    fig.suptitle(f"Lock-free list on SVM — {path.split('/')[-1].removesuffix('.jsonl')}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
