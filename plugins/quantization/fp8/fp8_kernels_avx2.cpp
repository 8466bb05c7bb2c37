// AVX2 kernels of quantization/fp8, called only after cpu_has_avx2_fma(). E4M3 -> f32 in
// registers with bit moves instead of a table gather: the 7 exponent+mantissa bits shifted left
// by 20 land in f32's exponent and top mantissa bits, which read as the E4M3 value times 2^-120
// (subnormals included: they become f32 subnormals with the same digits), so one exact multiply
// by 2^120 gives the value; the sign bit moves to bit 31. Then the row scale, as the portable
// table lookup times the scale. (The NaN code would read as 480; quantize_row never writes it.
// Subnormal codes rely on denormals-are-zero being off, the default MXCSR.)
#include <immintrin.h>

#include <cstdint>

#include "fp8_format.hpp"

#ifdef LOOM_FP8_HAVE_AVX2

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "common/dequant_gemm_avx2.hpp"

namespace loom_fp8 {
namespace {

struct RowFp8 {
  const uint8_t* q;
  float scale;
  __m256 vec(int64_t k) const {
    const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + k)));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x80)), 24);
    const __m256i mag = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x7f)), 20);
    const __m256 v = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_or_si256(sign, mag)), _mm256_set1_ps(0x1p120f));
    return _mm256_mul_ps(v, _mm256_set1_ps(scale));
  }
  float one(int64_t k) const { return e4m3_to_f32(q[k]) * scale; }
};

void rows_of(const Fp8Weight& w, int64_t o0, int64_t n_rows, RowFp8* rows) {
  for (int64_t j = 0; j < n_rows; ++j)
    rows[j] = RowFp8{w.q.data() + (o0 + j) * w.in, w.scale[static_cast<size_t>(o0 + j)]};
}

}  // namespace

void tile_q_avx2(const Fp8Weight& w, int64_t o0, int64_t n_rows, const float* x, int64_t xs, int64_t n, float* y,
                 int64_t ys) {
  RowFp8 rows[loom_quant::kTile];
  rows_of(w, o0, n_rows, rows);
  loom_quant::avx2::tile<RowFp8>(rows, n_rows, x, xs, n, w.in, y, ys);
}

void dequant_avx2(const Fp8Weight& w, int64_t o0, int64_t n_rows, float* dst) {
  RowFp8 rows[loom_quant::kTile];
  rows_of(w, o0, n_rows, rows);
  loom_quant::avx2::dequant<RowFp8>(rows, n_rows, w.in, dst);
}

void tile_f32_avx2(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                   float* y, int64_t ys) {
  loom_quant::avx2::tile_f32(rows, n_rows, x, xs, n, in, y, ys);
}

}  // namespace loom_fp8

#pragma GCC pop_options

#endif  // LOOM_FP8_HAVE_AVX2
