#!/usr/bin/env bash
# SSSP over MPI ranks on one host, strong scaling, beside Graph500's reference MPI SSSP: the
# same Kronecker scale and edge factor searched by one host's sssp (its delta-stepping row)
# and by sssp under `mpirun -np N`, and Graph500's `graph500_reference_bfs_sssp` on N ranks
# and on one rank per core (its design: flat MPI, one process per core).
#
#   bash scripts/sssp-ranks.sh [BINDIR] [OUT.jsonl]
#
# BINDIR holds sssp built with `--features mpi` (default target/release). Settings by
# environment: RANKS ("1 2 4"), SCALE (20), EDGE_FACTOR (16), THREADS (latency threads per
# rank, default the cores over the largest rank count), MODE (cpu; gpu: each rank its
# device), REPEAT (5 searches per row), EXTRA (more sssp flags, e.g. "--device nvidia"),
# GRAPH500 (graph500_reference_bfs_sssp, see scripts/build-graph500.sh; left out if unset).
# Graph500 searches from 64 roots (BFS skipped, validation off) and reports their mean and
# median; asym searches from the graph's hub. The graphs are the same recursion at the same
# size, not the same edges: Graph500 draws its own, with float weights in [0, 1).
set -euo pipefail
bin=${1:-target/release}
out=${2:-/tmp/sssp-ranks.jsonl}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
ranks=${RANKS:-1 2 4}
scale=${SCALE:-20}
ef=${EDGE_FACTOR:-16}
cores=$(nproc)
largest=$(tr ' ' '\n' <<<"$ranks" | sort -n | tail -1)
threads=${THREADS:-$((cores / largest > 0 ? cores / largest : 1))}
mode=${MODE:-cpu}
# shellcheck disable=SC2206
extra=(${EXTRA:-})
common=(--scale "$scale" --edge-factor "$ef" --repeat "${REPEAT:-5}" --json "${extra[@]}")
: >"$out"
for n in $ranks; do
  if ((n == 1)); then
    "$bin/sssp" "${common[@]}" --mode "$mode" --threads $((threads * largest)) |
      grep '"order":"delta"' | sed "s/^{/{\"ranks\":1,\"threads_total\":$((threads * largest)),/" >>"$out"
  else
    mpirun --oversubscribe --bind-to none -np "$n" "$bin/sssp" "${common[@]}" --mode "$mode" \
      --threads "$threads" | sed "s/^{/{\"threads_total\":$((n * threads)),/" >>"$out"
  fi
done
if [[ -n ${GRAPH500:-} ]]; then
  for n in $(printf '%s\n' $ranks "$cores" | sort -un); do
    log=$(SKIP_BFS=1 SKIP_VALIDATION=1 mpirun --oversubscribe --bind-to none -np "$n" \
      "$GRAPH500" "$scale" "$ef" 2>&1)
    # The summary's lines (the first lines repeat some with a unit after the number).
    field() { awk -v k="$1" 'index($0, k) == 1 && $NF + 0 == $NF {v = $NF} END {print v}' <<<"$log"; }
    printf '{"peer":"graph500","ranks":%s,"threads_total":%s,"scale":%s,"edge_factor":%s,"mean_ms":%s,"ms":%s,"teps":%s,"construction_s":%s}\n' \
      "$n" "$n" "$scale" "$ef" "$(field 'sssp mean_time:')" "$(field 'sssp median_time:')" \
      "$(field 'sssp harmonic_mean_TEPS')" "$(field 'construction_time:')" |
      python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); r["mean_ms"]*=1e3; r["ms"]*=1e3; print(json.dumps(r))' >>"$out"
  done
fi
python3 - "$out" <<'PY'
import json, sys
print(f"{'what':<22}{'ranks':>6}{'threads':>8}{'ms':>10}{'phases':>8}{'sent':>12}  verified")
for l in open(sys.argv[1]):
    r = json.loads(l)
    what = "graph500 reference" if r.get("peer") else f"asym {r['mode']}"
    print(f"{what:<22}{r['ranks']:>6}{r['threads_total']:>8}{r['ms']:>10.2f}"
          f"{r.get('phases', r.get('buckets', '-')):>8}{r.get('sent', '-'):>12}  {r.get('verified', '-')}")
PY
