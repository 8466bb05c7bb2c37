// INT8 quantization and the portable kernels (see int8_format.hpp).
#include "int8_format.hpp"

#include <algorithm>
#include <cmath>

namespace loom_int8 {

namespace {
int8_t to_int8(float v) {
  const float r = std::nearbyint(v);  // the default rounding mode: half to even
  return static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
}
}  // namespace

void quantize_row(const float* v, const float* smooth, int64_t in, int8_t* q, float* scale) {
  float amax = 0;
  for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(smooth ? v[k] * smooth[k] : v[k]));
  *scale = amax / 127.0f;
  for (int64_t k = 0; k < in; ++k) q[k] = amax == 0 ? 0 : to_int8((smooth ? v[k] * smooth[k] : v[k]) / *scale);
}

void smoothing_factors(const float* act_absmax, const float* w_absmax, int64_t n, float alpha, float* s) {
  for (int64_t j = 0; j < n; ++j) {
    const float a = act_absmax[j], w = w_absmax[j];
    const bool usable = a > 0 && w > 0 && std::isfinite(a) && std::isfinite(w);
    s[j] = usable ? static_cast<float>(std::pow(double(a), double(alpha)) / std::pow(double(w), 1.0 - alpha)) : 1.0f;
  }
}

float quantize_activation(const float* x, const float* inv_smooth, int64_t in, int64_t in_pad, int8_t* xq) {
  float amax = 0;
  for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(inv_smooth ? x[k] * inv_smooth[k] : x[k]));
  const float scale = amax / 127.0f;
  for (int64_t k = 0; k < in; ++k) xq[k] = amax == 0 ? 0 : to_int8((inv_smooth ? x[k] * inv_smooth[k] : x[k]) / scale);
  for (int64_t k = in; k < in_pad; ++k) xq[k] = 0;
  return scale;
}

void dequant_portable(const Int8Weight& w, int64_t o0, int64_t n_rows, float* dst) {
  for (int64_t j = 0; j < n_rows; ++j) {
    const int8_t* q = w.q.data() + (o0 + j) * w.in_pad;
    const float s = w.scale[static_cast<size_t>(o0 + j)];
    for (int64_t k = 0; k < w.in; ++k) dst[j * w.in + k] = static_cast<float>(q[k]) * s;
  }
}

void dot_portable(const int8_t* const* rows, int64_t n_rows, const int8_t* xq, int64_t xqs, int64_t n, int64_t k_pad,
                  int32_t* acc, int64_t accs) {
  for (int64_t t = 0; t < n; ++t) {
    const int8_t* xr = xq + t * xqs;
    for (int64_t j = 0; j < n_rows; ++j) {
      int32_t s = 0;
      for (int64_t k = 0; k < k_pad; ++k) s += int32_t(xr[k]) * int32_t(rows[j][k]);
      acc[t * accs + j] = s;
    }
  }
}

Kernels select_kernels(bool allow_simd) {
#ifdef LOOM_INT8_HAVE_AVX2
  if (allow_simd && loom_quant::cpu_has_avx2_fma())
    return Kernels{{tile_q_avx2, dequant_avx2, tile_f32_avx2, "avx2+fma"}, dot_avx2};
#else
  (void)allow_simd;
#endif
  return Kernels{{nullptr, dequant_portable, loom_quant::tile_f32_portable, "portable"}, dot_portable};
}

}  // namespace loom_int8
