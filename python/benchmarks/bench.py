"""asym from Python against the calls Python users make today, same machine, same data,
timed from Python with every conversion included (median of --repeat runs after one
warm-up), every answer checked against the peer's.

    python python/benchmarks/bench.py                     # every set at the dev sizes, a table
    python python/benchmarks/bench.py --json > out.jsonl  # one JSON object per row
    python python/benchmarks/bench.py --device nvidia --keys-log2 26 --resident-log2 28 \\
        --sort-log2 26 --graph geo.gr --tree-log2 20   # the GPU machine's sizes

Sets: kselect (host keys, numpy.partition along rows), resident (keys in device memory,
torch.kthvalue/torch.topk on CUDA; skipped without a CUDA torch), sort (numpy.sort), sssp
(scipy.sparse.csgraph.dijkstra from one source on a road-like graph: --graph FILE.gr, a
DIMACS file such as `sssp --gen geo --save-graph` writes, else a grid), rbtree
(sortedcontainers.SortedDict, one batch of new keys inserted, then deleted), overhead (a
one-key call).
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

import asym


def timed(f, repeat):
    """Median seconds of `repeat` calls of f after one warm-up, and the last result."""
    out = f()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), out


class Report:
    def __init__(self, args):
        self.args = args
        self.rows = []
        rt = asym.Runtime(device=args.device)
        self.runtime = rt
        self.machine = {
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "device": rt.device,
            "transport": rt.transport,
            "threads": rt.threads,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "date": datetime.date.today().isoformat(),
            "commit": commit(),
        }
        if not args.json:
            print("# " + ", ".join(f"{k} {v}" for k, v in self.machine.items()))

    def row(self, set_name, case, mode, asym_s, peer, peer_s, ok):
        row = {
            "set": set_name,
            "case": case,
            "mode": mode,
            "asym_ms": round(asym_s * 1e3, 3),
            "peer": peer,
            "peer_ms": round(peer_s * 1e3, 3),
            "peer_over_asym": round(peer_s / asym_s, 2) if asym_s > 0 else None,
            "verified": bool(ok),
        }
        self.rows.append(row)
        if self.args.json:
            print(json.dumps({**row, **self.machine}), flush=True)
        else:
            print(
                f"{set_name:9} {case:28} {mode:5} asym {row['asym_ms']:10.3f} ms   "
                f"{peer:22} {row['peer_ms']:10.3f} ms   x{row['peer_over_asym']:<7} "
                f"{'ok' if ok else 'MISMATCH'}",
                flush=True,
            )


def commit():
    """The commit the package was built from: ASYM_COMMIT where the caller knows it (a wheel
    carried to another machine), else this checkout's HEAD."""
    if os.environ.get("ASYM_COMMIT"):
        return os.environ["ASYM_COMMIT"]
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def progress(what):
    print(f"[bench] {what}", file=sys.stderr, flush=True)


def bench_kselect(rep, args, rng):
    total = 1 << args.keys_log2
    keys = rng.integers(-(2**31), 2**31 - 1, total, dtype=np.int32)
    for log2 in range(11, min(args.keys_log2, 21) + 1, 2):
        length = 1 << log2
        k = length // 10
        rows = keys.reshape(-1, length)
        progress(f"kselect rows of 2^{log2}")
        peer_s, want = timed(lambda: np.partition(rows, k - 1, axis=1)[:, k - 1], args.repeat)
        for mode in ("auto", "cpu", "gpu", "coop"):
            s, got = timed(lambda: asym.kselect(rows, k, mode=mode, device=rep.runtime), args.repeat)
            rep.row("kselect", f"2^{args.keys_log2} keys, rows 2^{log2}", mode, s,
                    "numpy.partition", peer_s, np.array_equal(got, want))


