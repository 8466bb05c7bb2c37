// RMSNorm: y = x / sqrt(mean(x^2) + eps) * weight, row by row.
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::cpu {

// x: [n_rows, dim] row stride x_stride; weight: [dim]; y: [n_rows, dim] row stride y_stride
// (y may alias x). The sum of squares is accumulated in double, in index order, so a row's
// result depends only on that row.
void rmsnorm(const float* x, int64_t x_stride, const float* weight, float* y, int64_t y_stride, int64_t n_rows,
             int64_t dim, float eps, ThreadPool* pool);

}  // namespace loom::cpu
