// Residual add: x += y.
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::cpu {

// x, y: [n].
void add_inplace(float* x, const float* y, int64_t n, ThreadPool* pool);

}  // namespace loom::cpu