def bench_resident(rep, args, rng):
    try:
        import torch
    except ImportError:
        progress("resident: no torch, skipped")
        return
    if not torch.cuda.is_available():
        progress("resident: torch has no CUDA device, skipped")
        return
    total = 1 << args.resident_log2
    keys = rng.integers(-(2**31), 2**31 - 1, total, dtype=np.int32)
    resident = rep.runtime.array(keys)
    on_gpu = torch.from_numpy(keys).cuda()

    def torch_call(f):
        def run():
            out = f()
            torch.cuda.synchronize()
            return out
        return run

    for log2 in range(11, min(args.resident_log2, 21) + 1, 2):
        length = 1 << log2
        k = length // 10
        rows = on_gpu.view(-1, length)
        progress(f"resident rows of 2^{log2}")
        kth_s, kth = timed(torch_call(lambda: torch.kthvalue(rows, k, dim=1).values), args.repeat)
        top_s, top = timed(
            torch_call(lambda: torch.topk(rows, k, dim=1, largest=False, sorted=True).values[:, -1]),
            args.repeat,
        )
        want = kth.cpu().numpy()
        assert np.array_equal(top.cpu().numpy(), want)
        s, got = timed(lambda: asym.kselect(resident, k, sublist=length), args.repeat)
        ok = np.array_equal(got, want)
        peer, peer_s = ("torch.kthvalue", kth_s) if kth_s <= top_s else ("torch.topk", top_s)
        rep.row("resident", f"2^{args.resident_log2} keys, rows 2^{log2}", "gpu", s, peer, peer_s, ok)


def bench_sort(rep, args, rng):
    n = 1 << args.sort_log2
    a = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32)
    progress(f"sort 2^{args.sort_log2}")
    peer_s, want = timed(lambda: np.sort(a), args.repeat)
    for mode in ("auto", "cpu", "gpu", "coop"):
        s, got = timed(lambda: asym.sort(a, mode=mode, device=rep.runtime), args.repeat)
        rep.row("sort", f"2^{args.sort_log2} int32", mode, s, "numpy.sort", peer_s,
                np.array_equal(got, want))


def read_dimacs(path):
    """A DIMACS .gr file ('a u v w' lines, 1-based) as a scipy CSR matrix."""
    import scipy.sparse as sp

    n = None
    with open(path) as f:
        for line in f:
            if line.startswith("p"):
                n = int(line.split()[2])
                break
    arcs = np.loadtxt(path, comments=("c", "p"), usecols=(1, 2, 3), dtype=np.int64)
    arcs = arcs.reshape(-1, 3)
    return sp.csr_matrix(
        (arcs[:, 2].astype(np.float64), (arcs[:, 0] - 1, arcs[:, 1] - 1)), shape=(n, n)
    )


def grid(side, rng):
    import scipy.sparse as sp

    v = np.arange(side * side).reshape(side, side)
    pairs = [(v[:, :-1].ravel(), v[:, 1:].ravel()), (v[:-1, :].ravel(), v[1:, :].ravel())]
    src = np.concatenate([a for a, _ in pairs] + [b for _, b in pairs])
    dst = np.concatenate([b for _, b in pairs] + [a for a, _ in pairs])
    w = rng.integers(1, 1000, src.size).astype(np.float64)
    return sp.csr_matrix((w, (src, dst)), shape=(side * side,) * 2)


