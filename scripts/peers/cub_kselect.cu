// The CUB peers of batch k-selection, on the GPU machine: the k-th smallest (k from 1,
// default 0.1 * row length, at least 1) of every row of int32 keys read from a .npy file,
// by sorting every row and gathering its k-th key:
//   cub-segmented-radix-sort  cub::DeviceSegmentedRadixSort::SortKeys
//   cub-segmented-sort        cub::DeviceSegmentedSort::SortKeys
// The keys stay on the device (uploaded once, untimed); a row is timed from the sort's launch
// to the gather's end with CUDA events, the median of --repeat runs after one warm-up. Every
// answer is checked on the host (nth_element) for the first, middle and last rows.
// One JSON object per line on stdout.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o cub_kselect scripts/peers/cub_kselect.cu
//   cub_kselect keys.npy [--rows-log2 11,13,15,17,19,21] [--repeat 5]
// (scripts/build-cub-peer.sh builds it; docs/benchmarks/kselect.md has the rows.)

#include <cub/cub.cuh>

#include "peer_common.cuh"

__global__ void fill_offsets(int* offsets, int rows, int len) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= rows) offsets[i] = i * len;
}

__global__ void gather_kth(const int32_t* sorted, int32_t* out, int rows, int len, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) out[i] = sorted[(size_t)i * len + (k - 1)];
}

struct Method {
  const char* name;
  // Sorts every row of d_in into d_out (temp == nullptr: sets bytes to the storage needed).
  cudaError_t (*sort)(void* temp, size_t& bytes, const int32_t* d_in, int32_t* d_out, int n,
                      int rows, const int* offsets);
};

static cudaError_t radix_sort(void* temp, size_t& bytes, const int32_t* d_in, int32_t* d_out,
                              int n, int rows, const int* offsets) {
  return cub::DeviceSegmentedRadixSort::SortKeys(temp, bytes, d_in, d_out, n, rows, offsets,
                                                 offsets + 1);
}

static cudaError_t segmented_sort(void* temp, size_t& bytes, const int32_t* d_in,
                                  int32_t* d_out, int n, int rows, const int* offsets) {
  return cub::DeviceSegmentedSort::SortKeys(temp, bytes, d_in, d_out, n, rows, offsets,
                                            offsets + 1);
}

int main(int argc, char** argv) {
  PeerArgs args = parse_args(argc, argv, "usage: cub_kselect keys.npy [--rows-log2 11,13,...] [--repeat N]");
  std::vector<int32_t> keys = read_npy(argv[1]);
  int n = (int)keys.size();
  int32_t *d_in, *d_out, *d_ans;
  int* d_off;
  CHECK(cudaMalloc(&d_in, (size_t)n * 4));
  CHECK(cudaMalloc(&d_out, (size_t)n * 4));
  CHECK(cudaMemcpy(d_in, keys.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
  Method methods[] = {{"cub-segmented-radix-sort", radix_sort},
                      {"cub-segmented-sort", segmented_sort}};
  for (int lg : args.logs) {
    int len = 1 << lg;
    if (lg < 1 || lg > 30 || n % len != 0) {
      fprintf(stderr, "cub_kselect: rows of 2^%d do not cut %d keys: skipped\n", lg, n);
      continue;
    }
    int rows = n / len, k = std::max(1, len / 10);
    CHECK(cudaMalloc(&d_off, (size_t)(rows + 1) * 4));
    CHECK(cudaMalloc(&d_ans, (size_t)rows * 4));
    fill_offsets<<<(rows + 256) / 256, 256>>>(d_off, rows, len);
    CHECK(cudaGetLastError());
    for (const Method& m : methods) {
      size_t bytes = 0;
      CHECK(m.sort(nullptr, bytes, d_in, d_out, n, rows, d_off));
      void* temp;
      CHECK(cudaMalloc(&temp, std::max<size_t>(bytes, 1)));
      std::vector<float> times = time_runs(args.repeat, [&] {
        CHECK(m.sort(temp, bytes, d_in, d_out, n, rows, d_off));
        gather_kth<<<(rows + 255) / 256, 256>>>(d_out, d_ans, rows, len, k);
      });
      print_row(m.name, n, len, k, times, args.repeat, check_rows(keys, d_ans, rows, len, k));
      CHECK(cudaFree(temp));
    }
    CHECK(cudaFree(d_off));
    CHECK(cudaFree(d_ans));
  }
  return 0;
}
