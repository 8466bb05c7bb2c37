// The two scans of linear_top_k's screen (none_head_screen.hpp) on AVX2, 8 outputs at a time, for
// CPUs without AVX-512F: the same steps as none_head_scan_avx512.cpp and screen_interval (no fused
// multiply-add), so the same ends and the same answers. On a 128k head at 32 rows the scalar forms
// cost as much as the int8 screen itself.
#include <cmath>
#include <cstdint>

#include "none_head_int8.hpp"

#ifdef LOOM_NONE_HAVE_AVX2

#include <immintrin.h>

namespace loom_none {

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

struct Ends {
  __m256 lo, up;
};

// screen_interval on outputs [o, o + 8) (s and norms padded to a multiple of 16 floats).
inline __attribute__((always_inline)) Ends ends(const float* s, const float* norms, int64_t o, const RowBound& b) {
  const __m256 sv = _mm256_loadu_ps(s + o);
  const __m256 e = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(b.c), _mm256_loadu_ps(norms + o)), _mm256_set1_ps(b.a));
  const __m256 mag = _mm256_andnot_ps(_mm256_set1_ps(-0.0F), sv);
  const __m256 e2 = _mm256_add_ps(_mm256_mul_ps(e, _mm256_set1_ps(1.0F + 0x1p-10F)),
                                  _mm256_mul_ps(mag, _mm256_set1_ps(0x1p-22F)));
  return Ends{_mm256_sub_ps(sv, e2), _mm256_add_ps(sv, e2)};
}

// The lanes of [o, o + 8) below out, as a movemask.
inline unsigned live(int64_t o, int64_t out) { return out - o >= 8 ? 0xFFU : (1U << (out - o)) - 1; }

}  // namespace

float screen_threshold_avx2(const float* s, const float* norms, int64_t out, const RowBound& b, int32_t k,
                            float* run) {
  int32_t kept = 0;  // run[0, kept): the largest lower ends so far, decreasing
  float bar = -INFINITY;
  unsigned bad = 0;
  alignas(32) float lo[8];
  for (int64_t o = 0; o < out; o += 8) {
    const unsigned lanes = live(o, out);
    const __m256 sv = _mm256_loadu_ps(s + o);
    // s - s is NaN exactly where s is infinite or NaN.
    bad |= lanes & static_cast<unsigned>(
                       _mm256_movemask_ps(_mm256_cmp_ps(_mm256_sub_ps(sv, sv), _mm256_setzero_ps(), _CMP_NEQ_UQ)));
    const Ends e = ends(s, norms, o, b);
    unsigned above =
        lanes & static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(e.lo, _mm256_set1_ps(bar), _CMP_GT_OQ)));
    if (above == 0) continue;
    _mm256_store_ps(lo, e.lo);
    for (; above != 0; above &= above - 1) {
      const float v = lo[__builtin_ctz(above)];
      if (v > bar) loom_none::keep_largest(v, run, k, &kept, &bar);
    }
  }
  if (bad != 0) return NAN;
  return kept < k ? -INFINITY : run[k - 1];
}

int64_t screen_candidates_avx2(const float* s, const float* norms, int64_t out, const RowBound& b, float t,
                               int32_t* cand, int64_t max) {
  int64_t count = 0;
  for (int64_t o = 0; o < out; o += 8) {
    const Ends e = ends(s, norms, o, b);
    unsigned reach =
        live(o, out) & static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(e.up, _mm256_set1_ps(t), _CMP_GE_OQ)));
    for (; reach != 0; reach &= reach - 1) {
      if (count == max) return -1;
      cand[count++] = static_cast<int32_t>(o + __builtin_ctz(reach));
    }
  }
  return count;
}

#pragma GCC pop_options

}  // namespace loom_none

#endif  // LOOM_NONE_HAVE_AVX2
