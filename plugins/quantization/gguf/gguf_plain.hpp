// The plain float path of quantization/gguf, for f32/f16/bf16 tensors left unquantized in a
// GGUF file: y[t * ys + j] = dot(x row t, weight row j), reduced in 8 lanes (lane l sums
// k = l, l + 8, ... in increasing k), the lanes by a fixed tree, then the k % 8 tail: one order
// whatever the batch, so rows are batch-invariant. Not tuned (such tensors are rare and small).
#pragma once

#include <cstdint>

#include "loom/sdk_half.hpp"
#include "loom/types.h"

namespace loom_gguf {

inline float plain_value(loom_dtype dtype, const uint8_t* row, int64_t k) {
  if (dtype == LOOM_DTYPE_F32) return reinterpret_cast<const float*>(row)[k];
  const uint16_t h = reinterpret_cast<const uint16_t*>(row)[k];
  return dtype == LOOM_DTYPE_F16 ? loom::sdk::f16_to_f32(h) : loom::sdk::bf16_to_f32(h);
}

inline void plain_tile(loom_dtype dtype, const uint8_t* w, int64_t w_row_bytes, int64_t n_rows, const float* x,
                       int64_t xs, int64_t n, int64_t in, float* y, int64_t ys) {
  for (int64_t t = 0; t < n; ++t) {
    const float* xr = x + t * xs;
    for (int64_t j = 0; j < n_rows; ++j) {
      const uint8_t* row = w + j * w_row_bytes;
      float lane[8] = {};
      int64_t k = 0;
      for (; k + 8 <= in; k += 8)
        for (int l = 0; l < 8; ++l) lane[l] += xr[k + l] * plain_value(dtype, row, k + l);
      float s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
      for (; k < in; ++k) s += xr[k] * plain_value(dtype, row, k);
      y[t * ys + j] = s;
    }
  }
}

}  // namespace loom_gguf
