// SwiGLU's elementwise half: out = silu(gate) * up, silu(g) = g / (1 + exp(-g)). With AVX2+FMA the
// exp is an 8-lane polynomial (loom/sdk_simd_exp.hpp, about 1 ulp), else libm's; either way each
// element's bits depend only on its own gate and up.
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::cpu {

// gate, up, out: [n] (out may alias gate or up).
void silu_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool* pool);

}  // namespace loom::cpu
