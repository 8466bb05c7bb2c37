// Residual add, x += y, and the elementwise scale x *= f (Gemma's embedding x sqrt(dim)).
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::cpu {

// x, y: [n].
void add_inplace(float* x, const float* y, int64_t n, ThreadPool* pool);
// x: [n].
void scale_inplace(float* x, float f, int64_t n, ThreadPool* pool);

}  // namespace loom::cpu
