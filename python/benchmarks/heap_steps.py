"""Where a sort through the heap spends its time, step by step, from Python: making the heap,
the insert, the delete of every key, and the whole asym.sort, beside numpy.sort.

    python python/benchmarks/heap_steps.py [--device nvidia] [--log2 26] [--mode gpu]
"""

import argparse
import time

import numpy as np

import asym


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device")
    p.add_argument("--log2", type=int, default=22)
    p.add_argument("--mode", default="gpu")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    n = 1 << args.log2
    a = np.random.default_rng(1).integers(-(2**31), 2**31 - 1, n, dtype=np.int32)
    rt = asym.Runtime(device=args.device)
    print(rt)
    want = np.sort(a)
    for _ in range(args.repeat):
        t = [time.perf_counter()]
        h = asym.Heap(np.int32, mode=args.mode, device=rt, capacity=n)
        t.append(time.perf_counter())
        h.insert(a)
        t.append(time.perf_counter())
        out = h.delete_min(n)
        t.append(time.perf_counter())
        del h
        t.append(time.perf_counter())
        got = asym.sort(a, mode=args.mode, device=rt)
        t.append(time.perf_counter())
        np.sort(a)
        t.append(time.perf_counter())
        ms = [round((y - x) * 1e3, 1) for x, y in zip(t, t[1:])]
        ok = np.array_equal(out, want) and np.array_equal(got, want)
        print(f"make {ms[0]}  insert {ms[1]}  delete {ms[2]}  drop {ms[3]}  "
              f"sort {ms[4]}  numpy.sort {ms[5]}  {'ok' if ok else 'MISMATCH'}", flush=True)


if __name__ == "__main__":
    main()
