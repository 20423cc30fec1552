#!/usr/bin/env bash
# SSSP against GAP's delta-stepping (github.com/sbeamer/gapbs) on the same graphs, same run:
# the road-like geometric graph of 4,194,304 vertices in both numberings asym searches (the
# generator's, and breadth-first from the source, asym's default: asym writes each as a
# DIMACS .gr file, GAP converts it to its binary form and starts from the same source) and a
# Kronecker graph of scale 22 (GAP its own generator's, weights 1..255 as asym's).
#
#   bash scripts/sssp-vs-gap.sh GAPDIR [BINDIR] [OUTDIR] [-- extra sssp flags]
#
# GAPDIR holds GAP's built `sssp` and `converter` (built elsewhere, for example
#   g++ -std=c++11 -O3 -fopenmp -static src/sssp.cc -o sssp   (and converter.cc)
# for a machine without a compiler); BINDIR the asym binaries (default target/release);
# OUTDIR gets geo.jsonl, kron.jsonl, the delta sweeps and gap.txt. GAP runs 8 trials per
# width with OMP_NUM_THREADS = the machine's cores; asym's rows use --threads the same.
set -euo pipefail
gap=${1:?GAP directory with sssp and converter}
bin=${2:-target/release}
out=${3:-/tmp/sssp-vs-gap}
shift $(( $# < 3 ? $# : 3 ))
[[ ${1:-} == -- ]] && shift
cores=$(nproc)
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$out/gap.txt"
"$bin/sssp" --threads "$cores" --mode all --gen geo --n 4194304 --save-graph "$tmp/geo-bfs.gr" --save-graph-order searched --json "$@" >"$out/geo.jsonl"
"$bin/sssp" --threads "$cores" --mode all --gen geo --n 4194304 --vertex-order given --save-graph "$tmp/geo.gr" --json "$@" >>"$out/geo.jsonl"
delta=$(grep '"order":"delta"' "$out/geo.jsonl" | head -1 | grep -o '"delta":[0-9]*' | cut -d: -f2)
for numbering in bfs given; do
  row=$(grep "\"vertex_order\":\"$numbering\"" "$out/geo.jsonl" | head -1)
  source=$(grep -o '"source_searched":[0-9]*' <<<"$row" | cut -d: -f2)
  file=$tmp/geo.gr
  [[ $numbering == bfs ]] && file=$tmp/geo-bfs.gr
  "$gap/converter" -f "$file" -wb "$tmp/geo.wsg" >/dev/null
  # Half, once and twice asym's automatic width (GAP at each; asym's own rows are at 1x).
  for m in 1 2 4; do
    d=$((delta * m / 2))
    echo "== gap geo ($numbering numbering) delta $d" >>"$out/gap.txt"
    OMP_NUM_THREADS=$cores "$gap/sssp" -f "$tmp/geo.wsg" -r $((source - 1)) -n 8 -d $d >>"$out/gap.txt"
    if ((m != 2)); then
      "$bin/sssp" --threads "$cores" --mode cpu,gpu --gen geo --n 4194304 --vertex-order "$numbering" --delta $d --json "$@" >>"$out/geo-sweep.jsonl"
    fi
  done
done
"$bin/sssp" --threads "$cores" --mode all --scale 22 --json "$@" >"$out/kron.jsonl"
"$bin/sssp" --threads "$cores" --mode all --scale 22 --vertex-order given --json "$@" >>"$out/kron.jsonl"
"$gap/converter" -g 22 -wb "$tmp/kron.wsg" >/dev/null
for d in 1 2 4; do
  echo "== gap kron delta $d" >>"$out/gap.txt"
  OMP_NUM_THREADS=$cores "$gap/sssp" -f "$tmp/kron.wsg" -n 8 -d $d >>"$out/gap.txt"
done
for d in 2048 8192; do
  "$bin/sssp" --threads "$cores" --mode cpu,gpu --scale 22 --delta $d --json "$@" >>"$out/kron-sweep.jsonl"
done
grep -E "==|Average" "$out/gap.txt"
