#!/usr/bin/env bash
# Batch k-selection over MPI ranks on one host: weak scaling of both layouts (every rank the
# same keys and latency threads) beside one host's run at each total size (the same keys, with
# as many threads as all the ranks together: the cost of going distributed).
#
#   bash scripts/kselect-ranks.sh [BINDIR] [OUT.jsonl]
#
# BINDIR holds batch_kselect built with `--features mpi` (default target/release). Settings
# by environment: RANKS ("1 2 4"), LOG2_PER_RANK (22: keys per rank), THREADS (1: latency
# threads per rank), MODE (cpu), STRATEGY (radix), SUBLIST (8192: owned rows), SPREAD_ROWS
# (16: rows of the spread layout, each N times longer on N ranks), REPEAT (5), EXTRA (more
# flags of the owned rows, e.g. "--device nvidia --resident"), SPREAD_MODE (cpu: the spread
# rows' mode, and its one-host baseline's), SPREAD_EXTRA (more flags of those), LAYOUTS
# ("owned spread": which layouts run). Prints a table of weak-scaling efficiencies
# (time on 1 rank / time on N ranks) and writes every JSON row to OUT.
set -euo pipefail
bin=${1:-target/release}
out=${2:-/tmp/kselect-ranks.jsonl}
ranks=${RANKS:-1 2 4}
per=${LOG2_PER_RANK:-22}
threads=${THREADS:-1}
mode=${MODE:-cpu}
strategy=${STRATEGY:-radix}
sublist=${SUBLIST:-8192}
spread_rows_log2=$(python3 -c "import math; print(int(math.log2(${SPREAD_ROWS:-16})))")
repeat=${REPEAT:-5}
spread_mode=${SPREAD_MODE:-cpu}
layouts=${LAYOUTS:-owned spread}
# shellcheck disable=SC2206
extra=(${EXTRA:-})
# shellcheck disable=SC2206
spread_extra=(${SPREAD_EXTRA:-})
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
common=(--mode "$mode" --strategy "$strategy" --no-peers --repeat "$repeat" --json "${extra[@]}")
tag() { sed "s/^{/{\"ranks\":$1,\"layout\":\"$2\",\"threads_total\":$3,/"; }
: >"$out"
for n in $ranks; do
  log2n=$(python3 -c "import math; print(int(math.log2($n)))")
  total=$((per + log2n))
  long=$((total - spread_rows_log2))
  # One host, the same total keys, the threads of all the ranks.
  if [[ " $layouts " == *" owned "* ]]; then
    "$bin/batch_kselect" --total-log2 "$total" --sublist "$sublist" --threads $((n * threads)) "${common[@]}" |
      tag 1 one-host $((n * threads)) >>"$out"
    if ((n > 1)); then
      mpirun --oversubscribe --bind-to none -np "$n" "$bin/batch_kselect" --layout owned \
        --total-log2 "$total" --sublist "$sublist" --threads "$threads" "${common[@]}" |
        sed "s/^{/{\"threads_total\":$((n * threads)),/" >>"$out"
    fi
  fi
  if [[ " $layouts " == *" spread "* ]]; then
    spread=(--total-log2 "$total" --sublist $((1 << long)) --mode "$spread_mode" --strategy radix
      --no-peers --repeat "$repeat" --json "${spread_extra[@]}")
    "$bin/batch_kselect" "${spread[@]}" --threads $((n * threads)) | tag 1 one-host-long $((n * threads)) >>"$out"
    if ((n > 1)); then
      mpirun --oversubscribe --bind-to none -np "$n" "$bin/batch_kselect" --layout spread \
        "${spread[@]}" --threads "$threads" | sed "s/^{/{\"threads_total\":$((n * threads)),/" >>"$out"
    fi
  fi
done
python3 - "$out" "$threads" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
t = int(sys.argv[2])
def ms(layout, ranks, mode=None):
    for r in rows:
        if r["layout"] == layout and r["ranks"] == ranks and (mode is None or r["mode"] == mode):
            return r["ms"]
base = {}
for r in rows:
    if r["ranks"] == 1 and r["threads_total"] == t:
        base[(r["layout"], r["mode"])] = r["ms"]
print(f"{'layout':<14}{'mode':<22}{'ranks':>6}{'keys':>12}{'ms':>10}{'Mkeys/s':>10}{'weak eff':>10}{'one host ms':>13}")
for r in rows:
    if r["layout"] in ("one-host", "one-host-long") and r["ranks"] == 1 and r["threads_total"] != t:
        continue
    key = {"owned": "one-host", "spread": "one-host-long"}.get(r["layout"], r["layout"])
    b = base.get((key, r["mode"]))
    eff = f"{b / r['ms']:.2f}" if b else "-"
    same = [x["ms"] for x in rows if x["layout"] == key and x["n"] == r["n"] and x["mode"] == r["mode"] and x["ranks"] == 1 and x["threads_total"] == r["threads_total"]]
    one = f"{same[0]:.2f}" if same and r["layout"] in ("owned", "spread") else "-"
    print(f"{r['layout']:<14}{r['mode']:<22}{r['ranks']:>6}{r['n']:>12}{r['ms']:>10.2f}{r['mkeys_per_s']:>10.1f}{eff:>10}{one:>13}")
PY
