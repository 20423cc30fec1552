#!/usr/bin/env bash
# Packs the headers of a checkout of github.com/NVIDIA/cccl (cub/, thrust/,
# libcudacxx/include/) into one tarball for the GPU machine, which has no network:
#   bash scripts/pack-cccl.sh CCCL_CHECKOUT OUT.tar.gz
# then there: CCCL=OUT.tar.gz bash scripts/build-cub-peer.sh OUTDIR. A git checkout is
# packed at its HEAD (the commit is printed); any other directory as it is.
set -euo pipefail
src=${1:?usage: pack-cccl.sh CCCL_CHECKOUT OUT.tar.gz}
out=${2:?usage: pack-cccl.sh CCCL_CHECKOUT OUT.tar.gz}
parts=(cub/cub thrust/thrust libcudacxx/include)
if git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
    git -C "$src" archive --format=tar HEAD "${parts[@]}" | gzip -9 > "$out"
    echo "pack-cccl: $(git -C "$src" rev-parse HEAD) -> $out" >&2
else
    tar -czf "$out" -C "$src" "${parts[@]}"
fi
