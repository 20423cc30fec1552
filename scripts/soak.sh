#!/usr/bin/env bash
# The soak: every structure under mixed batches for a bounded time (default 10 minutes), with
# a device failure injected at a random step of half the batches, each structure checked
# against a host model after every batch; prints operations done, failures injected,
# failures survived and keys lost (must be 0). Exit 0 when nothing was lost.
#   bash scripts/soak.sh                    # 10 minutes on the default device
#   bash scripts/soak.sh --minutes 2 --json
#   bash scripts/soak.sh --device nvidia    # on the GPU machine
# PoCL lists two devices for the set structures unless POCL_DEVICES says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export POCL_DEVICES="${POCL_DEVICES:-pthread pthread}"
exec cargo run --release --bin soak -- "$@"
