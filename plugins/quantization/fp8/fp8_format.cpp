// E4M3 conversions, row quantization and the portable dequantization (see fp8_format.hpp).
#include "fp8_format.hpp"

#include <array>
#include <cmath>

namespace loom_fp8 {

uint8_t f32_to_e4m3(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return sign | 0x7f;
  const float a = std::fabs(f);
  if (a >= 448.0f) return sign | 0x7e;  // saturate: 448 = 1.75 * 2^8, code 0.1111.110
  if (a < 0x1p-6f) {
    // Subnormals m * 2^-9, m = 0..7; m = 8 rounds up into the smallest normal, code 0x08.
    return sign | static_cast<uint8_t>(std::nearbyint(std::ldexp(a, 9)));
  }
  int e2 = 0;
  std::frexp(a, &e2);                                                           // a = f * 2^e2, f in [0.5, 1)
  int e = e2 - 1;                                                               // a = (1 + m / 8) * 2^e, e in [-6, 8]
  int m = static_cast<int>(std::nearbyint((std::ldexp(a, -e) - 1.0f) * 8.0f));  // exact before rounding
  if (m == 8) {
    m = 0;
    ++e;
  }
  // a < 448 keeps (e, m) at or below (8, 6): never the NaN code.
  return sign | static_cast<uint8_t>(((e + 7) << 3) | m);
}

namespace {
std::array<float, 256> make_table() {
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const int e = (c >> 3) & 0xf, m = c & 7;
    float v = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(static_cast<float>(8 + m), e - 10);
    if (e == 15 && m == 7) v = NAN;
    t[static_cast<size_t>(c)] = (c & 0x80) ? -v : v;
  }
  return t;
}
const std::array<float, 256> kTable = make_table();
}  // namespace

float e4m3_to_f32(uint8_t code) { return kTable[code]; }

void quantize_row(const float* v, int64_t in, uint8_t* q, float* scale) {
  float amax = 0;
  for (int64_t k = 0; k < in; ++k) amax = std::fmax(amax, std::fabs(v[k]));
  *scale = amax / 448.0f;
  for (int64_t k = 0; k < in; ++k) q[k] = amax == 0 ? 0 : f32_to_e4m3(v[k] / *scale);
}

void dequant_portable(const Fp8Weight& w, int64_t o0, int64_t n_rows, float* dst) {
  for (int64_t j = 0; j < n_rows; ++j) {
    const uint8_t* q = w.q.data() + (o0 + j) * w.in;
    const float s = w.scale[static_cast<size_t>(o0 + j)];
    for (int64_t k = 0; k < w.in; ++k) dst[j * w.in + k] = kTable[q[k]] * s;
  }
}

loom_quant::DequantKernels<Fp8Weight> select_kernels(bool allow_simd) {
#ifdef LOOM_FP8_HAVE_AVX2
  if (allow_simd && loom_quant::cpu_has_avx2_fma()) return {tile_q_avx2, dequant_avx2, tile_f32_avx2, "avx2+fma"};
#else
  (void)allow_simd;
#endif
  return {nullptr, dequant_portable, loom_quant::tile_f32_portable, "portable"};
}

}  // namespace loom_fp8
