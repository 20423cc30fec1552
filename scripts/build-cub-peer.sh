#!/usr/bin/env bash
# Builds the CUB peer of batch k-selection (scripts/peers/cub_kselect.cu) on the GPU machine,
# which has CUDA's nvcc and CCCL's headers (CUB); this machine has neither. Run there from a
# copy of the working tree:
#   bash scripts/build-cub-peer.sh OUTDIR        # writes OUTDIR/cub_kselect
# NVCC (default nvcc, else /usr/local/cuda/bin/nvcc) and ARCH (default sm_90: H100, H200) can
# be set.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: build-cub-peer.sh OUTDIR}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "build-cub-peer: no nvcc (set NVCC=/path/to/nvcc)" >&2; exit 1; }
mkdir -p "$out"
"$nvcc" -O3 -std=c++17 -arch="${ARCH:-sm_90}" -o "$out/cub_kselect" scripts/peers/cub_kselect.cu
"$nvcc" --version | tail -1 >&2
