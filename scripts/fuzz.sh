#!/usr/bin/env bash
# Fuzzes every reader of what users give (.npy, DIMACS, Matrix Market, knapsack text, the
# list seed's files, the tree's files) with cargo-fuzz (libFuzzer + AddressSanitizer), each
# for --minutes (default 10), one after another, and prints each target's inputs run and
# crashes. Installs the nightly toolchain and cargo-fuzz where missing. Not part of CI.
#   bash scripts/fuzz.sh                       # every target, 10 minutes each
#   bash scripts/fuzz.sh --minutes 1 npy dimacs
# A crash leaves its input in fuzz/artifacts/TARGET/; turn it into a regression test beside
# the reader's own tests, then fix the reader.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
minutes=10
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ! [[ "$minutes" =~ ^[0-9]+$ ]] || [ "$minutes" -lt 1 ]; then
  echo "fuzz.sh: --minutes $minutes: expected a whole number of minutes, at least 1" >&2
  exit 2
fi
[ ${#targets[@]} -gt 0 ] || targets=(npy dimacs matrix_market knapsack_text list_files tree_files)
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
seconds=$((minutes * 60))
status=0
printf '%-15s %12s %10s %8s\n' target inputs seconds crashes
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  log="fuzz/artifacts/$t/last-run.log"
  # -rss_limit_mb above the readers' own budget (ASYM_MEMORY_LIMIT_MB=512 in the targets).
  if (cd fuzz && cargo +nightly fuzz run "$t" -- -max_total_time="$seconds" \
        -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1) >"$log" 2>&1; then
    crashes=0
  else
    crashes=$(find "fuzz/artifacts/$t" -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' | wc -l)
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  printf '%-15s %12s %10s %8s\n' "$t" "${runs:-?}" "$seconds" "$crashes"
done
exit $status
