#!/usr/bin/env bash
# The heap over MPI ranks on one host, strong scaling: the same total keys inserted then
# deleted in batches on 1 rank (one host's heap_bench, its rows and its peers) and on N ranks
# (the heap's key ranges across ranks, and the sample sort).
#
#   bash scripts/heap-ranks.sh [BINDIR] [OUT.jsonl]
#
# BINDIR holds heap_bench built with `--features mpi` (default target/release). Settings by
# environment: RANKS ("1 2 4"), KEYS_LOG2 (22), THREADS (1: latency threads per rank; one
# host runs with the threads of all the ranks), MODE (cpu), BATCH (1024), PATTERN (random),
# EXTRA (more flags, e.g. "--device nvidia"). Rows are tagged with "ranks".
set -euo pipefail
bin=${1:-target/release}
out=${2:-/tmp/heap-ranks.jsonl}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
# shellcheck disable=SC2206
extra=(${EXTRA:-})
threads=${THREADS:-1}
common=(--keys-log2 "${KEYS_LOG2:-22}" --batch "${BATCH:-1024}" --mode "${MODE:-cpu}"
  --pattern "${PATTERN:-random}" --json "${extra[@]}")
: >"$out"
for n in ${RANKS:-1 2 4}; do
  if ((n == 1)); then
    for t in $(for r in ${RANKS:-1 2 4}; do echo $((r * threads)); done | sort -un); do
      "$bin/heap_bench" "${common[@]}" --threads "$t" | sed "s/^{/{\"ranks\":1,\"threads_total\":$t,/" >>"$out"
    done
  else
    mpirun --oversubscribe --bind-to none -np "$n" "$bin/heap_bench" "${common[@]}" --threads "$threads" |
      sed "s/^{/{\"threads_total\":$((n * threads)),/" >>"$out"
  fi
done
python3 - "$out" <<'PY'
import json, sys
print(f"{'ranks':>5} {'threads':>7}  {'heap':<22}{'insert ms':>10}{'delete ms':>10}{'total ms':>10}  verified")
for l in open(sys.argv[1]):
    r = json.loads(l)
    total = r.get("total_ms", r.get("ms", 0))
    print(f"{r['ranks']:>5} {r['threads_total']:>7}  {r['mode']:<22}{r['insert_ms']:>10.2f}{r['delete_ms']:>10.2f}{total:>10.2f}  {r['verified']}")
PY
