// SDK: e^x for 8 floats with AVX2+FMA, shared by the core's SwiGLU and plugins' softmax. Callable
// only from code compiled for (or dispatched to) AVX2+FMA; the function carries that target
// itself, so including this header needs no ISA flag.
//
// Cephes-style: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so r is exact enough),
// e^r = 1 + r + r^2 p(r) with a degree-5 p, and 2^n built in the exponent bits. About 1 ulp
// wherever the result is a normal float. exp(0) is exactly 1 (r = 0 gives 1 + 0 + 0), which
// keeps equal-score softmax weights exact. Below ln(FLT_MIN) (including -inf) the result is 0,
// as std::exp's would underflow to; above ln(FLT_MAX) it is +inf. NaN stays NaN.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define LOOM_SDK_HAVE_EXP8_AVX2 1

#include <immintrin.h>

namespace loom::sdk {

__attribute__((target("avx2,fma"))) inline __m256 exp8_avx2(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.33654f);
  const __m256 hi = _mm256_set1_ps(88.3762626647949f);  // n = 127 at most: 2^n stays a float
  const __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  const __m256 over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  // max/min return their second operand for NaN, so NaN passes through both clamps.
  x = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
  // -126 <= n <= 127 after the clamps, so 2^n is a normal float.
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_huge_valf()), over);
  return _mm256_andnot_ps(under, y);
}

}  // namespace loom::sdk

#endif
