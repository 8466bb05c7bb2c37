// Storing an x8 kernel's result: R activation rows' 8 lanes (one per weight row of a group) to
// y, rows ys apart, the first n_out (<= 8) columns (a matrix's last group may be short).
// Included inside an anonymous namespace by the x8 GEMM headers (gguf_legacy_x8_gemm.hpp,
// gguf_kquant_x8_gemm.hpp), after the file's `#pragma GCC target`.
#pragma once

template <int R>
inline __attribute__((always_inline)) void x8_store(const __m256* acc, float* y, int64_t ys, int64_t n_out) {
  for (int r = 0; r < R; ++r) {
    if (n_out == loom_gguf::kGroupRows) {
      _mm256_storeu_ps(y + r * ys, acc[r]);
    } else {
      alignas(32) float tmp[loom_gguf::kGroupRows];
      _mm256_store_ps(tmp, acc[r]);
      for (int64_t c = 0; c < n_out; ++c) y[r * ys + c] = tmp[c];
    }
  }
}
