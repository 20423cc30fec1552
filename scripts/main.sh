#!/usr/bin/env bash
# The main job on the default OpenCL device (ASYM_DEVICE picks another). Until the batch
# k-selection example lands, that is the `devices` example: every device's profile, then SVM
# round trips and latency per transport on the selected one. Extra arguments go to the example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec cargo run --release --example devices -- "$@"
