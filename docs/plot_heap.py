#!/usr/bin/env python3
"""Plots the generalized heap's measurements from `heap_bench --json` lines: time against
work-groups and against K (device heap, top-down and bottom-up inserts), and the mixed
workload against the preloaded size (device heap and CPU heap, top-down and bottom-up). Usage:

    python3 docs/plot_heap.py OUT.png SWEEPS.jsonl MIXED.jsonl
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    return [json.loads(line) for line in open(path) if line.startswith("{")]


def series(rows, by, **fields):
    """The rows whose fields have the given values, ordered by `by`."""
    return sorted(
        (r for r in rows if all(r[f] == v for f, v in fields.items())), key=lambda r: r[by]
    )


def main():
    out, sweeps, mixed = sys.argv[1], rows(sys.argv[2]), rows(sys.argv[3])
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))

    # Time against work-groups: 2^22 keys, K = 1024, 1024 work-items per group.
    for mode, style in [("gpu:td", "-"), ("gpu:bu", "--")]:
        g = series(sweeps, "threads", mode=mode, keys=1 << 22, batch=1024, work_group=1024)
        x = [r["threads"] for r in g]
        ax[0].plot(x, [r["insert_ms"] for r in g], "o" + style, label=f"{mode} insert all")
        ax[0].plot(x, [r["delete_ms"] for r in g], "s" + style, label=f"{mode} delete all")
    ax[0].set_xscale("log", base=2)
    ax[0].set_xlabel("work-groups")
    ax[0].set_ylabel("ms")
    ax[0].set_title("device heap, 2^22 random keys, K = 1024")
    ax[0].legend()

    # Time against K: 2^26 keys, 66 work-groups of 256.
    for mode, style in [("gpu:td", "o-"), ("gpu:bu", "s--")]:
        k = series(sweeps, "batch", mode=mode, keys=1 << 26, threads=66, work_group=256)
        ax[1].plot([r["batch"] for r in k], [r["ms"] for r in k], style, label=f"{mode} insert + delete")
    ax[1].set_xscale("log", base=2)
    ax[1].set_xlabel("K (keys per node)")
    ax[1].set_ylabel("ms")
    ax[1].set_title("device heap, 2^26 random keys")
    ax[1].legend()

    # Mixed pairs against the preloaded size.
    for mode, style in [("gpu:td", "o-"), ("gpu:bu", "o--"), ("cpu:td", "s-"), ("cpu:bu", "s--")]:
        m = series(mixed, "preload", mode=mode)
        ax[2].plot([r["preload"] / 1e6 for r in m], [r["ms"] for r in m], style, label=mode)
    ax[2].set_xlabel("keys preloaded (millions)")
    ax[2].set_ylabel("ms")
    ax[2].set_title("2^14 insert/delete pairs of K = 1024")
    ax[2].legend()

    fig.suptitle("generalized heap on the H200 machine (NVIDIA OpenCL; CPU heap on its 16 cores)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
