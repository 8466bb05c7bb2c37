// The int8 screen's AVX512-VNNI kernel (none_head_int8.hpp), called only after
// cpu_has_avx512_vnni().
//
// A panel's k4 step is one zmm: 16 output lanes of 4 biased weights, the unsigned operand of
// vpdpbusd; each row of x broadcasts its 4 signed bytes as the other. A block of 32 k is 8
// vpdpbusd per row, then the bias comes off exactly (sum over the block of (q_o + 128) q_x, less
// 128 sum_b), and the same float steps as the reference follow. Up to 8 rows share each weight
// load. LOOM_SIMD_EMULATE builds this file against SIMDe into loom_none::emulated.
#include <cstdint>
#include <cstring>

#include "none_head_int8.hpp"

#ifdef LOOM_NONE_HAVE_AVX2

#ifdef LOOM_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define LOOM_INT8_NAMESPACE loom_none::emulated
#else
#include <immintrin.h>
#define LOOM_INT8_NAMESPACE loom_none
// GCC 12 reports the _mm512_undefined_*() pass-through of the intrinsics' header as
// maybe-uninitialized (a false positive, as in none_head_screen_avx512.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace loom_none {
#ifndef LOOM_SIMD_EMULATE
bool cpu_has_avx512_vnni() {
  return cpu_has_avx512f() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
}
#endif
}  // namespace loom_none

namespace LOOM_INT8_NAMESPACE {

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vnni")
#endif

namespace {

using loom_none::Int8Head;
using loom_none::kInt8Block;
using loom_none::kPanel;

inline __attribute__((always_inline)) __m512i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// float(v) per lane, exact here (|S_b| < 2^24). SIMDe 0.7 has no _mm512_cvtepi32_ps: the
// emulation converts lane by lane.
inline __attribute__((always_inline)) __m512 to_float(__m512i v) {
#ifdef LOOM_SIMD_EMULATE
  alignas(64) int32_t i[16];
  alignas(64) float f[16];
  _mm512_store_si512(i, v);
  for (int l = 0; l < 16; ++l) f[l] = static_cast<float>(i[l]);
  return _mm512_load_ps(f);
#else
  return _mm512_cvtepi32_ps(v);
#endif
}

// Rows [t0, t0 + R) of x against panel p.
template <int R>
void tile(const Int8Head& h, int64_t p, int64_t t0, const int8_t* q, const float* e, const int32_t* sum, float* s,
          int64_t ss) {
  const int64_t k4s = h.in_pad / 4, nb = h.in_pad / kInt8Block;
  const uint8_t* w = h.q.data() + p * k4s * 64;
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m512i dot[R];
    for (int r = 0; r < R; ++r) dot[r] = _mm512_setzero_si512();
    for (int i = 0; i < 8; ++i) {
      const int64_t k4 = b * 8 + i;
      const uint8_t* wk = w + k4 * 64;
      if (t0 == 0) loom_none::stream_prefetch(wk);  // the later row tiles find the panel in L2
      const __m512i wv = _mm512_loadu_si512(wk);
      for (int r = 0; r < R; ++r) dot[r] = _mm512_dpbusd_epi32(dot[r], wv, bcast4(q + (t0 + r) * h.in_pad + 4 * k4));
    }
    for (int r = 0; r < R; ++r) {
      const __m512i exact = _mm512_sub_epi32(dot[r], _mm512_set1_epi32(128 * sum[(t0 + r) * nb + b]));
      acc[r] = _mm512_fmadd_ps(to_float(exact), _mm512_set1_ps(e[(t0 + r) * nb + b]), acc[r]);
    }
  }
  const __m512 d = _mm512_loadu_ps(h.scale.data() + p * kPanel);
  for (int r = 0; r < R; ++r) _mm512_storeu_ps(s + (t0 + r) * ss + p * kPanel, _mm512_mul_ps(acc[r], d));
}

}  // namespace

void head_screen_int8_vnni(const Int8Head& h, int64_t p_begin, int64_t p_end, const int8_t* q, const float* e,
                           const int32_t* sum, int64_t n, float* s, int64_t ss) {
  for (int64_t p = p_begin; p < p_end; ++p) {
    int64_t t = 0;
    for (; t + 8 <= n; t += 8) tile<8>(h, p, t, q, e, sum, s, ss);
    for (; t + 4 <= n; t += 4) tile<4>(h, p, t, q, e, sum, s, ss);
    for (; t < n; ++t) tile<1>(h, p, t, q, e, sum, s, ss);
  }
}

#pragma GCC pop_options

}  // namespace LOOM_INT8_NAMESPACE

#endif  // LOOM_NONE_HAVE_AVX2
