// What the CUDA peers of batch k-selection share: error checks, the .npy reader, the
// median-of-runs timer and the host check of answers (nth_element on the first, middle and
// last rows). Header-only; included by cub_kselect.cu and cub_batched_topk.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

static void fail(const std::string& what) {
  fprintf(stderr, "peer: %s\n", what.c_str());
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
  if (keys.empty() || keys.size() > (size_t)INT32_MAX) fail("need 1 to 2^31 - 1 keys");
  return keys;
}

// The flags every peer takes after the key file: --rows-log2 11,13,... and --repeat N.
struct PeerArgs {
  std::vector<int> logs = {11, 13, 15, 17, 19, 21};
  int repeat = 5;
};

static PeerArgs parse_args(int argc, char** argv, const char* usage) {
  if (argc < 2) fail(usage);
  PeerArgs a;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) fail(std::string("flag without a value: ") + argv[i]);
    if (!strcmp(argv[i], "--rows-log2")) {
      a.logs.clear();
      for (char* t = strtok(argv[i + 1], ","); t; t = strtok(nullptr, ",")) a.logs.push_back(atoi(t));
    } else if (!strcmp(argv[i], "--repeat")) {
      a.repeat = atoi(argv[i + 1]);
    } else {
      fail(std::string("unknown flag ") + argv[i]);
    }
  }
  if (a.repeat < 1) fail("--repeat must be at least 1");
  return a;
}

// Times `run` (enqueues one selection on the default stream) with CUDA events: one warm-up,
// then `repeat` runs; sorted times in ms.
template <typename Run>
static std::vector<float> time_runs(int repeat, Run run) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int r = 0; r <= repeat; r++) {
    CHECK(cudaEventRecord(start));
    run();
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r > 0) times.push_back(ms);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times;
}

// Whether the answers of rows 0, rows / 2 and rows - 1 are their k-th smallest keys.
static bool check_rows(const std::vector<int32_t>& keys, const int32_t* d_ans, int rows, int len,
                       int k) {
  std::vector<int32_t> ans(rows);
  CHECK(cudaMemcpy(ans.data(), d_ans, (size_t)rows * 4, cudaMemcpyDeviceToHost));
  bool ok = true;
  for (int row : {0, rows / 2, rows - 1}) {
    std::vector<int32_t> part(keys.begin() + (size_t)row * len, keys.begin() + (size_t)(row + 1) * len);
    std::nth_element(part.begin(), part.begin() + (k - 1), part.end());
    ok = ok && part[k - 1] == ans[row];
  }
  return ok;
}

// One JSON line for a method's times at one row length.
static void print_row(const char* method, int n, int len, int k, const std::vector<float>& times,
                      int repeat, bool ok, const char* extra = "") {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("{\"method\": \"%s\", \"keys\": %d, \"sublist\": %d, \"k\": %d, \"ms\": %.4f, "
         "\"min_ms\": %.4f, \"repeat\": %d, \"verified\": %s, \"device\": \"%s\"%s}\n",
         method, n, len, k, times[times.size() / 2], times[0], repeat, ok ? "true" : "false",
         prop.name, extra);
  fflush(stdout);
}
