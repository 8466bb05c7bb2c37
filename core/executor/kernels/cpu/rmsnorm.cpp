#include "core/executor/kernels/cpu/rmsnorm.hpp"

#include <cmath>

#include "core/executor/kernels/cpu/parallel.hpp"

namespace loom::cpu {

void rmsnorm(const float* x, int64_t x_stride, const float* weight, float* y, int64_t y_stride, int64_t n_rows,
             int64_t dim, float eps, ThreadPool* pool) {
  parallel_rows(pool, n_rows, dim * 3, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * x_stride;
      float* yr = y + r * y_stride;
      double ss = 0.0;
      for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
      for (int64_t i = 0; i < dim; ++i) yr[i] = weight[i] * (scale * xr[i]);
    }
  });
}

}  // namespace loom::cpu
