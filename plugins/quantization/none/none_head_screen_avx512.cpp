// The screen kernel of linear_top_k (none_head_screen.hpp): every output of a head estimated with
// AVX512-BF16 vdpbf16ps straight from the exact path's panels, called only after
// cpu_has_avx512_bf16().
//
// Why: a 128k-262k vocabulary head dominates a small model's decode compute, and the exact f32
// FMA chains are compute-bound from about 8 rows on; vdpbf16ps does two multiply-adds per f32
// lane and instruction, and no second, bf16 copy of the weight is kept (memory matters).
//
// Panel rows k and k + 1 (k even) are 2 x 16 adjacent elements: one 64-byte load for bf16; two
// 32-byte loads widened (vcvtph2ps) for f16, two 64-byte loads for f32, then vcvtne2ps2bf16. One
// vpermw interleaves them into the 16 (w[k][j], w[k+1][j]) pairs vdpbf16ps takes, and that shuffle
// serves every row of the tile: R rows by P panels of accumulators, each row's x pair broadcast.
// An odd `in`'s last k pairs with zero. A thread's panels go 4 at a time, the row tiles passing
// over them while they sit in L2; the first tile streams them in, prefetching kStreamAhead ahead
// as the decode kernels do.
//
// LOOM_SIMD_EMULATE builds this file against SIMDe into loom_none::emulated (SIMDe 0.7 has no
// vcvtne2ps2bf16: emulated here with nearest-even rounding, without its denormals-as-zero, which
// the bound allows for anyway).
#include <cstdint>
#include <cstring>

#include "none_bf16.hpp"
#include "none_head_screen.hpp"

#ifdef LOOM_NONE_HAVE_AVX2

#ifdef LOOM_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define LOOM_SCREEN_NAMESPACE loom_none::emulated
#else
#include <immintrin.h>
#define LOOM_SCREEN_NAMESPACE loom_none
// GCC 12 reports the _mm512_undefined_*() pass-through of _mm512_cvtph_ps and friends as
// maybe-uninitialized (a false positive inside the intrinsics' header).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace LOOM_SCREEN_NAMESPACE {

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512bf16")
#endif

namespace {

using loom_none::kPanel;
using loom_none::PanelView;

#include "none_load_avx512.hpp"

inline __attribute__((always_inline)) __m512bh as_bh(__m512i v) {
  __m512bh r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}

// 32 bf16: lanes 0-15 bf16(lo), 16-31 bf16(hi), rounded to nearest even.
inline __attribute__((always_inline)) __m512i to_bf16(__m512 hi, __m512 lo) {
#ifdef LOOM_SIMD_EMULATE
  alignas(64) float f[32];
  alignas(64) uint16_t h[32];
  _mm512_store_ps(f, lo);
  _mm512_store_ps(f + 16, hi);
  for (int i = 0; i < 32; ++i) h[i] = static_cast<uint16_t>(loom_none::bf16_pair(f[i], 0.0F));
  return _mm512_load_si512(h);
#else
  const __m512bh b = _mm512_cvtne2ps_pbh(hi, lo);
  __m512i r;
  std::memcpy(&r, &b, sizeof r);
  return r;
#endif
}

// Panel rows k and k + 1 as 32 bf16 (row k in lanes 0-15); last(): row k alone, zero above.
struct PairsBF16 {
  using T = uint16_t;
  static __m512i two(const uint16_t* p) { return _mm512_loadu_si512(p); }
  static __m512i last(const uint16_t* p) {
    return _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), 0);
  }
  static void prefetch(const uint16_t* p) { loom_none::stream_prefetch(p); }
};
struct PairsF16 {
  using T = uint16_t;
  static __m512i two(const uint16_t* p) { return to_bf16(LoadF16::vec(p + kPanel), LoadF16::vec(p)); }
  static __m512i last(const uint16_t* p) { return to_bf16(_mm512_setzero_ps(), LoadF16::vec(p)); }
  static void prefetch(const uint16_t* p) { loom_none::stream_prefetch(p); }
};
struct PairsF32 {
  using T = float;
  static __m512i two(const float* p) { return to_bf16(_mm512_loadu_ps(p + kPanel), _mm512_loadu_ps(p)); }
  static __m512i last(const float* p) { return to_bf16(_mm512_setzero_ps(), _mm512_loadu_ps(p)); }
  static void prefetch(const float* p) {  // a k pair is two lines
    loom_none::stream_prefetch(p);
    loom_none::stream_prefetch(p + kPanel);
  }
};

// vpermw's indices: lane 2j takes element j (row k), lane 2j + 1 element 16 + j (row k + 1).
inline __m512i pair_order() {
  alignas(64) uint16_t idx[32];
  for (int j = 0; j < 16; ++j) {
    idx[2 * j] = static_cast<uint16_t>(j);
    idx[2 * j + 1] = static_cast<uint16_t>(16 + j);
  }
  return _mm512_load_si512(idx);
}

