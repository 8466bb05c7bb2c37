#include "core/executor/kernels/cpu/add.hpp"

#include <algorithm>

#include "core/executor/kernels/cpu/parallel.hpp"

namespace loom::cpu {

namespace {
constexpr int64_t kChunk = 16384;  // elements per work item
}  // namespace

void add_inplace(float* x, const float* y, int64_t n, ThreadPool* pool) {
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  parallel_rows(pool, n_chunks, kChunk, [&](int64_t begin, int64_t end) {
    const int64_t stop = std::min(n, end * kChunk);
    for (int64_t i = begin * kChunk; i < stop; ++i) x[i] += y[i];
  });
}

void scale_inplace(float* x, float f, int64_t n, ThreadPool* pool) {
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  parallel_rows(pool, n_chunks, kChunk, [&](int64_t begin, int64_t end) {
    const int64_t stop = std::min(n, end * kChunk);
    for (int64_t i = begin * kChunk; i < stop; ++i) x[i] *= f;
  });
}

}  // namespace loom::cpu
