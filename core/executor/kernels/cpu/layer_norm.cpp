#include "core/executor/kernels/cpu/layer_norm.hpp"

#include <cmath>

#include "core/executor/kernels/cpu/parallel.hpp"

namespace loom::cpu {

void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t n_rows, int64_t dim,
                float eps, ThreadPool* pool) {
  parallel_rows(pool, n_rows, dim * 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * dim;
      float* yr = y + r * dim;
      // Two passes in double: the mean first, then the variance about it (no cancellation).
      double sum = 0.0;
      for (int64_t i = 0; i < dim; ++i) sum += xr[i];
      const double mean = sum / static_cast<double>(dim);
      double sq = 0.0;
      for (int64_t i = 0; i < dim; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(dim) + eps);
      for (int64_t i = 0; i < dim; ++i)
        yr[i] = static_cast<float>((xr[i] - mean) * inv) * weight[i] + bias[i];
    }
  });
}

}  // namespace loom::cpu
