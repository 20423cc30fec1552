#!/usr/bin/env bash
# Compares criterion bench binaries built from different commits on one machine: passes in
# turn (A, B, ..., then A, B, ... again), so every pass sees the machine at about the same
# moment (the lent GPU machines differ by up to 10 % from one start to the next, more than
# most changes are worth). Prints each bench's median of every pass, binary by binary.
#
#   bash scripts/bench-ab.sh [--passes N] [--out DIR] FILTER NAME=BINARY...
#
# FILTER is criterion's (a regex of bench ids); NAME=BINARY a label and a bench binary
# (target/release/deps/<bench>-<hash>, or .gpu/bin/bench-<bench> as gpu-bundle.sh stages
# them). The bench's own environment passes through (ASYM_BENCH_LOG2, ASYM_DEVICE, ...).
# DIR (default /tmp/bench-ab) gets NAME.txt, criterion's lines of each pass. Registers
# NVIDIA's OpenCL driver with the ICD loader where only PoCL is listed.
#
# Example (GPU machine, the tree's updates at 2^26 keys, three passes):
#   ASYM_DEVICE=nvidia ASYM_BENCH_LOG2=26 ASYM_BENCH_BATCH_LOG2=20,22 bash scripts/bench-ab.sh \
#     'rbtree_(insert|delete)_2\^26_keys/gpu_resident' base=.gpu/bin/bench-rbtree-base new=.gpu/bin/bench-rbtree
set -euo pipefail
cd "$(dirname "$0")/.."
passes=3
out=/tmp/bench-ab
while [[ ${1:-} == --* ]]; do
    case $1 in
        --passes) passes=${2:?--passes N}; shift 2 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        *) echo "bench-ab: unknown flag $1" >&2; exit 2 ;;
    esac
done
filter=${1:?usage: bench-ab.sh [--passes N] [--out DIR] FILTER NAME=BINARY...}
shift
(($# >= 1)) || { echo "bench-ab: name at least one NAME=BINARY" >&2; exit 2; }
names=()
for arg in "$@"; do
    name=${arg%%=*}
    bin=${arg#*=}
    [[ $name != "$arg" && -n $name ]] || { echo "bench-ab: $arg is not NAME=BINARY" >&2; exit 2; }
    [[ -x $bin ]] || { echo "bench-ab: $bin is not an executable" >&2; exit 2; }
    names+=("$name")
done
mkdir -p "$out"
for name in "${names[@]}"; do : >"$out/$name.txt"; done
source scripts/nvidia-icd.sh
register_nvidia_icd bench-ab.sh
for ((pass = 1; pass <= passes; pass++)); do
    for arg in "$@"; do
        name=${arg%%=*}
        echo "bench-ab: pass $pass of $passes, $name" >&2
        echo "== pass $pass" >>"$out/$name.txt"
        # (criterion's change lines against its last run also read "time:", in %)
        "${arg#*=}" --bench "$filter" 2>&1 | grep -E "^[A-Za-z_0-9^/.-]+$|time:" |
            grep -v "%" >>"$out/$name.txt" || {
            echo "bench-ab: $name found no bench matching $filter, or failed" >&2
            exit 1
        }
    done
done
python3 - "$out" "${names[@]}" <<'PY'
import re, sys
out, names = sys.argv[1], sys.argv[2:]
medians = {}  # bench id -> name -> [median per pass]
units = {"ps": 1e-9, "ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}
for name in names:
    bench = None
    for line in open(f"{out}/{name}.txt"):
        line = line.strip()
        m = re.search(r"time:\s*\[\S+ \S+ (\S+) (\S+)", line)
        if m and line.split("time:")[0].strip():  # a short id shares the line
            bench = line.split("time:")[0].strip()
        if m and bench:
            ms = float(m.group(1)) * units[m.group(2)]
            medians.setdefault(bench, {}).setdefault(name, []).append(ms)
        elif line and not line.startswith("=="):
            bench = line.split()[0]
width = max([len(b) for b in medians] + [5])
print(f"{'bench':{width}}  " + "  ".join(f"{n + ' (ms, by pass)':>28}" for n in names))
for bench, by_name in medians.items():
    cells = [" ".join(f"{v:.4g}" for v in by_name.get(n, [])) for n in names]
    print(f"{bench:{width}}  " + "  ".join(f"{c:>28}" for c in cells))
PY
