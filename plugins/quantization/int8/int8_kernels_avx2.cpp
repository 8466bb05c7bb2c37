// AVX2 kernels of quantization/int8, called only after cpu_has_avx2_fma().
//   w8a16: int8 -> i32 -> f32, times the row scale, in registers (the portable dequant's values).
//   w8a8: 32 int8 products per step with the sign trick: maddubs(|x|, sign(w, x)) multiplies
//         the unsigned |x| by w carrying x's sign, summing pairs into int16 (at most
//         2 * 127 * 127 = 32258, so never saturating), then madd with ones widens to int32.
#include <immintrin.h>

#include <cstdint>

#include "int8_format.hpp"

#ifdef LOOM_INT8_HAVE_AVX2

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "common/dequant_gemm_avx2.hpp"

namespace loom_int8 {
namespace {

struct RowInt8 {
  const int8_t* q;
  float scale;
  __m256 vec(int64_t k) const {
    const __m256i i = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + k)));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(i), _mm256_set1_ps(scale));
  }
  float one(int64_t k) const { return static_cast<float>(q[k]) * scale; }
};

void rows_of(const Int8Weight& w, int64_t o0, int64_t n_rows, RowInt8* rows) {
  for (int64_t j = 0; j < n_rows; ++j)
    rows[j] = RowInt8{w.q.data() + (o0 + j) * w.in_pad, w.scale[static_cast<size_t>(o0 + j)]};
}

inline __attribute__((always_inline)) __m256i dot32(__m256i x, __m256i w) {
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(w, x));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

inline int32_t hsum(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i s2 = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xb1)));
}

// R activation rows against one weight row: each weight vector is loaded once for R products.
template <int R>
void dot_rows(const int8_t* w, const int8_t* xq, int64_t xqs, int64_t k_pad, int32_t* acc, int64_t accs) {
  __m256i a[R];
  for (int r = 0; r < R; ++r) a[r] = _mm256_setzero_si256();
  for (int64_t k = 0; k < k_pad; k += 32) {
    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k));
    for (int r = 0; r < R; ++r)
      a[r] = _mm256_add_epi32(a[r], dot32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + r * xqs + k)), wv));
  }
  for (int r = 0; r < R; ++r) acc[r * accs] = hsum(a[r]);
}

}  // namespace

void tile_q_avx2(const Int8Weight& w, int64_t o0, int64_t n_rows, const float* x, int64_t xs, int64_t n, float* y,
                 int64_t ys) {
  RowInt8 rows[loom_quant::kTile];
  rows_of(w, o0, n_rows, rows);
  loom_quant::avx2::tile<RowInt8>(rows, n_rows, x, xs, n, w.in, y, ys);
}

void dequant_avx2(const Int8Weight& w, int64_t o0, int64_t n_rows, float* dst) {
  RowInt8 rows[loom_quant::kTile];
  rows_of(w, o0, n_rows, rows);
  loom_quant::avx2::dequant<RowInt8>(rows, n_rows, w.in, dst);
}

void tile_f32_avx2(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                   float* y, int64_t ys) {
  loom_quant::avx2::tile_f32(rows, n_rows, x, xs, n, in, y, ys);
}

void dot_avx2(const int8_t* const* rows, int64_t n_rows, const int8_t* xq, int64_t xqs, int64_t n, int64_t k_pad,
              int32_t* acc, int64_t accs) {
  int64_t t = 0;
  for (; t + 4 <= n; t += 4)
    for (int64_t j = 0; j < n_rows; ++j) dot_rows<4>(rows[j], xq + t * xqs, xqs, k_pad, acc + t * accs + j, accs);
  for (; t < n; ++t)
    for (int64_t j = 0; j < n_rows; ++j) dot_rows<1>(rows[j], xq + t * xqs, xqs, k_pad, acc + t * accs + j, accs);
}

}  // namespace loom_int8

#pragma GCC pop_options

#endif  // LOOM_INT8_HAVE_AVX2
