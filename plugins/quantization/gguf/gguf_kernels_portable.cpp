// Portable kernels: one (activation row, weight row) dot product at a time, each block's
// integer sum exact, the blocks folded into a float sum in increasing order.
#include "gguf_kernels.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace loom_gguf {
namespace {

namespace g = loom::sdk::gguf;
using loom::sdk::f16_to_f32;

float dot_q8_0(const g::BlockQ8_0* w, const g::BlockQ8_0* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < g::kQK; ++j) isum += int32_t{w[b].qs[j]} * int32_t{a[b].qs[j]};
    sum += (f16_to_f32(w[b].d) * f16_to_f32(a[b].d)) * static_cast<float>(isum);
  }
  return sum;
}

float dot_q4_0(const g::BlockQ4_0* w, const g::BlockQ8_0* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < g::kQK / 2; ++j) {
      isum += ((w[b].qs[j] & 0xF) - 8) * int32_t{a[b].qs[j]};
      isum += ((w[b].qs[j] >> 4) - 8) * int32_t{a[b].qs[j + g::kQK / 2]};
    }
    sum += (f16_to_f32(w[b].d) * f16_to_f32(a[b].d)) * static_cast<float>(isum);
  }
  return sum;
}

template <class W, class A, float (*Dot)(const W*, const A*, int64_t), int kValues>
void tile(const uint8_t* w, int64_t w_row_bytes, int64_t n_rows, const uint8_t* xq, int64_t xq_row_bytes, int64_t n,
          int64_t in, float* y, int64_t ys) {
  const int64_t nb = in / kValues;
  for (int64_t t = 0; t < n; ++t) {
    const auto* a = reinterpret_cast<const A*>(xq + t * xq_row_bytes);
    for (int64_t j = 0; j < n_rows; ++j) y[t * ys + j] = Dot(reinterpret_cast<const W*>(w + j * w_row_bytes), a, nb);
  }
}

}  // namespace

Kernels portable_kernels() {
  return Kernels{&tile<g::BlockQ8_0, g::BlockQ8_0, &dot_q8_0, g::kQK>,
                 &tile<g::BlockQ4_0, g::BlockQ8_0, &dot_q4_0, g::kQK>,
                 &g::quantize_q8_0, "portable",
                 portable_kquant_kernels()};
}

Kernels select_kernels(bool allow_simd) {
#ifdef LOOM_GGUF_HAVE_AVX2
  if (allow_simd && cpu_has_avx2_fma()) return avx2_kernels();
#endif
  (void)allow_simd;
  return portable_kernels();
}

}  // namespace loom_gguf
