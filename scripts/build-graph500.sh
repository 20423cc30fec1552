#!/usr/bin/env bash
# Builds Graph500's reference MPI BFS+SSSP (github.com/graph500/graph500, src/) with mpicc,
# the peer of scripts/sssp-ranks.sh, outside this repository:
#
#   git clone https://github.com/graph500/graph500 /tmp/graph500
#   bash scripts/build-graph500.sh /tmp/graph500 [OUTDIR]
#
# OUTDIR (default the clone's src/) gets graph500_reference_bfs_sssp. GCC 10 and later put
# uninitialised globals in one section each (-fno-common), where the reference defines some
# in two files: -fcommon builds it as its authors did.
set -euo pipefail
src=${1:?a clone of github.com/graph500/graph500}
out=${2:-$src/src}
mkdir -p "$out"
command -v mpicc >/dev/null || { echo "mpicc missing: apt-get install libopenmpi-dev" >&2; exit 1; }
make -C "$src/src" graph500_reference_bfs_sssp \
  CFLAGS="-Drestrict=__restrict__ -O3 -DGRAPH_GENERATOR_MPI -DREUSE_CSR_FOR_VALIDATION -I../aml -fcommon" \
  >"$out/build.log" 2>&1 || { tail -20 "$out/build.log" >&2; exit 1; }
[[ $out -ef $src/src ]] || cp "$src/src/graph500_reference_bfs_sssp" "$out/"
echo "$out/graph500_reference_bfs_sssp ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown))"
