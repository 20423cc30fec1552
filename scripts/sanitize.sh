#!/usr/bin/env bash
# ThreadSanitizer over what threads share on the host: the latency pool and its barrier,
# the host signal queues, the ring protocol (on host words and on a PoCL SVM ring), fault
# injection's counters, the generalized heap shared by threads and the pure structures.
# The standard library is rebuilt instrumented (-Zbuild-std); PoCL's own threads are not
# instrumented, so accesses they make are invisible to it (ring tests check the protocol on
# host words too). Installs the nightly toolchain and rust-src where missing. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup component list --toolchain nightly --installed | grep -q '^rust-src' ||
  rustup component add rust-src --toolchain nightly
target="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Zsanitizer=thread" RUSTDOCFLAGS="-Zsanitizer=thread"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export CARGO_TARGET_DIR=target/tsan
run() { cargo +nightly test -Zbuild-std --target "$target" "$@"; }
run -p asym-runtime --lib -- signal faults latency backoff
run -p asym-runtime --test latency --test ring_model
run -p asym-structures --test pure --test gheap_concurrent
