// Portable panel code: the load-time reordering into panels and the reference GEMM, plain C++
// the compiler vectorises for the baseline ISA. -ffp-contract=off keeps every multiply and add
// separately rounded, so the order stated in none_panel.hpp is the order executed.
#include <cstring>

#include "loom/sdk_half.hpp"
#include "none_panel.hpp"

namespace loom_none {
namespace {

// Panel rows widened at a time by the portable GEMM (a kBlockK x kPanel f32 block on the stack).
void widen_block(const PanelView& w, int64_t p, int64_t k0, int64_t kn, float* dst) {
  const int64_t base = (p * w.in + k0) * kPanel;
  const int64_t count = kn * kPanel;
  if (w.dtype == LOOM_DTYPE_F32) {
    std::memcpy(dst, static_cast<const float*>(w.data) + base, static_cast<size_t>(count) * sizeof(float));
    return;
  }
  const uint16_t* src = static_cast<const uint16_t*>(w.data) + base;
  if (w.dtype == LOOM_DTYPE_BF16) {
    for (int64_t i = 0; i < count; ++i) dst[i] = loom::sdk::bf16_to_f32(src[i]);
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = loom::sdk::f16_to_f32(src[i]);
  }
}

template <class T>
void pack_typed(const T* src, int64_t row_stride, const PanelView& w, T* dst, int64_t p_begin, int64_t p_end) {
  constexpr int64_t kStep = 64;  // k per pass: 16 source runs of 64 elements, a 1-2 KiB target
  for (int64_t p = p_begin; p < p_end; ++p) {
    T* panel = dst + p * w.in * kPanel;
    for (int64_t k0 = 0; k0 < w.in; k0 += kStep) {
      const int64_t k1 = k0 + kStep < w.in ? k0 + kStep : w.in;
      for (int64_t j = 0; j < kPanel; ++j) {
        const int64_t o = p * kPanel + j;
        if (o >= w.out) {
          for (int64_t k = k0; k < k1; ++k) panel[k * kPanel + j] = T{};
          continue;
        }
        const T* row = src + o * row_stride;
        for (int64_t k = k0; k < k1; ++k) panel[k * kPanel + j] = row[k];
      }
    }
  }
}

}  // namespace

void pack_panels(const void* src, int64_t row_stride, const PanelView& w, void* dst, int64_t p_begin,
                 int64_t p_end) {
  if (w.dtype == LOOM_DTYPE_F32) {
    pack_typed(static_cast<const float*>(src), row_stride, w, static_cast<float*>(dst), p_begin, p_end);
  } else {
    pack_typed(static_cast<const uint16_t*>(src), row_stride, w, static_cast<uint16_t*>(dst), p_begin, p_end);
  }
}

void panel_gemm_portable(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs,
                         int64_t n, float* y, int64_t ys, float* /*scratch*/) {
  constexpr int64_t kBlockK = 256;
  float block[kBlockK * kPanel];  // [kBlockK][kPanel]: one k block of one panel, widened
  for (int64_t p = p_begin; p < p_end; ++p) {
    const int64_t o0 = p * kPanel;
    const int64_t cols = w.out - o0 < kPanel ? w.out - o0 : kPanel;
    for (int64_t k0 = 0; k0 < w.in; k0 += kBlockK) {
      const int64_t kn = w.in - k0 < kBlockK ? w.in - k0 : kBlockK;
      widen_block(w, p, k0, kn, block);
      for (int64_t t = 0; t < n; ++t) {
        float acc[kPanel] = {};
        float* yt = y + t * ys + o0;
        if (k0 > 0)
          for (int64_t j = 0; j < cols; ++j) acc[j] = yt[j];
        const float* xt = x + t * xs + k0;
        for (int64_t k = 0; k < kn; ++k) {
          const float xv = xt[k];
          for (int64_t j = 0; j < kPanel; ++j) acc[j] += xv * block[k * kPanel + j];
        }
        for (int64_t j = 0; j < cols; ++j) yt[j] = acc[j];
      }
    }
  }
}

PanelKernels select_panel_kernels(bool allow_simd, bool allow_avx512) {
#ifdef LOOM_NONE_HAVE_AVX2
  if (allow_simd && allow_avx512 && cpu_has_avx512f())
    return PanelKernels{panel_gemm_avx512, "avx512f", pack_x_avx2, packed_gemm_avx512, kDecodeRowsAvx512 + 1};
  if (allow_simd && cpu_has_avx2_fma_f16c())
    return PanelKernels{panel_gemm_avx2, "avx2+fma", pack_x_avx2, packed_gemm_avx2};
#else
  (void)allow_simd;
  (void)allow_avx512;
#endif
  return PanelKernels{panel_gemm_portable, "portable"};
}

}  // namespace loom_none
