#include "core/executor/kernels/cpu/gelu.hpp"

#include <cmath>

#include "core/executor/kernels/cpu/parallel.hpp"

namespace loom::cpu {

void gelu_erf(float* x, int64_t n, ThreadPool* pool) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  parallel_rows(pool, n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
  });
}

}  // namespace loom::cpu
