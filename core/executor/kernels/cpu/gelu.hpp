// GELU with the exact erf form, 0.5 x (1 + erf(x / sqrt 2)): BERT's "gelu" (torch's default),
// as opposed to the tanh approximation Gemma uses (silu_mul.hpp gelu_tanh_mul).
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::cpu {

// x: [n], in place.
void gelu_erf(float* x, int64_t n, ThreadPool* pool);

}  // namespace loom::cpu
