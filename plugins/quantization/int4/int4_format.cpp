// Group-wise INT4 quantization, packing and the portable dequantization (see int4_format.hpp).
#include "int4_format.hpp"

#include <algorithm>
#include <cmath>

namespace loom_int4 {

void quantize_group(const float* v, int64_t n, bool zero_point, uint8_t* q, float* scale, uint8_t* zero) {
  if (!zero_point) {
    float amax = 0;
    for (int64_t k = 0; k < n; ++k) amax = std::max(amax, std::fabs(v[k]));
    *scale = amax / 7.0f;
    *zero = 8;
    for (int64_t k = 0; k < n; ++k)
      q[k] = amax == 0 ? 8 : static_cast<uint8_t>(std::clamp(std::nearbyint(v[k] / *scale), -8.0f, 7.0f) + 8.0f);
    return;
  }
  float lo = 0, hi = 0;  // the range always holds 0, so a zero weight stays exactly 0
  for (int64_t k = 0; k < n; ++k) {
    lo = std::min(lo, v[k]);
    hi = std::max(hi, v[k]);
  }
  *scale = (hi - lo) / 15.0f;
  if (*scale == 0) {
    *zero = 0;
    for (int64_t k = 0; k < n; ++k) q[k] = 0;
    return;
  }
  const float z = std::clamp(std::nearbyint(-lo / *scale), 0.0f, 15.0f);
  *zero = static_cast<uint8_t>(z);
  for (int64_t k = 0; k < n; ++k)
    q[k] = static_cast<uint8_t>(std::clamp(std::nearbyint(v[k] / *scale) + z, 0.0f, 15.0f));
}

void pack_row(const uint8_t* q, int64_t n, uint32_t* words) {
  for (int64_t p = 0; p < (n + 7) / 8; ++p) words[p] = 0;
  for (int64_t k = 0; k < n; ++k) words[k / 8] |= static_cast<uint32_t>(q[k] & 0xFu) << (4 * (k % 8));
}

void quantize_row(const float* v, bool zero_point, Int4Weight& w, int64_t o) {
  std::vector<uint8_t> q(static_cast<size_t>(w.in));
  for (int64_t g = 0; g < w.n_groups; ++g) {
    const int64_t k0 = g * w.group, len = std::min(w.group, w.in - k0);
    const size_t at = static_cast<size_t>(o * w.n_groups + g);
    quantize_group(v + k0, len, zero_point, q.data() + k0, &w.scale[at], &w.zero[at]);
  }
  pack_row(q.data(), w.in, w.packed.data() + o * w.words_per_row);
}

void dequant_portable(const Int4Weight& w, int64_t o0, int64_t n_rows, float* dst) {
  for (int64_t j = 0; j < n_rows; ++j) {
    const int64_t o = o0 + j;
    const uint32_t* words = w.packed.data() + o * w.words_per_row;
    const float* s = w.scale.data() + o * w.n_groups;
    const uint8_t* z = w.zero.data() + o * w.n_groups;
    for (int64_t k = 0; k < w.in; ++k) {
      const int64_t g = k >> w.shift;
      dst[j * w.in + k] = static_cast<float>(static_cast<int32_t>(nibble(words, k)) - int32_t(z[g])) * s[g];
    }
  }
}

loom_quant::DequantKernels<Int4Weight> select_kernels(bool allow_simd) {
#ifdef LOOM_INT4_HAVE_AVX2
  if (allow_simd && loom_quant::cpu_has_avx2_fma()) return {tile_q_avx2, dequant_avx2, tile_f32_avx2, "avx2+fma"};
#else
  (void)allow_simd;
#endif
  return {nullptr, dequant_portable, loom_quant::tile_f32_portable, "portable"};
}

}  // namespace loom_int4
