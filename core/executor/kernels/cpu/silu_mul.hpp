// The gated MLP's elementwise half, out = act(gate) * up, for the two activations as one
// sigmoid form act(g) = g / (1 + exp(-z(g))):
//   SwiGLU  silu(g):        z = g
//   GeGLU   gelu_tanh(g):   z = 2 sqrt(2/pi) (g + 0.044715 g^3), since 0.5 (1 + tanh(y)) = 1 / (1 + exp(-2y))
// With AVX2+FMA the exp is an 8-lane polynomial (loom/sdk_simd_exp.hpp, about 1 ulp), else libm's;
// either way each element's bits depend only on its own gate and up.
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::cpu {

// gate, up, out: [n] (out may alias gate or up).
void silu_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool* pool);
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool* pool);

}  // namespace loom::cpu
