#!/usr/bin/env python3
"""The peer a user would pick for a 0/1 knapsack too large for dynamic programming: OR-Tools'
knapsack solver (its branch-and-bound, KNAPSACK_MULTIDIMENSION_BRANCH_AND_BOUND_SOLVER, by
default) on files in the seed's format (`n capacity`, then `profit weight` per line), such as
the ones `knapsack --save-instances DIR` writes. Prints one JSON line per file in the knapsack
example's --json shape ("instance", "n", "capacity", "mode", "optimum", "ms"); "proved" is
false when the time limit stopped the search before it proved the optimum.

    pip install ortools
    knapsack --gen all --n 10000 --range 10000000 --method bnb --mode seq --save-instances pis/
    python3 scripts/knapsack_ortools.py pis/*.data --time-limit 60
"""
import argparse
import json
import sys
import time


def read(path):
    with open(path) as f:
        nums = [int(t) for line in f if not line.lstrip().startswith("#") for t in line.split()]
    n, capacity = nums[0], nums[1]
    if len(nums) != 2 + 2 * n:
        sys.exit(f"{path}: the header announces {n} items, the file has {(len(nums) - 2) / 2}")
    return n, capacity, nums[2::2], nums[3::2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="instances in the seed's format")
    p.add_argument("--solver", default="KNAPSACK_MULTIDIMENSION_BRANCH_AND_BOUND_SOLVER",
                   help="an OR-Tools KnapsackSolver.SolverType name")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per instance")
    args = p.parse_args()
    try:
        from ortools.algorithms.python import knapsack_solver
    except ImportError:
        sys.exit("OR-Tools is missing: pip install ortools")
    kind = getattr(knapsack_solver.SolverType, args.solver, None)
    if kind is None:
        sys.exit(f"unknown solver {args.solver}")
    for path in args.files:
        n, capacity, profits, weights = read(path)
        solver = knapsack_solver.KnapsackSolver(kind, "asym-peer")
        solver.set_time_limit(args.time_limit)
        start = time.perf_counter()
        solver.init(profits, [weights], [capacity])
        optimum = solver.solve()
        ms = (time.perf_counter() - start) * 1e3
        taken = [i for i in range(n) if solver.best_solution_contains(i)]
        weight = sum(weights[i] for i in taken)
        print(json.dumps({
            "instance": path, "n": n, "capacity": capacity, "mode": f"ortools:{args.solver}",
            "optimum": optimum, "ms": ms, "proved": solver.is_solution_optimal(),
            "feasible": weight <= capacity and sum(profits[i] for i in taken) == optimum,
        }), flush=True)


if __name__ == "__main__":
    main()
