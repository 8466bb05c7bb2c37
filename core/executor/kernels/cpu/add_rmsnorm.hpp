// Residual add fused with the RMSNorm that follows it (vLLM's fused_add_rms_norm): one pass over
// the residual stream instead of two. x += delta, then y = rmsnorm(x) * weight, row by row.
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::cpu {

// x: [n_rows, dim] (updated in place); delta: [n_rows, dim]; weight: [dim]; y: [n_rows, dim]
// (y must not alias x or delta). All rows are contiguous. Gives the bits of add_inplace followed
// by rmsnorm: each sum is rounded once to f32 before it is squared, and the sum of squares is
// accumulated in double in index order.
void add_rmsnorm(float* x, const float* delta, const float* weight, float* y, int64_t n_rows, int64_t dim, float eps,
                 ThreadPool* pool);

}  // namespace loom::cpu
