// The int8 screen's AVX2 kernel (none_head_int8.hpp), called only after cpu_has_avx2_fma_f16c().
//
// A panel's k4 step is 64 bytes: 16 output lanes of 4 biased weights, two ymm (outputs 0-7 and
// 8-15). Unbiased by xor 0x80, |q_o| meets q_x with q_o's sign in one maddubs (pairs of at most
// 2 * 127 * 127: no saturation) and a madd makes them int32 per output lane, so a block of 32 k
// ends as 16 exact sums with no horizontal reduction. Each of up to 4 rows of x broadcasts its 4
// bytes against the same unpacked weights. A thread's panels stream from memory, prefetched
// kStreamAhead ahead by the first row tile as the decode kernels do; the later tiles find the
// panel in L2.
#include "none_head_int8.hpp"

#ifdef LOOM_NONE_HAVE_AVX2

#include <immintrin.h>

#include <cstring>

namespace loom_none {

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

inline __attribute__((always_inline)) __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Rows [t0, t0 + R) of x against panel p.
template <int R>
void tile(const Int8Head& h, int64_t p, int64_t t0, const int8_t* q, const float* e, float* s, int64_t ss) {
  const int64_t k4s = h.in_pad / 4, nb = h.in_pad / kInt8Block;
  const uint8_t* w = h.q.data() + p * k4s * 64;
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i sum[R][2];
    for (int i = 0; i < 8; ++i) {
      const int64_t k4 = b * 8 + i;
      const uint8_t* wk = w + k4 * 64;
      if (t0 == 0) stream_prefetch(wk);  // the later row tiles find the panel in L2
      const __m256i w0 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk)), bias);
      const __m256i w1 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + 32)), bias);
      const __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
      for (int r = 0; r < R; ++r) {
        const __m256i xb = bcast4(q + (t0 + r) * h.in_pad + 4 * k4);
        const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(xb, w0)), ones);
        const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(a1, _mm256_sign_epi8(xb, w1)), ones);
        sum[r][0] = i == 0 ? p0 : _mm256_add_epi32(sum[r][0], p0);
        sum[r][1] = i == 0 ? p1 : _mm256_add_epi32(sum[r][1], p1);
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256 eb = _mm256_set1_ps(e[(t0 + r) * nb + b]);
      acc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r][0]), eb, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r][1]), eb, acc[r][1]);
    }
  }
  const __m256 d0 = _mm256_loadu_ps(h.scale.data() + p * kPanel);
  const __m256 d1 = _mm256_loadu_ps(h.scale.data() + p * kPanel + 8);
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(s + (t0 + r) * ss + p * kPanel, _mm256_mul_ps(acc[r][0], d0));
    _mm256_storeu_ps(s + (t0 + r) * ss + p * kPanel + 8, _mm256_mul_ps(acc[r][1], d1));
  }
}

}  // namespace

void head_screen_int8_avx2(const Int8Head& h, int64_t p_begin, int64_t p_end, const int8_t* q, const float* e,
                           const int32_t*, int64_t n, float* s, int64_t ss) {
  for (int64_t p = p_begin; p < p_end; ++p) {
    int64_t t = 0;
    for (; t + 4 <= n; t += 4) tile<4>(h, p, t, q, e, s, ss);
    switch (n - t) {
      case 3: tile<3>(h, p, t, q, e, s, ss); break;
      case 2: tile<2>(h, p, t, q, e, s, ss); break;
      case 1: tile<1>(h, p, t, q, e, s, ss); break;
      default: break;
    }
  }
}

#pragma GCC pop_options

}  // namespace loom_none

#endif  // LOOM_NONE_HAVE_AVX2
