#include "core/executor/kernels/cpu/silu_mul.hpp"

#include <algorithm>
#include <cmath>

#include "core/executor/kernels/cpu/parallel.hpp"

namespace loom::cpu {
namespace {
constexpr int64_t kChunk = 4096;  // elements per work item
constexpr int64_t kBlock = 256;   // elements per exp pass: the exp values stay in L1
}  // namespace

void silu_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool* pool) {
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  parallel_rows(pool, n_chunks, kChunk * 8, [&](int64_t begin, int64_t end) {
    const int64_t stop = std::min(n, end * kChunk);
    // Two passes per full block: std::exp stays a scalar libm call (same bits as ever), and the
    // divide and multiply, out of the call's way and over a local array of fixed length, vectorise
    // even at -O2 (IEEE division and multiplication: still the same bits).
    float e[kBlock];
    int64_t b = begin * kChunk;
    for (; b + kBlock <= stop; b += kBlock) {
      for (int64_t i = 0; i < kBlock; ++i) e[i] = std::exp(-gate[b + i]);
      for (int64_t i = 0; i < kBlock; ++i) e[i] = gate[b + i] / (1.0f + e[i]) * up[b + i];
      std::copy(e, e + kBlock, out + b);
    }
    for (; b < stop; ++b) out[b] = gate[b] / (1.0f + std::exp(-gate[b])) * up[b];
  });
}

}  // namespace loom::cpu
