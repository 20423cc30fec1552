#!/usr/bin/env bash
# Builds the CUDA peers of batch k-selection (scripts/peers/) on the GPU machine, which has
# CUDA's nvcc and CCCL's headers; this machine has neither. Run there from a copy of the
# working tree:
#   bash scripts/build-cub-peer.sh OUTDIR
#     OUTDIR/cub_kselect        CUB's segmented sorts + a gather (the toolkit's own CCCL)
#     OUTDIR/cub_batched_topk   CUB's DeviceBatchedTopK, only when CCCL is set (below)
# CCCL: a checkout (or the tarball scripts/pack-cccl.sh makes) of github.com/NVIDIA/cccl
# whose cub/, thrust/ and libcudacxx/include/ are newer than the toolkit's: DeviceBatchedTopK
# first appears in CCCL 3.5 (CUDA 13.5). NVCC (default nvcc, else /usr/local/cuda/bin/nvcc)
# and ARCH (default sm_90: H100, H200) can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: build-cub-peer.sh OUTDIR}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "build-cub-peer: no nvcc (set NVCC=/path/to/nvcc)" >&2; exit 1; }
arch=${ARCH:-sm_90}
mkdir -p "$out"
"$nvcc" -O3 -std=c++17 -arch="$arch" -o "$out/cub_kselect" scripts/peers/cub_kselect.cu
if [[ -n ${CCCL:-} ]]; then
    if [[ -f $CCCL ]]; then # a tarball from scripts/pack-cccl.sh
        dir=$out/cccl
        mkdir -p "$dir" && tar -xzf "$CCCL" -C "$dir"
    else
        dir=$CCCL
    fi
    "$nvcc" -O3 -std=c++20 -arch="$arch" --expt-relaxed-constexpr --extended-lambda \
        -I"$dir/cub" -I"$dir/thrust" -I"$dir/libcudacxx/include" \
        -o "$out/cub_batched_topk" scripts/peers/cub_batched_topk.cu
fi
"$nvcc" --version | tail -1 >&2
