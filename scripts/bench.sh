#!/usr/bin/env bash
# Every benchmark behind docs/benchmarks/, one command per figure set.
#
#   bash scripts/bench.sh                 # quick: the dev machine's sizes, the default device
#   bash scripts/bench.sh --full          # full: the GPU machine's sizes (see scripts/gpu-bundle.sh)
#   bash scripts/bench.sh --only kselect,heap --device nvidia --machine h200
#
# Workloads: kselect, heap, sssp, knapsack, list, arena, runtime (default: all), and sets
# (only when named: a device set, `--device` a list such as nvidia,nvidia; k-selection with
# resident keys and the heap's bulk sort first, at 2^30 and 2^29 keys, then every strategy
# from host memory at 2^28 and 2^30; about 12 minutes on two H100s). Each writes
# docs/results/<workload>-<machine>-<date>.jsonl (arena: criterion's text, .txt): `# ` lines
# say the machine, commit, date
# and the command of the rows that follow; the rows are the examples' own `--json` output,
# each answer verified by the example (a run that differs from its reference fails the
# script). Then the plots are redrawn from those files when matplotlib is installed
# (`bash scripts/bench.sh --plots-only` redraws them from the newest files alone).
#
# Options: --quick (default) | --full; --device NAME (ASYM_DEVICE); --machine LABEL (default:
# the GPU's model, such as h200, else dev); --threads N (latency threads); --bin DIR (prebuilt
# example binaries, as the GPU bundle carries; default: build them with cargo); --out DIR
# (default docs/results); --only LIST; --plots-only; --bgpq DIR (the heap's CUDA peer: a
# folder with BGPQ's prebuilt synthetic/BGPQ_T and BGPQ_B from ruadapt/BGPQ; with --full the
# heap workload runs them beside the device heap's operations into heap-vs-bgpq-*.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

machine_given="" size=quick device="" machine="" threads="" bin="" out=docs/results only="" plots_only=0 bgpq=""
while (($#)); do
  case "$1" in
    --quick) size=quick ;;
    --full) size=full ;;
    --device) device=$2; shift ;;
    --machine) machine=$2; machine_given=$2; shift ;;
    --threads) threads=$2; shift ;;
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --only) only=$2; shift ;;
    --plots-only) plots_only=1 ;;
    --bgpq) bgpq=$2; shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
workloads=(kselect heap sssp knapsack list arena runtime)
if [[ -n $only ]]; then
  IFS=, read -r -a chosen <<<"$only"
  for w in "${chosen[@]}"; do
    [[ " ${workloads[*]} sets " == *" $w "* ]] || { echo "bench.sh: --only $w: expected ${workloads[*]} sets" >&2; exit 2; }
    [[ $w != sets || $device == *,* || $device == all ]] || { echo "bench.sh: --only sets needs --device LIST (for example nvidia,nvidia)" >&2; exit 2; }
  done
  workloads=("${chosen[@]}")
fi

# NVIDIA's OpenCL driver registered where only PoCL is listed.
source scripts/nvidia-icd.sh
register_nvidia_icd bench.sh

if [[ -z $machine ]]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
  case "$gpu" in
    *H200*) machine=h200 ;;
    *H100*) machine=h100 ;;
    "") machine=dev ;;
    *) machine=$(echo "$gpu" | tr 'A-Z ' 'a-z-') ;;
  esac
fi
date=$(date -u +%Y-%m-%d)
if [[ -n $bin && -f $bin/../COMMIT ]]; then commit=$(cat "$bin/../COMMIT"); else commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown); fi
mkdir -p "$out"