// s[r * ss + 16 p + j] (r < R, p < P) = the vdpbf16ps chain over every k pair of row r's x pairs
// xp[r * kpn + kp] and panel p's weights, panels ps elements apart.
template <class Load, int R, int P>
inline __attribute__((always_inline)) void tile(const typename Load::T* w, int64_t ps, int64_t in, const uint32_t* xp,
                                                int64_t kpn, float* s, int64_t ss, bool stream) {
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  const __m512i order = pair_order();
  const auto step = [&](int64_t kp, bool last) __attribute__((always_inline)) {
    __m512bh wv[P];
    for (int p = 0; p < P; ++p) {
      const typename Load::T* at = w + p * ps + 2 * kp * kPanel;
      if (stream) Load::prefetch(at);
      wv[p] = as_bh(_mm512_permutexvar_epi16(order, last ? Load::last(at) : Load::two(at)));
    }
    for (int r = 0; r < R; ++r) {
      const __m512bh xb = as_bh(_mm512_set1_epi32(static_cast<int>(xp[r * kpn + kp])));
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_dpbf16_ps(acc[r][p], xb, wv[p]);
    }
  };
  const int64_t whole = in / 2;
  for (int64_t kp = 0; kp < whole; ++kp) step(kp, false);
  if (in % 2 != 0) step(whole, true);
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) _mm512_storeu_ps(s + r * ss + p * kPanel, acc[r][p]);
}

// R rows over g panels from w: P at a time, then one by one.
template <class Load, int R, int P>
void rows_over_panels(const typename Load::T* w, int64_t ps, int64_t g, int64_t in, const uint32_t* xp, int64_t kpn,
                      float* s, int64_t ss, bool stream) {
  int64_t p = 0;
  for (; p + P <= g; p += P) tile<Load, R, P>(w + p * ps, ps, in, xp, kpn, s + p * kPanel, ss, stream);
  for (; p < g; ++p) tile<Load, R, 1>(w + p * ps, ps, in, xp, kpn, s + p * kPanel, ss, stream);
}

constexpr int64_t kMaxRows = 12;  // rows per tile: 12 x 2 panels = 24 of the 32 zmm
constexpr int64_t kGroup = 4;     // panels the row tiles pass over together

// Up to 5 rows take 4 panels (4-20 accumulators: enough chains for one row), more take 2.
template <class Load>
void row_tile(int64_t rows, const typename Load::T* w, int64_t ps, int64_t g, int64_t in, const uint32_t* xp,
              int64_t kpn, float* s, int64_t ss, bool stream) {
  switch (rows) {
    case 1: rows_over_panels<Load, 1, 4>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 2: rows_over_panels<Load, 2, 4>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 3: rows_over_panels<Load, 3, 4>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 4: rows_over_panels<Load, 4, 4>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 5: rows_over_panels<Load, 5, 4>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 6: rows_over_panels<Load, 6, 2>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 7: rows_over_panels<Load, 7, 2>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 8: rows_over_panels<Load, 8, 2>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 9: rows_over_panels<Load, 9, 2>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 10: rows_over_panels<Load, 10, 2>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    case 11: rows_over_panels<Load, 11, 2>(w, ps, g, in, xp, kpn, s, ss, stream); break;
    default: rows_over_panels<Load, 12, 2>(w, ps, g, in, xp, kpn, s, ss, stream); break;
  }
}

// The n rows in ceil(n / kMaxRows) tiles of near-equal size (13 rows: 7 + 6, not 12 + 1).
template <class Load>
void screen(const PanelView& w, int64_t p_begin, int64_t p_end, const uint32_t* xp, int64_t n, float* s, int64_t ss) {
  using T = typename Load::T;
  const T* wd = static_cast<const T*>(w.data);
  const int64_t ps = w.in * kPanel, kpn = loom_none::pairs_of(w.in);
  const int64_t tiles = (n + kMaxRows - 1) / kMaxRows;
  for (int64_t p0 = p_begin; p0 < p_end; p0 += kGroup) {
    const int64_t g = p_end - p0 < kGroup ? p_end - p0 : kGroup;
    int64_t t0 = 0;
    for (int64_t i = 0; i < tiles; ++i) {
      const int64_t rows = n / tiles + (i < n % tiles ? 1 : 0);
      row_tile<Load>(rows, wd + p0 * ps, ps, g, w.in, xp + t0 * kpn, kpn, s + t0 * ss + p0 * kPanel, ss, i == 0);
      t0 += rows;
    }
  }
}

}  // namespace

void head_screen_avx512bf16(const PanelView& w, int64_t p_begin, int64_t p_end, const uint32_t* xp, int64_t n,
                            float* s, int64_t ss) {
  if (n <= 0) return;
  switch (w.dtype) {
    case LOOM_DTYPE_F16: screen<PairsF16>(w, p_begin, p_end, xp, n, s, ss); break;
    case LOOM_DTYPE_BF16: screen<PairsBF16>(w, p_begin, p_end, xp, n, s, ss); break;
    default: screen<PairsF32>(w, p_begin, p_end, xp, n, s, ss); break;
  }
}

#pragma GCC pop_options

}  // namespace LOOM_SCREEN_NAMESPACE

#endif  // LOOM_NONE_HAVE_AVX2
