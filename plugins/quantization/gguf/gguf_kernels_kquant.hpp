// The K-quant tile of quantization/gguf: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS weights (256-value
// super-blocks, sdk_gguf_kquants.hpp) against Q8_K activations, as llama.cpp pairs them. Each
// (activation row, weight row) pair is one dot product over the row's super-blocks, folded in
// increasing order; a kernel set's dot is the same function whatever n or the tile, so a row's
// bits do not depend on the batch (gguf_kernels.hpp).
#pragma once

#include <cstdint>

#include "gguf_kernels.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace loom_gguf {

// y[t * ys + j] = Dot(weight row j, activation row t): the TileKernel over a per-row dot.
template <class W, float (*Dot)(const W*, const loom::sdk::gguf::BlockQ8_K*, int64_t)>
void kquant_tile(const uint8_t* w, int64_t w_row_bytes, int64_t n_rows, const uint8_t* xq, int64_t xq_row_bytes,
                 int64_t n, int64_t in, float* y, int64_t ys) {
  const int64_t nb = in / loom::sdk::gguf::kQKK;
  for (int64_t t = 0; t < n; ++t) {
    const auto* a = reinterpret_cast<const loom::sdk::gguf::BlockQ8_K*>(xq + t * xq_row_bytes);
    for (int64_t j = 0; j < n_rows; ++j) y[t * ys + j] = Dot(reinterpret_cast<const W*>(w + j * w_row_bytes), a, nb);
  }
}

// The same over a dot of kRows activation rows at once, each weight super-block unpacked once
// for all of them (prefill), and of 1 row for the rest: DotRows(w, a, nb, out) sets out[r] =
// dot(w, a[r]) for r < kRows, Dot1 likewise for one row. Both compute each (row, weight row)
// pair by the same sequence of operations, so how rows are grouped never changes a bit.
template <class W, int kRows, void (*DotRows)(const W*, const loom::sdk::gguf::BlockQ8_K* const*, int64_t, float*),
          void (*Dot1)(const W*, const loom::sdk::gguf::BlockQ8_K* const*, int64_t, float*)>
void kquant_tile_rows(const uint8_t* w, int64_t w_row_bytes, int64_t n_rows, const uint8_t* xq, int64_t xq_row_bytes,
                      int64_t n, int64_t in, float* y, int64_t ys) {
  using loom::sdk::gguf::BlockQ8_K;
  const int64_t nb = in / loom::sdk::gguf::kQKK;
  int64_t t = 0;
  for (; t + kRows <= n; t += kRows) {
    const BlockQ8_K* a[kRows];
    for (int r = 0; r < kRows; ++r) a[r] = reinterpret_cast<const BlockQ8_K*>(xq + (t + r) * xq_row_bytes);
    for (int64_t j = 0; j < n_rows; ++j) {
      float out[kRows];
      DotRows(reinterpret_cast<const W*>(w + j * w_row_bytes), a, nb, out);
      for (int r = 0; r < kRows; ++r) y[(t + r) * ys + j] = out[r];
    }
  }
  for (; t < n; ++t) {
    const BlockQ8_K* a[1] = {reinterpret_cast<const BlockQ8_K*>(xq + t * xq_row_bytes)};
    for (int64_t j = 0; j < n_rows; ++j) Dot1(reinterpret_cast<const W*>(w + j * w_row_bytes), a, nb, y + t * ys + j);
  }
}

}  // namespace loom_gguf
