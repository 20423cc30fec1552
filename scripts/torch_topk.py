#!/usr/bin/env python3
"""The peer a GPU user would pick for batch k-selection: torch.kthvalue and torch.topk on keys
resident on the GPU, on the same .npy file batch_kselect reads. Prints one JSON line per
method and sub-list length (median of 5 timed runs after a warm-up, CUDA events), in
batch_kselect's --json shape ("mode", "sublist", "k", "ms", "verified" against numpy).

    python3 scripts/torch_topk.py --write keys.npy --total-log2 28   # make the keys
    python3 scripts/torch_topk.py keys.npy                           # time torch on them
"""
import argparse
import json
import sys

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("keys", nargs="?", help=".npy of int32 keys to select from")
    p.add_argument("--write", help="write random int32 keys to this .npy and exit")
    p.add_argument("--total-log2", type=int, default=28)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--lengths", default="11,13,15,17,19,21", help="log2 of sub-list lengths")
    args = p.parse_args()
    if args.write:
        rng = np.random.default_rng(args.seed)
        keys = rng.integers(-(2**31), 2**31, size=1 << args.total_log2, dtype=np.int64)
        np.save(args.write, keys.astype(np.int32))
        return
    if not args.keys:
        p.error("give a .npy of keys, or --write")
    import torch  # only the timing needs it

    if not torch.cuda.is_available():
        sys.exit("torch_topk: no CUDA device")
    host = np.load(args.keys)
    dev = torch.from_numpy(host).cuda()
    for e in (int(x) for x in args.lengths.split(",")):
        length = 1 << e
        if host.size % length:
            continue
        k = max(length // 10, 1)
        rows = dev.view(-1, length)
        want = np.partition(host.reshape(-1, length), k - 1, axis=1)[:, k - 1]
        for name, fn in [
            ("peer:torch_kthvalue", lambda: torch.kthvalue(rows, k, dim=1).values),
            ("peer:torch_topk", lambda: torch.topk(rows, k, dim=1, largest=False).values[:, -1]),
        ]:
            got = fn()
            torch.cuda.synchronize()
            times = []
            for _ in range(5):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                got = fn()
                b.record()
                torch.cuda.synchronize()
                times.append(a.elapsed_time(b))
            times.sort()
            print(json.dumps({
                "mode": name, "sublist": length, "k": k, "n": host.size,
                "ms": times[len(times) // 2],
                "verified": bool(np.array_equal(got.cpu().numpy(), want)),
                "device": torch.cuda.get_device_name(0), "keys": "resident on the GPU",
            }), flush=True)


if __name__ == "__main__":
    main()
