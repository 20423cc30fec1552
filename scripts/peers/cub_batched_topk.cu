// CUB's own top-k as the peer of batch k-selection, on the GPU machine: the k-th smallest
// (k = 0.1 * row length) of every row of int32 keys read from a .npy file by
// cub::DeviceBatchedTopK::MinKeys (the k smallest of every row, unsorted, in one batched
// call), then the largest of those k per row (one block per row): that is the k-th.
//   cub-batched-topk          MinKeys, then the per-row max (what a user needs for the k-th)
//   cub-batched-topk-only     MinKeys alone (the k smallest, not yet the k-th)
// DeviceBatchedTopK is newer than the CCCL that CUDA 13.0 ships (3.0.1): build against
// NVIDIA's cccl repository's headers (scripts/build-cub-peer.sh with CCCL=...). Row length
// and k are compile-time constants (the API specialises on them; rows at most 2^21), so
// the six lengths 2^11..2^21 are instantiated here. Keys resident, CUDA events, median of
// --repeat after one warm-up, answers checked on the host; one JSON object per line.
//
//   cub_batched_topk keys.npy [--rows-log2 11,13,15,17,19,21] [--repeat 5]

#include <cub/device/device_batched_topk.cuh>

#include <cuda/__execution/determinism.h>
#include <cuda/__execution/output_ordering.h>
#include <cuda/__execution/require.h>
#include <cuda/__execution/tie_break.h>
#include <cuda/argument>
#include <cuda/iterator>
#include <cuda/std/__execution/env.h>

#include "peer_common.cuh"

// The largest of each row's k selected keys (block of 256 per row).
__global__ void row_max(const int32_t* selected, int32_t* out, int k) {
  __shared__ int32_t part[256];
  const int32_t* row = selected + (size_t)blockIdx.x * k;
  int32_t m = INT32_MIN;
  for (int i = threadIdx.x; i < k; i += 256) m = max(m, row[i]);
  part[threadIdx.x] = m;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] = max(part[threadIdx.x], part[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

// MinKeys on rows of Len keys, k = Len / 10 (temp == nullptr: sets bytes).
template <int Len>
static cudaError_t min_keys(void* temp, size_t& bytes, const int32_t* d_in, int32_t* d_sel,
                            int rows) {
  constexpr int K = Len / 10;
  auto in = cuda::make_strided_iterator(cuda::make_counting_iterator(d_in), Len);
  auto out = cuda::make_strided_iterator(cuda::make_counting_iterator(d_sel), K);
  auto env = cuda::std::execution::env{cuda::execution::require(
      cuda::execution::determinism::not_guaranteed, cuda::execution::tie_break::unspecified,
      cuda::execution::output_ordering::unsorted)};
  return cub::DeviceBatchedTopK::MinKeys(temp, bytes, in, out, cuda::args::constant<Len>{},
                                         cuda::args::constant<K>{},
                                         cuda::args::immediate{(cuda::std::int64_t)rows}, env);
}

template <int Len>
static void run_length(const std::vector<int32_t>& keys, const int32_t* d_in, int repeat) {
  const int n = (int)keys.size(), rows = n / Len, k = Len / 10;
  int32_t *d_sel, *d_ans;
  CHECK(cudaMalloc(&d_sel, (size_t)rows * k * 4));
  CHECK(cudaMalloc(&d_ans, (size_t)rows * 4));
  size_t bytes = 0;
  CHECK(min_keys<Len>(nullptr, bytes, d_in, d_sel, rows));
  void* temp;
  CHECK(cudaMalloc(&temp, std::max<size_t>(bytes, 1)));
  std::vector<float> only = time_runs(repeat, [&] { CHECK(min_keys<Len>(temp, bytes, d_in, d_sel, rows)); });
  std::vector<float> both = time_runs(repeat, [&] {
    CHECK(min_keys<Len>(temp, bytes, d_in, d_sel, rows));
    row_max<<<rows, 256>>>(d_sel, d_ans, k);
  });
  bool ok = check_rows(keys, d_ans, rows, Len, k);
  char extra[64];
  snprintf(extra, sizeof extra, ", \"temp_bytes\": %zu", bytes);
  print_row("cub-batched-topk", n, Len, k, both, repeat, ok, extra);
  print_row("cub-batched-topk-only", n, Len, k, only, repeat, ok, extra);
  CHECK(cudaFree(temp));
  CHECK(cudaFree(d_sel));
  CHECK(cudaFree(d_ans));
}

int main(int argc, char** argv) {
  PeerArgs args = parse_args(argc, argv, "usage: cub_batched_topk keys.npy [--rows-log2 11,13,...] [--repeat N]");
  std::vector<int32_t> keys = read_npy(argv[1]);
  int n = (int)keys.size();
  int32_t* d_in;
  CHECK(cudaMalloc(&d_in, (size_t)n * 4));
  CHECK(cudaMemcpy(d_in, keys.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
  for (int lg : args.logs) {
    if (lg < 11 || lg > 21 || lg % 2 == 0 || n % (1 << lg) != 0) {
      fprintf(stderr, "cub_batched_topk: rows of 2^%d: built for odd 11..21 dividing %d keys: skipped\n", lg, n);
      continue;
    }
    switch (lg) {
      case 11: run_length<1 << 11>(keys, d_in, args.repeat); break;
      case 13: run_length<1 << 13>(keys, d_in, args.repeat); break;
      case 15: run_length<1 << 15>(keys, d_in, args.repeat); break;
      case 17: run_length<1 << 17>(keys, d_in, args.repeat); break;
      case 19: run_length<1 << 19>(keys, d_in, args.repeat); break;
      case 21: run_length<1 << 21>(keys, d_in, args.repeat); break;
    }
  }
  CHECK(cudaFree(d_in));
  return 0;
}
