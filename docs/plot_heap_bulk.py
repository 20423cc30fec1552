#!/usr/bin/env python3
"""Plots the device heap's bulk calls from `heap_bench --json` lines: insert-all then
delete-all per mode (every mode and peer of one run), and the cost of one insert and one
delete call against the call's size on a preloaded heap, as INS/DEL operations and with
BulkPolicy::Auto. Usage:

    python3 docs/plot_heap_bulk.py OUT.png ALL_MODES.jsonl CROSSOVER.jsonl
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    return [json.loads(line) for line in open(path) if line.startswith("{")]


def main():
    out, modes, cross = sys.argv[1], rows(sys.argv[2]), rows(sys.argv[3])
    # One file may hold both: the all-modes run (u32 keys, no preload, its largest size)
    # and the calls on a preloaded heap.
    modes = [x for x in modes if x.get("preload", 0) == 0 and x.get("key", "u32") == "u32"]
    top = max(x["keys"] for x in modes)
    modes = [x for x in modes if x["keys"] == top]
    cross = [x for x in cross if x.get("preload", 0) > 0]
    fig, ax = plt.subplots(1, 2, figsize=(13, 4.4))

    r = sorted((x for x in modes if x["pattern"] == "random"), key=lambda x: x["ms"])
    names = [f'{x["mode"]} ({x["threads"]})' for x in r]
    colours = ["tab:red" if x["mode"].startswith("gpu") else
               "tab:blue" if x["mode"].startswith(("cpu", "coop")) else "tab:gray" for x in r]
    ax[0].barh(names, [x["ms"] / 1e3 for x in r], color=colours)
    ax[0].set_xscale("log")
    ax[0].invert_yaxis()
    ax[0].set_xlabel("insert all, then delete all (s, log)")
    ax[0].set_title(f'2^{r[0]["keys"].bit_length() - 1} random u32 keys, K = {r[0]["batch"]}')

    for mode, marker in [("gpu:td", "o"), ("gpu:auto", "s")]:
        s = sorted((x for x in cross if x["mode"] == mode), key=lambda x: x["keys"])
        ks = [x["keys"] for x in s]
        label = "INS/DEL operations" if mode == "gpu:td" else "BulkPolicy::Auto"
        ax[1].plot(ks, [x["insert_ms"] for x in s], marker=marker, ls="-", label=f"insert, {label}")
        ax[1].plot(ks, [x["delete_ms"] for x in s], marker=marker, ls="--", label=f"delete, {label}")
    ax[1].set_xscale("log", base=2)
    ax[1].set_yscale("log")
    ax[1].set_xlabel(f'keys in the call (heap holds 2^{cross[0]["preload"].bit_length() - 1})')
    ax[1].set_ylabel("ms (log)")
    ax[1].set_title("one call on a preloaded heap")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
