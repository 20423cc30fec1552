// Stands in for Gardenia's src/sssp/sssp.h (github.com/chenxuhao/gardenia) when its GPU SSSP
// solvers are built as a peer of asym's device SSSP: the types and launch constants the
// solvers use, with the values of Gardenia's include/common.h, and the CSR `Graph` its newer
// solvers read (the four accessors they call), without the rest of Gardenia's host library.
// scripts/build-gardenia-peer.sh copies this file beside the solver sources.
#pragma once

#include <cassert>  // worklistc.h asserts without including it (common.h did)
#include <climits>
#include <cstdint>
#include <cstdio>

typedef int DistT;      // common.h without LONG_TYPES
typedef int WeightT;
typedef int32_t VertexId;

#define BLOCK_SIZE 256  // common.h
#define WARP_SIZE 32
#define LOG_WARP_SIZE 5
#define NUM_WARPS (BLOCK_SIZE / WARP_SIZE)
#define MYINFINITY 1000000000
#define kDistInf UINT_MAX / 2  // sssp.h, unparenthesised as there: write DistT(kDistInf)

// A graph in compressed rows: what gardenia_sssp.cc reads from a DIMACS file.
class Graph {
 public:
  Graph(int64_t vertices, int64_t arcs, uint64_t* rowptr, VertexId* colidx)
      : vertices_(vertices), arcs_(arcs), rowptr_(rowptr), colidx_(colidx) {}
  int64_t V() const { return vertices_; }
  int64_t E() const { return arcs_; }
  uint64_t* out_rowptr() { return rowptr_; }
  VertexId* out_colidx() { return colidx_; }

 private:
  int64_t vertices_, arcs_;
  uint64_t* rowptr_;
  VertexId* colidx_;
};

// The solver entry points: the newer solvers (linear_lb.cu, linear_base.cu) take a Graph, the
// older ones (topo_lb.cu, dstep.cu) its arrays with 32-bit row offsets.
void SSSPSolver(Graph& g, int source, DistT* weight, DistT* dist, int delta);
void SSSPSolver(int m, int nnz, int source, int* row_offsets, int* column_indices,
                DistT* weight, DistT* dist, int delta);
