// Driver of Gardenia's GPU SSSP solvers (github.com/chenxuhao/gardenia, src/sssp/*.cu) as a
// peer of asym's device SSSP on the very graph asym searched: reads the DIMACS `.gr` file
// `sssp --save-graph` writes, passes its weights (Gardenia's own driver fills unit weights),
// runs the solver --repeat times, checks every answer against Dijkstra and prints one JSON
// line per search with the time the solver's own timer gives (its search loop, the graph
// already on the device: what asym's `ms` covers too).
//
//   gardenia_sssp GRAPH.gr SOURCE [--repeat N] [--delta D] [--variant NAME]
//
// SOURCE is numbered from 1 as in the file (asym's `source_searched`). --delta is the bucket
// width the delta-stepping solver takes (the others ignore it). Built by
// scripts/build-gardenia-peer.sh against one solver; GARDENIA_ARRAYS selects the older entry
// point (32-bit row offsets) of topo_lb.cu and dstep.cu.
#include "sssp.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

static void fail(const std::string& what) {
  fprintf(stderr, "gardenia_sssp: %s\n", what.c_str());
  exit(2);
}

struct Csr {
  int64_t vertices = 0;
  std::vector<uint64_t> rowptr;
  std::vector<VertexId> colidx;
  std::vector<DistT> weight;
};

// Reads an unsigned decimal at *p (skipping blanks), advancing p; false if none.
static bool read_number(const char*& p, const char* end, uint64_t& value) {
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if (p == end || *p < '0' || *p > '9') return false;
  value = 0;
  while (p < end && *p >= '0' && *p <= '9') value = value * 10 + uint64_t(*p++ - '0');
  return true;
}

// A DIMACS shortest-path file: `c` comments, one `p sp N M`, then M `a FROM TO WEIGHT` lines.
static Csr read_dimacs(const char* path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) fail(std::string(path) + ": cannot open");
  struct stat st;
  fstat(fd, &st);
  if (st.st_size == 0) fail(std::string(path) + ": empty");
  const char* text = (const char*)mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (text == MAP_FAILED) fail(std::string(path) + ": cannot map");
  const char* p = text;
  const char* end = text + st.st_size;
  Csr g;
  uint64_t arcs = 0, line = 0;
  std::vector<uint32_t> from, to;
  bool header = false;
  while (p < end) {
    line++;
    const char* eol = (const char*)memchr(p, '\n', end - p);
    if (!eol) eol = end;
    std::string where = std::string(path) + ":" + std::to_string(line) + ": ";
    if (*p == 'p') {
      if (header) fail(where + "a second `p` line");
      p++;
      while (p < eol && *p == ' ') p++;
      if (eol - p < 2 || strncmp(p, "sp", 2) != 0) fail(where + "expected `p sp N M`");
      p += 2;
      uint64_t n;
      if (!read_number(p, eol, n) || !read_number(p, eol, arcs)) fail(where + "expected `p sp N M`");
      if (n == 0 || n >= (uint64_t)INT32_MAX || arcs >= (uint64_t)INT32_MAX)
        fail(where + "the solvers take 1 to 2^31 - 2 vertices and arcs");
      g.vertices = (int64_t)n;
      from.reserve(arcs), to.reserve(arcs), g.weight.reserve(arcs);
      header = true;
    } else if (*p == 'a') {
      if (!header) fail(where + "an arc before the `p sp` line");
      p++;
      uint64_t u, v, w;
      if (!read_number(p, eol, u) || !read_number(p, eol, v) || !read_number(p, eol, w))
        fail(where + "expected `a FROM TO WEIGHT` (weights are integers >= 0)");
      if (u < 1 || v < 1 || u > (uint64_t)g.vertices || v > (uint64_t)g.vertices)
        fail(where + "a vertex out of 1.." + std::to_string(g.vertices));
      if (w > (uint64_t)INT32_MAX / 4) fail(where + "a weight too large for int distances");
      if (from.size() == arcs) fail(where + "more arcs than the `p sp` line says");
      from.push_back(uint32_t(u - 1)), to.push_back(uint32_t(v - 1)), g.weight.push_back(DistT(w));
    } else if (*p != 'c' && *p != '\n' && *p != '\r') {
      fail(where + "a line that is not `c`, `p` or `a`");
    }
    p = eol + 1;
  }
  munmap((void*)text, st.st_size);
  close(fd);
  if (!header) fail(std::string(path) + ": no `p sp N M` line");
  if (from.size() != arcs) fail(std::string(path) + ": fewer arcs than the `p sp` line says");
  // Counting sort by tail, keeping each vertex's arcs in file order.
  g.rowptr.assign(g.vertices + 1, 0);
  for (uint32_t u : from) g.rowptr[u + 1]++;
  for (int64_t v = 0; v < g.vertices; v++) g.rowptr[v + 1] += g.rowptr[v];
  std::vector<uint64_t> next(g.rowptr.begin(), g.rowptr.end() - 1);
  std::vector<DistT> weight(arcs);
  g.colidx.resize(arcs);
  for (uint64_t e = 0; e < arcs; e++) {
    uint64_t at = next[from[e]]++;
    g.colidx[at] = (VertexId)to[e];
    weight[at] = g.weight[e];
  }
  g.weight.swap(weight);
  return g;
}

