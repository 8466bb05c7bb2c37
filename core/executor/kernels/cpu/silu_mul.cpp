#include "core/executor/kernels/cpu/silu_mul.hpp"

#include <algorithm>
#include <cmath>

#include "core/executor/kernels/cpu/parallel.hpp"

namespace loom::cpu {

void silu_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool* pool) {
  constexpr int64_t kChunk = 4096;  // elements per work item
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  parallel_rows(pool, n_chunks, kChunk * 8, [&](int64_t begin, int64_t end) {
    const int64_t stop = std::min(n, end * kChunk);
    for (int64_t i = begin * kChunk; i < stop; ++i) {
      const float g = gate[i];
      out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
  });
}

}  // namespace loom::cpu