def bench_sssp(rep, args, rng):
    from scipy.sparse.csgraph import dijkstra

    progress("sssp: reading the graph")
    if args.graph:
        g, case = read_dimacs(args.graph), os.path.basename(args.graph)
    else:
        side = 1 << (args.grid_log2 // 2)
        g, case = grid(side, rng), f"grid {side}x{side}"
    # Duplicates summed by scipy's constructor would change weights: keep the lightest.
    g.sum_duplicates()
    source = int(np.argmax(np.diff(g.indptr)))
    case = f"{case}, {g.shape[0]} v, {g.nnz} e"
    progress("sssp: scipy")
    peer_s, want = timed(lambda: dijkstra(g, indices=source), max(1, args.repeat // 2))
    for mode in ("auto", "cpu", "gpu", "coop"):
        progress(f"sssp: {mode}")
        s, got = timed(lambda: asym.sssp(g, source, mode=mode, device=rep.runtime), args.repeat)
        rep.row("sssp", case, mode, s, "scipy dijkstra", peer_s, np.array_equal(got, want))


def bench_rbtree(rep, args, rng):
    from sortedcontainers import SortedDict

    n = 1 << args.tree_log2
    pool = np.unique(rng.integers(-(2**31), 2**31 - 1, 3 * n, dtype=np.int32))
    rng.shuffle(pool)
    initial, batch = pool[: 2 * n], pool[2 * n : 3 * n]
    values = rng.integers(0, 2**63, len(batch), dtype=np.uint64)
    progress(f"rbtree: SortedDict, {len(initial)} keys, batches of {len(batch)}")
    sd = SortedDict(zip(initial.tolist(), [0] * len(initial)))

    def sd_insert():
        sd.update(zip(batch.tolist(), values.tolist()))

    def sd_delete():
        for key in batch.tolist():
            del sd[key]

    ins_peer, del_peer = [], []
    for _ in range(args.repeat):
        ins_peer.append(_once(sd_insert))
        del_peer.append(_once(sd_delete))
    for mode in ("auto", "cpu", "gpu", "coop"):
        progress(f"rbtree: {mode}")
        tree = asym.RBTree(np.int32, mode=mode, device=rep.runtime)
        tree.insert(initial)
        ins, dels, ok = [], [], True
        for _ in range(args.repeat):
            ins.append(_once(lambda: tree.insert(batch, values)))
            found, got = tree.search(batch)
            ok &= bool(found.all()) and np.array_equal(got, values)
            dels.append(_once(lambda: tree.delete(batch)))
            ok &= len(tree) == len(sd)
        case = f"{len(batch)} into {len(initial)}"
        rep.row("rbtree", "insert " + case, mode, float(np.median(ins)), "SortedDict.update",
                float(np.median(ins_peer)), ok)
        rep.row("rbtree", "delete " + case, mode, float(np.median(dels)), "SortedDict del",
                float(np.median(del_peer)), ok)


def _once(f):
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def bench_overhead(rep, args, rng):
    one = np.zeros((1, 1), dtype=np.int32)
    calls = 20000

    def loop(f):
        def run():
            for _ in range(calls):
                f()
        return run

    progress("overhead")
    peer_s, _ = timed(loop(lambda: np.partition(one, 0, axis=1)[:, 0]), args.repeat)
    for mode in ("auto", "cpu"):
        s, _ = timed(loop(lambda: asym.kselect(one, 1, mode=mode)), args.repeat)
        # Per call, in ms like the other rows.
        rep.row("overhead", "one key, per call", mode, s / calls, "numpy.partition",
                peer_s / calls, True)


SETS = {
    "kselect": bench_kselect,
    "resident": bench_resident,
    "sort": bench_sort,
    "sssp": bench_sssp,
    "rbtree": bench_rbtree,
    "overhead": bench_overhead,
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=",".join(SETS), help="comma-separated sets (default: all)")
    p.add_argument("--device", help="a device name fragment (default: asym's default device)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--keys-log2", type=int, default=22, help="host keys of the kselect set")
    p.add_argument("--resident-log2", type=int, default=22, help="keys of the resident set")
    p.add_argument("--sort-log2", type=int, default=22)
    p.add_argument("--graph", help="a DIMACS .gr file for the sssp set")
    p.add_argument("--grid-log2", type=int, default=20, help="vertices of the sssp grid")
    p.add_argument("--tree-log2", type=int, default=20, help="keys per rbtree batch")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--json", action="store_true", help="one JSON object per row")
    args = p.parse_args()
    wanted = [s for s in args.only.split(",") if s]
    unknown = [s for s in wanted if s not in SETS]
    if unknown:
        p.error(f"unknown sets {unknown}: expected some of {', '.join(SETS)}")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    rep = Report(args)
    rng = np.random.default_rng(args.seed)
    for name in wanted:
        SETS[name](rep, args, rng)
    bad = [r for r in rep.rows if not r["verified"]]
    if bad:
        print(f"{len(bad)} rows did not match their peer", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
