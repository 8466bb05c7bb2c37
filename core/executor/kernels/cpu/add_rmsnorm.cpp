#include "core/executor/kernels/cpu/add_rmsnorm.hpp"

#include <cmath>

#include "core/executor/kernels/cpu/parallel.hpp"

namespace loom::cpu {

void add_rmsnorm(float* x, const float* delta, const float* weight, float* y, int64_t n_rows, int64_t dim, float eps,
                 ThreadPool* pool) {
  parallel_rows(pool, n_rows, dim * 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* xr = x + r * dim;
      const float* dr = delta + r * dim;
      float* yr = y + r * dim;
      double ss = 0.0;
      for (int64_t i = 0; i < dim; ++i) {
        xr[i] += dr[i];
        ss += static_cast<double>(xr[i]) * xr[i];
      }
      const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
      for (int64_t i = 0; i < dim; ++i) yr[i] = weight[i] * (scale * xr[i]);
    }
  });
}

}  // namespace loom::cpu
