// Portable code of the bf16 compute mode (none_bf16.hpp): the load-time rounding into pair
// panels and the reference GEMM the AVX512-BF16 kernels are held to. -ffp-contract=off keeps
// each add separately rounded (the products are exact: two 8-bit significands).
#include <cstring>

#include "loom/sdk_half.hpp"
#include "none_bf16.hpp"

namespace loom_none {
namespace {

float element(const void* src, loom_dtype t, int64_t i) {
  if (t == LOOM_DTYPE_F32) return static_cast<const float*>(src)[i];
  const uint16_t h = static_cast<const uint16_t*>(src)[i];
  return t == LOOM_DTYPE_BF16 ? loom::sdk::bf16_to_f32(h) : loom::sdk::f16_to_f32(h);
}

}  // namespace

uint32_t bf16_pair(float lo, float hi) {
  return static_cast<uint32_t>(loom::sdk::f32_to_bf16(lo)) | static_cast<uint32_t>(loom::sdk::f32_to_bf16(hi)) << 16;
}

void pack_pair_panels(const void* src, loom_dtype src_dtype, int64_t row_stride, const PanelView& w, uint32_t* dst,
                      int64_t p_begin, int64_t p_end) {
  const int64_t kp_n = pairs_of(w.in);
  for (int64_t p = p_begin; p < p_end; ++p) {
    uint32_t* panel = dst + p * kp_n * kPanel;
    for (int64_t j = 0; j < kPanel; ++j) {
      const int64_t o = p * kPanel + j;
      for (int64_t kp = 0; kp < kp_n; ++kp) {
        const int64_t k = 2 * kp;
        float lo = 0.0F, hi = 0.0F;
        if (o < w.out) {
          lo = element(src, src_dtype, o * row_stride + k);
          if (k + 1 < w.in) hi = element(src, src_dtype, o * row_stride + k + 1);
        }
        panel[kp * kPanel + j] = bf16_pair(lo, hi);
      }
    }
  }
}

void pair_gemm_reference(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                         float* y, int64_t ys) {
  const int64_t kp_n = pairs_of(w.in);
  const auto* panels = static_cast<const uint32_t*>(w.data);
  const auto lo = [](uint32_t v) { return loom::sdk::bf16_to_f32(static_cast<uint16_t>(v)); };
  const auto hi = [](uint32_t v) { return loom::sdk::bf16_to_f32(static_cast<uint16_t>(v >> 16)); };
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * xs;
    for (int64_t p = p_begin; p < p_end; ++p) {
      const uint32_t* panel = panels + p * kp_n * kPanel;
      for (int64_t j = 0; j < kPanel && p * kPanel + j < w.out; ++j) {
        float acc = 0.0F;
        for (int64_t kp = 0; kp < kp_n; ++kp) {
          const uint32_t xv = bf16_pair(xt[2 * kp], 2 * kp + 1 < w.in ? xt[2 * kp + 1] : 0.0F);
          const uint32_t wv = panel[kp * kPanel + j];
          acc += lo(xv) * lo(wv);
          acc += hi(xv) * hi(wv);
        }
        y[t * ys + p * kPanel + j] = acc;
      }
    }
  }
}

}  // namespace loom_none
