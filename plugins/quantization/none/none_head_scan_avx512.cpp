// The two passes of linear_top_k over one row's screened values (none_head_screen.hpp), 16
// outputs at a time with AVX-512F: the threshold (the k-th largest lower end) and the candidates
// (every output whose upper end reaches it). Each is a stream over out floats of s and of the
// norms, a few operations per output, short of the screen's cost only when vectorised: a 128k
// head at 32 rows is 4M outputs a call.
//
// Both take screen_interval's steps in its order (no fused multiply-add), so the vector and
// scalar forms give the same ends. LOOM_SIMD_EMULATE builds this file against SIMDe into
// loom_none::emulated, for tests on CPUs without AVX-512.
#include <cmath>
#include <cstdint>

#include "none_head_screen.hpp"

#ifdef LOOM_NONE_HAVE_AVX2

#ifdef LOOM_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define LOOM_SCAN_NAMESPACE loom_none::emulated
#else
#include <immintrin.h>
#define LOOM_SCAN_NAMESPACE loom_none
#endif

namespace LOOM_SCAN_NAMESPACE {

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f")
#endif

namespace {

using loom_none::RowBound;

// The ends of outputs [o, o + 16): screen_interval on 16 lanes.
struct Ends {
  __m512 lo, up;
};
inline __attribute__((always_inline)) Ends ends(const float* s, const float* norms, int64_t o, const RowBound& b) {
  const __m512 sv = _mm512_loadu_ps(s + o);
  const __m512 e = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(b.c), _mm512_loadu_ps(norms + o)), _mm512_set1_ps(b.a));
  const __m512 mag = _mm512_abs_ps(sv);
  const __m512 e2 = _mm512_add_ps(_mm512_mul_ps(e, _mm512_set1_ps(1.0F + 0x1p-10F)),
                                  _mm512_mul_ps(mag, _mm512_set1_ps(0x1p-22F)));
  return Ends{_mm512_sub_ps(sv, e2), _mm512_add_ps(sv, e2)};
}

// The lanes of [o, o + 16) below out.
inline __mmask16 live(int64_t o, int64_t out) {
  return out - o >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1U << (out - o)) - 1);
}

}  // namespace

float screen_threshold_avx512(const float* s, const float* norms, int64_t out, const RowBound& b, int32_t k,
                              float* run) {
  // run[0, kept): the largest lower ends so far, in decreasing order.
  int32_t kept = 0;
  float bar = -INFINITY;  // what a lower end must pass to enter: run[k - 1] once full
  __mmask16 bad = 0;
  alignas(64) float lo[16];
  for (int64_t o = 0; o < out; o += 16) {
    const __mmask16 lanes = live(o, out);
    const __m512 sv = _mm512_loadu_ps(s + o);
    // s - s is NaN exactly where s is infinite or NaN.
    bad |= lanes & _mm512_cmp_ps_mask(_mm512_sub_ps(sv, sv), _mm512_setzero_ps(), _CMP_NEQ_UQ);
    const Ends e = ends(s, norms, o, b);
    auto above = static_cast<unsigned>(lanes & _mm512_cmp_ps_mask(e.lo, _mm512_set1_ps(bar), _CMP_GT_OQ));
    if (above == 0) continue;
    _mm512_store_ps(lo, e.lo);
    for (; above != 0; above &= above - 1) {
      const float v = lo[__builtin_ctz(above)];
      if (v > bar) loom_none::keep_largest(v, run, k, &kept, &bar);
    }
  }
  if (bad != 0) return NAN;
  return kept < k ? -INFINITY : run[k - 1];
}

int64_t screen_candidates_avx512(const float* s, const float* norms, int64_t out, const RowBound& b, float t,
                                 int32_t* cand, int64_t max) {
  int64_t count = 0;
  for (int64_t o = 0; o < out; o += 16) {
    const Ends e = ends(s, norms, o, b);
    auto reach = static_cast<unsigned>(live(o, out) & _mm512_cmp_ps_mask(e.up, _mm512_set1_ps(t), _CMP_GE_OQ));
    for (; reach != 0; reach &= reach - 1) {
      if (count == max) return -1;
      cand[count++] = static_cast<int32_t>(o + __builtin_ctz(reach));
    }
  }
  return count;
}

#pragma GCC pop_options

}  // namespace LOOM_SCAN_NAMESPACE

#endif  // LOOM_NONE_HAVE_AVX2
