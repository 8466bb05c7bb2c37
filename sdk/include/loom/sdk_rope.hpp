// SDK: the rotary position embedding's arithmetic (loom_rope in loom/attention.h), shared by the
// host's RoPE pass and attention plugins that rotate K while writing it to the pool, so both give
// the same bits. Compile callers with -ffp-contract=off: each product and difference below is
// rounded on its own.
#pragma once

#include <cmath>
#include <cstdint>

#include "loom/attention.h"

namespace loom::sdk::rope {

// Rotation pairs of at most this many (rope_dim <= 1024): callers keep a token's table on the stack.
constexpr int32_t kMaxPairs = 512;

// cos_t[i], sin_t[i] of pair i's angle at position pos, for i < rope.rope_dim / 2: the angle and
// its cos/sin in double, times attention_factor, then one rounding to float.
inline void angles(const loom_rope& rope, int32_t pos, float* cos_t, float* sin_t) {
  const int32_t n_pairs = rope.rope_dim / 2;
  for (int32_t i = 0; i < n_pairs; ++i) {
    const double angle = static_cast<double>(pos) * rope.inv_freq[i];
    cos_t[i] = static_cast<float>(std::cos(angle) * rope.attention_factor);
    sin_t[i] = static_cast<float>(std::sin(angle) * rope.attention_factor);
  }
}

// Rotates one head's values x[0 .. head_dim) in place by the angles of its token.
inline void rotate(const loom_rope& rope, float* x, const float* cos_t, const float* sin_t) {
  const int32_t n_pairs = rope.rope_dim / 2;
  if (rope.neox != 0) {
    for (int32_t i = 0; i < n_pairs; ++i) {
      const float x0 = x[i], x1 = x[i + n_pairs];
      x[i] = x0 * cos_t[i] - x1 * sin_t[i];
      x[i + n_pairs] = x0 * sin_t[i] + x1 * cos_t[i];
    }
    return;
  }
  for (int32_t i = 0; i < n_pairs; ++i) {
    const float x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = x0 * cos_t[i] - x1 * sin_t[i];
    x[2 * i + 1] = x0 * sin_t[i] + x1 * cos_t[i];
  }
}

}  // namespace loom::sdk::rope
