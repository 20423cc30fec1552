#!/usr/bin/env bash
# The main job: batch k-selection on the default OpenCL device (ASYM_DEVICE or --device picks
# another): 2^22 random int32 keys, sub-lists of 2^11..2^21, k = 0.1 · length, every mode and
# the peers, each answer checked against select_nth_unstable. Extra arguments go to the example
# (try --help, --json, --total-log2 25, --input keys.npy --sublist 1000 --output kth.npy).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec cargo run --release --bin batch_kselect -- "$@"