plots() {
  if ! python3 -c 'import matplotlib' 2>/dev/null; then
    echo "bench.sh: matplotlib is missing, plots not redrawn (pip install matplotlib)" >&2
    return 0
  fi
  # The newest file of each workload, for the machine of this run (or any, with --plots-only).
  newest() { ls -t "$out"/"$1"-${machine:+$machine-}*.jsonl 2>/dev/null | head -1; }
  # docs/<workload>-<machine>.png, the machine read from the file's name.
  png() { local m; m=$(basename "$2" .jsonl); m=${m#"$1"-}; echo "docs/$1-${m%-????-??-??}.png"; }
  local f
  f=$(newest kselect) && [[ -n $f ]] && python3 docs/plot_kselect.py "$(png kselect "$f")" "batch k-selection ($(basename "$f" .jsonl))" "$f"
  f=$(newest heap) && [[ -n $f ]] && python3 docs/plot_heap_bulk.py "$(png heap "$f")" "$f" "$f"
  f=$(newest sssp) && [[ -n $f ]] && python3 docs/plot_sssp.py "$(png sssp "$f")" "$f"
  f=$(newest list) && [[ -n $f ]] && python3 docs/plot_list.py "$(png list "$f")" "$f"
  f=$(newest rbtree-updates) && [[ -n $f ]] && python3 docs/plot_rbtree.py "$(png rbtree-updates "$f")" "$f"
  echo "bench.sh: plots redrawn in docs/ from the newest files of $out"
}
if ((plots_only)); then machine=${machine_given:-}; plots; exit 0; fi

if [[ -z $bin ]]; then
  bash scripts/setup.sh
  cargo build --release --bins
  bin=target/release
fi
dev_args=()
[[ -n $device ]] && dev_args=(--device "$device")
thr_args=()
[[ -n $threads ]] && thr_args=(--threads "$threads")

# run FILE EXAMPLE ARGS...: appends the command and its JSON rows to FILE.
run() {
  local file=$1 example=$2
  shift 2
  echo "# {\"machine\": \"$machine\", \"commit\": \"$commit\", \"date\": \"$date\", \"command\": \"$example $*\"}" >>"$file"
  echo "bench.sh: $example $*" >&2
  "$bin/$example" "$@" --json >>"$file"
}
full() { [[ $size == full ]]; }

for w in "${workloads[@]}"; do
  file="$out/$w-$machine-$date.jsonl"
  [[ $w == arena ]] && file="$out/$w-$machine-$date.txt"
  : >"$file"
  case "$w" in
    kselect)
      if full; then run "$file" batch_kselect "${dev_args[@]}" --resident --total-log2 28 --repeat 5
      else run "$file" batch_kselect "${dev_args[@]}" --resident --total-log2 22 --repeat 3; fi
      # The GPU peer, torch.kthvalue/topk on the same keys resident on the GPU, where torch
      # and CUDA are installed; asym's resident radix and the CPU on the same file beside it.
      if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
        keys=$(mktemp -d)/keys.npy
        log2=$(full && echo 28 || echo 22)
        python3 scripts/torch_topk.py --write "$keys" --total-log2 "$log2"
        echo "# {\"machine\": \"$machine\", \"commit\": \"$commit\", \"date\": \"$date\", \"command\": \"torch_topk.py keys.npy (2^$log2 int32)\"}" >>"$file"
        python3 scripts/torch_topk.py "$keys" >>"$file"
        for e in 11 13 15 17 19 21; do
          run "$file" batch_kselect "${dev_args[@]}" --input "$keys" --sublist $((1 << e)) --resident --mode cpu --strategy auto --repeat 5
        done
        rm -rf "$(dirname "$keys")"
      fi ;;
    heap)
      # Every mode and peer, insert all then delete all of random keys; then where the bulk
      # calls take over (one insert and one delete call of growing size on a preloaded heap).
      if full; then
        shape=(--work-groups 33 --work-group 1024)
        run "$file" heap_bench "${dev_args[@]}" "${thr_args[@]}" "${shape[@]}" --mode cpu,gpu,coop --insert both --bulk both --keys-log2 26 --pattern random
        run "$file" heap_bench "${dev_args[@]}" "${shape[@]}" --mode gpu --no-peers --pattern random --insert td --key i32 --keys-log2 26 --batch 1024,2048 --bulk never,auto
        # The seed's operations in range lanes of the device (each lane's default shape).
        run "$file" heap_bench "${dev_args[@]}" --mode gpu --no-peers --pattern random --insert td --key i32 --keys-log2 26 --batch 1024,2048 --bulk never --lanes 8,16
        run "$file" heap_bench "${dev_args[@]}" "${shape[@]}" --mode gpu --no-peers --pattern random --insert td --key i32 --keys-log2 29 --batch 2048 --bulk auto
        run "$file" heap_bench "${dev_args[@]}" --mode gpu --no-peers --pattern random --insert td --key i32 --keys-log2 29 --batch 1024,2048 --bulk never --lanes 8,16
        for l in 15 17 19 21; do
          run "$file" heap_bench "${dev_args[@]}" "${shape[@]}" --mode gpu --no-peers --pattern random --insert td --batch 1024 --keys-log2 $l --preload 16777216 --bulk never,auto
        done
        # The seed's operations against BGPQ's CUDA heap (its CSV lines: name, test, key
        # pattern, keys, insert ms, delete ms, total ms), each three times, same machine.
        if [[ -n $bgpq ]]; then
          vs="$out/heap-vs-bgpq-$machine-$date.txt"
          echo "# machine $machine, commit $commit, date $date; BGPQ: $bgpq/BGPQ_T and BGPQ_B (CUDA, K = 1024, 32 blocks of 512), './BGPQ_X 0 0 64 0' = insert 64e6 random keys then delete them, ms; asym: the heap_bench rows below" >"$vs"
          for _ in 1 2 3; do
            for b in BGPQ_T BGPQ_B; do (cd "$bgpq" && "./$b" 0 0 64 0) >>"$vs" || echo "# $b failed (exit $?)" >>"$vs"; done
          done
          run "$vs" heap_bench "${dev_args[@]}" --mode gpu --bulk never --key i32 --keys-log2 26 --batch 1024,2048 --insert both --lanes 8,16 --no-peers --pattern random
        fi
      else
        run "$file" heap_bench "${dev_args[@]}" "${thr_args[@]}" --mode cpu,gpu,coop --insert both --bulk both --keys-log2 18 --batch 256 --pattern random
        for l in 10 12 14; do
          run "$file" heap_bench "${dev_args[@]}" --mode gpu --no-peers --pattern random --insert td --batch 256 --keys-log2 $l --preload 262144 --bulk never,auto
        done
      fi ;;
    sets)
      # One device alone beside the set in every run (rows gpu@i); the heap's steps on stderr.
      for l in 30 28; do
        run "$file" batch_kselect "${dev_args[@]}" "${thr_args[@]}" --total-log2 $l --mode gpu --strategy radix --resident --repeat 5 --no-peers
      done
      for l in 30 29; do
        run "$file" heap_bench "${dev_args[@]}" --mode gpu --bulk auto --key i32 --keys-log2 $l --batch 1024 --pattern random --no-peers --trace 2>>"$out/$w-$machine-$date.trace"
      done
      for l in 28 30; do
        run "$file" batch_kselect "${dev_args[@]}" "${thr_args[@]}" --total-log2 $l --mode cpu,gpu,coop --strategy all --resident --repeat 5 --no-peers
      done ;;
    sssp)
      if full; then
        run "$file" sssp "${dev_args[@]}" "${thr_args[@]}" --mode all --scale 22 --repeat 5
        run "$file" sssp "${dev_args[@]}" "${thr_args[@]}" --mode all --gen geo --n 4194304 --repeat 5
      else
        run "$file" sssp "${dev_args[@]}" "${thr_args[@]}" --mode all --scale 16 --repeat 5
        run "$file" sssp "${dev_args[@]}" "${thr_args[@]}" --mode all --gen geo --n 65536 --repeat 5
      fi ;;
    knapsack)
      # Pisinger's classes too large for dynamic programming (n = 10^4, R = 10^7), three
      # seeds, every branch-and-bound mode; OR-Tools' solver on the same files where it is
      # installed (pip install ortools), with the same time limit.
      limit=$(full && echo 10 || echo 3)
      instances=$(mktemp -d)
      for s in 42 1 2; do
        run "$file" knapsack "${dev_args[@]}" "${thr_args[@]}" --method bnb --gen all --n 10000 \
          --range 10000000 --seed $s --time-limit $limit --save-instances "$instances"
      done
      if python3 -c 'import ortools' 2>/dev/null; then
        echo "# {\"machine\": \"$machine\", \"commit\": \"$commit\", \"date\": \"$date\", \"command\": \"knapsack_ortools.py (the same instances) --time-limit $limit\"}" >>"$file"
        python3 scripts/knapsack_ortools.py "$instances"/*.data --time-limit $limit >>"$file"
      fi
      rm -rf "$instances" ;;
    list)
      run "$file" list_ops "${dev_args[@]}" "${thr_args[@]}" --repeat 3
      if full; then
        run "$file" list_ops "${dev_args[@]}" "${thr_args[@]}" --initial 40000 --repeat 2
        for t in 1 2 4 8; do run "$file" list_ops "${dev_args[@]}" --mode cpu --threads $t --repeat 2; done
      fi ;;
    arena)
      # The allocator's malloc/free throughput from a kernel (criterion), by free-list shards.
      echo "# {\"machine\": \"$machine\", \"commit\": \"$commit\", \"date\": \"$date\", \"command\": \"ASYM_BENCH_SHARDS=16,64,256 bench list arena\"}" >>"$file"
      echo "bench.sh: criterion bench list arena" >&2
      if [[ -x $bin/bench-list ]]; then
        ASYM_DEVICE=${device:-${ASYM_DEVICE:-}} ASYM_BENCH_SHARDS=16,64,256 "$bin/bench-list" --bench arena >>"$file" 2>&1
      else
        ASYM_DEVICE=${device:-${ASYM_DEVICE:-}} ASYM_BENCH_SHARDS=16,64,256 cargo bench --bench list -- arena >>"$file" 2>&1
      fi ;;
    runtime)
      run "$file" devices "${dev_args[@]}" ;;
  esac
done
plots
echo "bench.sh: results in $out/*-$machine-$date.jsonl"
