#!/usr/bin/env bash
# Miri over the pure-Rust structures: the d-heap, k-selection's host select and MSD radix
# digits, the generalized heap alone and shared by threads (structures/tests/pure.rs and the
# unit tests of those modules). Miri interprets every access and reports undefined behaviour
# and data races; nothing here calls OpenCL (Miri cannot call C). Installs the nightly
# toolchain's miri where missing. Not part of CI (minutes of interpretation).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup component list --toolchain nightly --installed | grep -q '^miri' ||
  rustup component add miri rust-src --toolchain nightly
cargo +nightly miri setup
cargo +nightly miri test -p asym-structures --test pure
# The radix window test selects in 2^18 keys (its sample needs them): hours under Miri.
cargo +nightly miri test -p asym-structures --lib -- kselect::radix gheap::batch kselect::learned \
  --skip one_read_selection
