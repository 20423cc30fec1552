#!/usr/bin/env bash
# Builds Gardenia's GPU SSSP solvers (github.com/chenxuhao/gardenia) as peers of asym's device
# SSSP on the GPU machine, which has nvcc; this machine has none. Each solver is linked with
# our driver (scripts/peers/gardenia_sssp.cc: reads asym's DIMACS .gr files with their
# weights, checks every answer against Dijkstra) and our stand-in for its sssp.h
# (scripts/peers/gardenia/sssp.h), one binary per solver:
#   bash scripts/build-gardenia-peer.sh GARDENIA OUTDIR
#     OUTDIR/gardenia_linear_lb    data-driven, one thread per edge (load-balanced)
#     OUTDIR/gardenia_linear_base  data-driven, one thread per vertex
#     OUTDIR/gardenia_topo_lb      topology-driven, one thread per edge
#     OUTDIR/gardenia_dstep        delta-stepping (near and far queues, Davidson et al.)
# GARDENIA: the tarball scripts/pack-gardenia.sh makes, or a checkout. A solver that fails
# to build is reported and skipped. NVCC (default nvcc, else /usr/local/cuda/bin/nvcc) and
# ARCH (default sm_90: H100, H200) can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: build-gardenia-peer.sh GARDENIA OUTDIR}
out=${2:?usage: build-gardenia-peer.sh GARDENIA OUTDIR}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "build-gardenia-peer: no nvcc (set NVCC=/path/to/nvcc)" >&2; exit 1; }
arch=${ARCH:-sm_90}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -f $src ]]; then
    tar -xzf "$src" -C "$work"
else
    mkdir -p "$work/src/sssp" "$work/include"
    cp "$src"/src/sssp/*.cu "$work/src/sssp/" && cp "$src"/include/*.h* "$work/include/"
fi
# The solvers include "sssp.h" from their own folder: ours replaces Gardenia's there.
cp scripts/peers/gardenia/sssp.h "$work/src/sssp/sssp.h"
# CUDA 13 dropped cudaDeviceProp::memoryClockRate, which only cutil_subset.h's device-info
# printer reads (no solver calls it): it prints 0 there.
sed -i 's/prop\.memoryClockRate/0/g' "$work/include/cutil_subset.h"
# Its CudaTest has an empty body in a function returning unsigned: undefined behaviour that
# g++ -O3 compiles into a fall-through (linear_base, topo_lb and dstep crash in it). It
# checks the last launch and returns 0 here, as its name says.
sed -i 's/^static unsigned CudaTest(const char \*msg) {$/&\
  cudaError_t e = cudaGetLastError();\
  if (e != cudaSuccess) { fprintf(stderr, "%s: %s\\n", msg, cudaGetErrorString(e)); exit(1); }\
  return 0;/' "$work/include/cutil_subset.h"
flags=(-O3 -std=c++17 -arch="$arch" -I"$work/src/sssp" -I"$work/include" -w)
# cutil_subset.h includes cuSPARSE's header and uses nothing of it: an empty one stands in
# where the toolkit has no cuSPARSE.
if ! echo '#include <cusparse_v2.h>' | "$nvcc" -x cu -E - >/dev/null 2>&1; then
    mkdir -p "$work/no-cusparse" && : >"$work/no-cusparse/cusparse_v2.h"
    flags+=(-I"$work/no-cusparse")
fi
"$nvcc" "${flags[@]}" -c scripts/peers/gardenia_sssp.cc -o "$work/driver.o"
"$nvcc" "${flags[@]}" -DGARDENIA_ARRAYS -c scripts/peers/gardenia_sssp.cc -o "$work/driver_arrays.o"
built=0
for solver in linear_lb linear_base topo_lb dstep; do
    driver=$work/driver.o
    [[ $solver == topo_lb || $solver == dstep ]] && driver=$work/driver_arrays.o
    if "$nvcc" "${flags[@]}" "$work/src/sssp/$solver.cu" "$driver" -o "$out/gardenia_$solver"; then
        built=$((built + 1))
    else
        echo "build-gardenia-peer: $solver did not build (above)" >&2
    fi
done
echo "build-gardenia-peer: $built solvers of Gardenia $(cat "$work/COMMIT" 2>/dev/null || echo '(checkout)')" >&2
"$nvcc" --version | tail -1 >&2
((built > 0))
