#!/usr/bin/env bash
# Packs what scripts/build-gardenia-peer.sh compiles of Gardenia (github.com/chenxuhao/gardenia)
# into one tarball for the GPU machine, which has no network: its GPU SSSP solvers
# (src/sssp/linear_lb.cu, linear_base.cu, topo_lb.cu, dstep.cu) and the headers they include
# (include/worklistc.h, timer.h, cutil_subset.h, gbar.h, cuda_launch_config.hpp).
#   bash scripts/pack-gardenia.sh GARDENIA_CHECKOUT OUT.tar.gz
# A git checkout is packed at its HEAD (the commit is printed and packed as COMMIT).
set -euo pipefail
src=${1:?usage: pack-gardenia.sh GARDENIA_CHECKOUT OUT.tar.gz}
out=${2:?usage: pack-gardenia.sh GARDENIA_CHECKOUT OUT.tar.gz}
parts=(src/sssp/linear_lb.cu src/sssp/linear_base.cu src/sssp/topo_lb.cu src/sssp/dstep.cu
    include/worklistc.h include/timer.h include/cutil_subset.h include/gbar.h
    include/cuda_launch_config.hpp)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
    git -C "$src" archive --format=tar HEAD "${parts[@]}" | tar -x -C "$tmp"
    git -C "$src" rev-parse HEAD > "$tmp/COMMIT"
else
    (cd "$src" && cp --parents "${parts[@]}" "$tmp/")
    echo unknown > "$tmp/COMMIT"
fi
tar -czf "$out" -C "$tmp" .
echo "pack-gardenia: $(cat "$tmp/COMMIT") -> $out" >&2