// Dijkstra with a binary heap, distances in 64 bits; -1 = unreachable.
static std::vector<int64_t> dijkstra(const Csr& g, int64_t source) {
  std::vector<int64_t> dist(g.vertices, -1);
  typedef std::pair<int64_t, int64_t> Item;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  dist[source] = 0;
  heap.push({0, source});
  while (!heap.empty()) {
    Item top = heap.top();
    heap.pop();
    if (top.first != dist[top.second]) continue;
    for (uint64_t e = g.rowptr[top.second]; e < g.rowptr[top.second + 1]; e++) {
      int64_t d = top.first + g.weight[e];
      int64_t& dv = dist[g.colidx[e]];
      if (dv < 0 || d < dv) dv = d, heap.push({d, g.colidx[e]});
    }
  }
  return dist;
}

// Runs `solve` with stdout sent to a temporary file and returns what it printed.
template <typename F>
static std::string captured(F solve) {
  char name[] = "/tmp/gardenia_sssp_XXXXXX";
  int fd = mkstemp(name);
  if (fd < 0) fail("cannot make a temporary file");
  unlink(name);
  fflush(stdout);
  int saved = dup(1);
  dup2(fd, 1);
  solve();
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::string text;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, n);
  close(fd);
  return text;
}

// The number after `key` in the solver's output (`runtime [...] = 12.3 ms`, `iterations = 7`).
static double printed(const std::string& text, const std::string& key) {
  size_t at = text.rfind(key);
  if (at == std::string::npos) fail("the solver printed no `" + key + "`:\n" + text);
  at = text.find('=', at);
  if (at == std::string::npos) fail("the solver printed no `" + key + " = ...`");
  return atof(text.c_str() + at + 1);
}

int main(int argc, char** argv) {
  if (argc < 3) fail("usage: gardenia_sssp GRAPH.gr SOURCE [--repeat N] [--delta D] [--variant NAME]");
  const char* path = argv[1];
  int64_t source = atoll(argv[2]);
  int repeat = 3, delta = 1;
  std::string variant = "gardenia";
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--repeat") repeat = atoi(argv[i + 1]);
    else if (flag == "--delta") delta = atoi(argv[i + 1]);
    else if (flag == "--variant") variant = argv[i + 1];
    else fail("unknown flag " + flag);
  }
  if (repeat < 1 || delta < 1) fail("--repeat and --delta take a number >= 1");
  Csr g = read_dimacs(path);
  if (source < 1 || source > g.vertices) fail("SOURCE out of 1.." + std::to_string(g.vertices));
  source -= 1;
  std::vector<int64_t> reference = dijkstra(g, source);
  int64_t reached = 0, farthest = 0;
  for (int64_t d : reference)
    if (d >= 0) reached++, farthest = std::max(farthest, d);
  if (farthest >= (int64_t)(kDistInf)) fail("distances too large for the solvers' int");
#ifdef GARDENIA_ARRAYS
  std::vector<int> rowptr32(g.rowptr.begin(), g.rowptr.end());
#else
  Graph graph(g.vertices, (int64_t)g.colidx.size(), g.rowptr.data(), g.colidx.data());
#endif
  for (int trial = 0; trial < repeat; trial++) {
    std::vector<DistT> dist(g.vertices, DistT(kDistInf));
    std::string out = captured([&] {
#ifdef GARDENIA_ARRAYS
      SSSPSolver((int)g.vertices, (int)g.colidx.size(), (int)source, rowptr32.data(),
                 g.colidx.data(), g.weight.data(), dist.data(), delta);
#else
      SSSPSolver(graph, (int)source, g.weight.data(), dist.data(), delta);
#endif
    });
    int64_t wrong = 0;
    for (int64_t v = 0; v < g.vertices; v++) {
      int64_t want = reference[v] < 0 ? (int64_t)(kDistInf) : reference[v];
      wrong += dist[v] != want;
    }
    const char* name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("{\"peer\":\"gardenia\",\"variant\":\"%s\",\"graph\":\"%s\",\"vertices\":%lld,"
           "\"arcs\":%zu,\"source\":%lld,\"delta\":%d,\"trial\":%d,\"ms\":%.4f,"
           "\"iterations\":%d,\"reached\":%lld,\"wrong\":%lld,\"verified\":%s}\n",
           variant.c_str(), name, (long long)g.vertices, g.colidx.size(), (long long)source + 1,
           delta, trial, printed(out, "runtime ["), (int)printed(out, "iterations ="),
           (long long)reached, (long long)wrong, wrong == 0 ? "true" : "false");
    fflush(stdout);
  }
  return 0;
}
