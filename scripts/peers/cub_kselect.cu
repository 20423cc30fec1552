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
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

static void fail(const std::string& what) {
  fprintf(stderr, "cub_kselect: %s\n", what.c_str());
  exit(2);
}

// The int32 keys of a little-endian 1-D or C-ordered .npy file.
static std::vector<int32_t> read_npy(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) fail(std::string(path) + ": cannot open");
  unsigned char head[12];
  if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0)
    fail(std::string(path) + ": not a .npy file");
  size_t header_len, start;
  if (head[6] == 1) {
    header_len = head[8] | (head[9] << 8);
    start = 10;
  } else {
    if (fread(head + 10, 1, 2, f) != 2) fail("short header");
    header_len = head[8] | (head[9] << 8) | (head[10] << 16) | ((size_t)head[11] << 24);
    start = 12;
  }
  std::string header(header_len, ' ');
  if (fread(&header[0], 1, header_len, f) != header_len) fail("short header");
  if (header.find("'<i4'") == std::string::npos || header.find("True") != std::string::npos)
    fail(std::string(path) + ": keys must be little-endian int32 in C order");
  fseek(f, 0, SEEK_END);
  size_t bytes = (size_t)ftell(f) - start - header_len;
  fseek(f, (long)(start + header_len), SEEK_SET);
  std::vector<int32_t> keys(bytes / 4);
  if (fread(keys.data(), 4, keys.size(), f) != keys.size()) fail("short data");
  fclose(f);
  return keys;
}

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
  if (argc < 2) fail("usage: cub_kselect keys.npy [--rows-log2 11,13,...] [--repeat N]");
  std::vector<int> logs = {11, 13, 15, 17, 19, 21};
  int repeat = 5;
  for (int a = 2; a + 1 < argc; a += 2) {
    if (!strcmp(argv[a], "--rows-log2")) {
      logs.clear();
      for (char* t = strtok(argv[a + 1], ","); t; t = strtok(nullptr, ",")) logs.push_back(atoi(t));
    } else if (!strcmp(argv[a], "--repeat")) {
      repeat = atoi(argv[a + 1]);
    } else {
      fail(std::string("unknown flag ") + argv[a]);
    }
  }
  if (repeat < 1) fail("--repeat must be at least 1");
  std::vector<int32_t> keys = read_npy(argv[1]);
  if (keys.empty() || keys.size() > (size_t)INT32_MAX) fail("need 1 to 2^31 - 1 keys");
  int n = (int)keys.size();
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int32_t *d_in, *d_out, *d_ans;
  int* d_off;
  CHECK(cudaMalloc(&d_in, (size_t)n * 4));
  CHECK(cudaMalloc(&d_out, (size_t)n * 4));
  CHECK(cudaMemcpy(d_in, keys.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
  Method methods[] = {{"cub-segmented-radix-sort", radix_sort},
                      {"cub-segmented-sort", segmented_sort}};
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int lg : logs) {
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
      std::vector<float> times;
      for (int r = 0; r <= repeat; r++) {
        CHECK(cudaEventRecord(start));
        CHECK(m.sort(temp, bytes, d_in, d_out, n, rows, d_off));
        gather_kth<<<(rows + 255) / 256, 256>>>(d_out, d_ans, rows, len, k);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r > 0) times.push_back(ms);
      }
      std::sort(times.begin(), times.end());
      std::vector<int32_t> ans(rows);
      CHECK(cudaMemcpy(ans.data(), d_ans, (size_t)rows * 4, cudaMemcpyDeviceToHost));
      bool ok = true;
      for (int row : {0, rows / 2, rows - 1}) {
        std::vector<int32_t> part(keys.begin() + (size_t)row * len,
                                  keys.begin() + (size_t)(row + 1) * len);
        std::nth_element(part.begin(), part.begin() + (k - 1), part.end());
        ok = ok && part[k - 1] == ans[row];
      }
      printf("{\"method\": \"%s\", \"keys\": %d, \"sublist\": %d, \"k\": %d, \"ms\": %.4f, "
             "\"min_ms\": %.4f, \"repeat\": %d, \"verified\": %s, \"device\": \"%s\"}\n",
             m.name, n, len, k, times[times.size() / 2], times[0], repeat, ok ? "true" : "false",
             prop.name);
      fflush(stdout);
      CHECK(cudaFree(temp));
    }
    CHECK(cudaFree(d_off));
    CHECK(cudaFree(d_ans));
  }
  return 0;
}
