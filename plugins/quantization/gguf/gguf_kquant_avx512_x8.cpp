// AVX-512 kernels (F, BW, VL, VNNI) on Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS weights in the
// K-quant x8 layout (gguf_kquant_x8.hpp): each chunk's four u8 x s8 products added straight into
// int32 by vpdpbusd, a sub-block's sum then times its scale (vpmulld), the mins' sums by
// vpdpwssd; 8 activation rows share each unpacked record (32 registers). Two adjacent groups go
// through one zmm (16 weight rows: one broadcast of 4 activation bytes and one vpdpbusd serve
// both, which took Q4_K/Q5_K prefill from about 135 to 170 GMAC/s on a Zen 4 core); a lone last
// group through ymm. One set of sums, written over the vector type (YmmOps, ZmmOps).
// IQ4_XS's levels go in unsigned (kIQ4NL + 128), the 128 * scale * sum(a) taken off like a min.
// Called only after cpu_has_avx512_kquant().
//
// Same integers, same bits as the AVX2 and portable kernels; tests/conformance checks it
// natively where the CPU has VNNI and on any AVX2 CPU by compiling this file against SIMDe
// (LOOM_SIMD_EMULATE: the entry point moves to namespace loom_gguf::emulated).
#include <cstdint>
#include <cstring>

#include "gguf_kquant_x8.hpp"
#include "gguf_stream_prefetch.hpp"
#include "loom/sdk_gguf_blocks.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

// GCC 12 flags the undefined-vector idiom inside its own AVX-512 intrinsics as uninitialized when
// they inline; a false positive, as in none_panel_avx512.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#ifdef LOOM_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define LOOM_KQ_VNNI_NAMESPACE loom_gguf::emulated
#else
#include <immintrin.h>
#define LOOM_KQ_VNNI_NAMESPACE loom_gguf
#endif

namespace LOOM_KQ_VNNI_NAMESPACE {

namespace g = loom::sdk::gguf;
using loom_gguf::KQuantPackedKernels;
using loom_gguf::kKQuantSide;

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#endif

namespace {

#include "gguf_kquant_x8_gemm.hpp"

// The VNNI operations on a vector type, beside the unpacking ones (gguf_kquant_x8_gemm.hpp).
// Always inlined: the emulated build (SIMDe, no AVX-512 ABI) must not pass zmm values by call.
#define AI inline __attribute__((always_inline))
struct YmmOps : Ymm {
  static AI I zero() { return _mm256_setzero_si256(); }
  static AI I set32(int32_t v) { return _mm256_set1_epi32(v); }
  static AI I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static AI I sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static AI I mullo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static AI I srai32(I a, int n) { return _mm256_srai_epi32(a, n); }
  static AI I dpbusd(I acc, I u, I s) { return _mm256_dpbusd_epi32(acc, u, s); }
  static AI I dpwssd(I acc, I a, I b) { return _mm256_dpwssd_epi32(acc, a, b); }
  static AI I shuffle8(I table16, I idx) { return _mm256_shuffle_epi8(table16, idx); }
  static AI I table16(__m128i t) { return _mm256_broadcastsi128_si256(t); }
  template <bool kSigned>
  static AI I pairs(const uint8_t* ra, const uint8_t*, int64_t off) { return kq_pairs<kSigned>(ra + off); }
  template <int64_t kBytes>
  static AI void prefetch(const uint8_t* ra, const uint8_t*, int s) { kq_prefetch_part<kBytes>(ra, s); }
};
struct ZmmOps {
  using I = __m512i;
  static AI I load(const uint8_t* ra, const uint8_t* rb, int64_t off) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(kq_load(ra + off)), kq_load(rb + off), 1);
  }
  static AI I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static AI I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static AI I set8(char v) { return _mm512_set1_epi8(v); }
  static AI I srli16(I a, int n) { return _mm512_srli_epi16(a, n); }
  static AI I slli16(I a, int n) { return _mm512_slli_epi16(a, n); }
  static AI I slli32(I a, int n) { return _mm512_slli_epi32(a, n); }
  static AI I srli32(I a, int n) { return _mm512_srli_epi32(a, n); }
  static AI I zero() { return _mm512_setzero_si512(); }
  static AI I set32(int32_t v) { return _mm512_set1_epi32(v); }
  static AI I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static AI I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static AI I mullo(I a, I b) { return _mm512_mullo_epi32(a, b); }
  // As two ymm halves: SIMDe (the emulated build) has no 512-bit arithmetic shift; only the
  // scales take it, once per sub-block.
  static AI I srai32(I a, int n) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srai_epi32(_mm512_castsi512_si256(a), n)),
                              _mm256_srai_epi32(_mm512_extracti64x4_epi64(a, 1), n), 1);
  }
  static AI I dpbusd(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
  static AI I dpwssd(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }
  static AI I shuffle8(I table16, I idx) { return _mm512_shuffle_epi8(table16, idx); }
  static AI I table16(__m128i t) { return _mm512_broadcast_i32x4(t); }
  template <bool kSigned>
  static AI I pairs(const uint8_t* ra, const uint8_t* rb, int64_t off) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(kq_pairs<kSigned>(ra + off)), kq_pairs<kSigned>(rb + off), 1);
  }
  template <int64_t kBytes>
  static AI void prefetch(const uint8_t* ra, const uint8_t* rb, int s) {
    kq_prefetch_part<kBytes>(ra, s);
    kq_prefetch_part<kBytes>(rb, s);
  }
};

#undef AI

template <class V>
inline __attribute__((always_inline)) typename V::I bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return V::set32(v);
}

// The 32-value sums of one sub-block (chunks j = 0..3, lo and hi in separate chains).
template <class V, loom_dtype T, int R>
inline __attribute__((always_inline)) void chunk_sums(const uint8_t* ra, const uint8_t* rb,
                                                      const g::BlockQ8_K* const* a, int64_t b, int s,
                                                      typename V::I* lo_sum, typename V::I* hi_sum) {
  using I = typename V::I;
  // IQ4_XS: kIQ4NL + 128, 1..241 (the byte add wraps -127..113 there).
  const I levels = V::table16(
      _mm_add_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g::kIQ4NL)), _mm_set1_epi8(-128)));
  for (int r = 0; r < R; ++r) lo_sum[r] = hi_sum[r] = V::zero();
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    I lo, hi;
    kq_codes<T, V>(ra, rb, s, j, &lo, &hi);
    if constexpr (T == LOOM_DTYPE_IQ4_XS) {
      lo = V::shuffle8(levels, lo);
      hi = V::shuffle8(levels, hi);
    }
    for (int r = 0; r < R; ++r) {
      const int8_t* q = a[r][b].qs + 32 * s + 4 * j;
      lo_sum[r] = V::dpbusd(lo_sum[r], lo, bcast4<V>(q));
      hi_sum[r] = V::dpbusd(hi_sum[r], hi, bcast4<V>(q + 16));
    }
  }
}

// The sums of a record (two, for Zmm), by format. Each is sums<V, R>(ra, rb, a, b, side, isum,
// msum).

// Q4_K, Q5_K and IQ4_XS: 32-value sub-blocks. Q4_K/Q5_K: unsigned 6-bit scales and mins.
// IQ4_XS: signed scales; sum_s ls_s <level_s + 128, a_s> less 128 * sum_s ls_s * sum(a_s), its
// scales in the mins' place.
template <loom_dtype T>
struct ThirtyTwo {
  using Layout = KQuantRecord<T>;
  static constexpr bool kIq4 = T == LOOM_DTYPE_IQ4_XS;
  template <class V, int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* ra, const uint8_t* rb,
                                                         const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, typename V::I* isum,
                                                         typename V::I* msum) {
    using I = typename V::I;
    const I low16 = V::set32(0xFFFF);
    for (int r = 0; r < R; ++r) isum[r] = msum[r] = V::zero();
    for (int p = 0; p < 4; ++p) {
      const I scp = V::template pairs<kIq4>(ra, rb, Layout::kScaleAt + 16 * p);
      for (int h = 0; h < 2; ++h) {
        V::template prefetch<Layout::kBytes>(ra, rb, 2 * p + h);
        I sc;
        if constexpr (kIq4)
          sc = h == 0 ? V::srai32(V::slli32(scp, 16), 16) : V::srai32(scp, 16);
        else
          sc = h == 0 ? V::and_(scp, low16) : V::srli32(scp, 16);
        I lo_sum[R], hi_sum[R];
        chunk_sums<V, T, R>(ra, rb, a, b, 2 * p + h, lo_sum, hi_sum);
        for (int r = 0; r < R; ++r) isum[r] = V::add(isum[r], V::mullo(V::add(lo_sum[r], hi_sum[r]), sc));
      }
      const I mn = kIq4 ? scp : V::template pairs<false>(ra, rb, Layout::kMinAt + 16 * p);
      for (int r = 0; r < R; ++r) msum[r] = V::dpwssd(msum[r], mn, V::set32(side[r][b * kKQuantSide + 8 + p]));
    }
    if constexpr (kIq4)
      for (int r = 0; r < R; ++r) isum[r] = V::sub(isum[r], V::slli32(msum[r], 7));
  }
};

// Q6_K: lo and hi of a chunk are 16-value sub-blocks 2s and 2s + 1, int8 scales; the -32 as
// 32 * sum_s scale_s * bsum_s.
struct Q6 {
  using Layout = KQuantRecord<LOOM_DTYPE_Q6_K>;
  template <class V, int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* ra, const uint8_t* rb,
                                                         const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, typename V::I* isum,
                                                         typename V::I* msum) {
    using I = typename V::I;
    for (int r = 0; r < R; ++r) isum[r] = msum[r] = V::zero();
    for (int s = 0; s < 8; ++s) {
      V::template prefetch<Layout::kBytes>(ra, rb, s);
      const I scp = V::template pairs<true>(ra, rb, Layout::kScaleAt + 16 * s);
      const I sc_lo = V::srai32(V::slli32(scp, 16), 16), sc_hi = V::srai32(scp, 16);
      I lo_sum[R], hi_sum[R];
      chunk_sums<V, LOOM_DTYPE_Q6_K, R>(ra, rb, a, b, s, lo_sum, hi_sum);
      for (int r = 0; r < R; ++r) {
        isum[r] = V::add(isum[r], V::add(V::mullo(lo_sum[r], sc_lo), V::mullo(hi_sum[r], sc_hi)));
        msum[r] = V::dpwssd(msum[r], scp, V::set32(side[r][b * kKQuantSide + s]));
      }
    }
    for (int r = 0; r < R; ++r) isum[r] = V::sub(isum[r], V::slli32(msum[r], 5));
  }
};

// Q2_K (unsigned 4-bit scales and mins) and Q3_K (signed scales, codes - 4 through the bsums):
// 16-value sub-blocks 4m + q, one chain of 4 chunks each.
template <loom_dtype T>
struct TwoBit {
  using Layout = KQuant2Record<T>;
  template <class V, int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* ra, const uint8_t* rb,
                                                         const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, typename V::I* isum,
                                                         typename V::I* msum) {
    using I = typename V::I;
    const I nibble16 = V::set32(0x000F000F), nibble32 = V::set32(0xF);
    for (int r = 0; r < R; ++r) isum[r] = msum[r] = V::zero();
    for (int m = 0; m < 4; ++m) {
      for (int hp = 0; hp < 2; ++hp) {
        const int p = 2 * m + hp;
        V::template prefetch<Layout::kBytes>(ra, rb, p);
        const I scp = V::template pairs<Layout::kQ3>(ra, rb, Layout::kScaleAt + 16 * p);
        // Q2_K: the mins' pairs; Q3_K: the scales' (for the -4).
        const I mp = Layout::kQ3 ? scp : V::and_(V::srli16(scp, 4), nibble16);
        for (int r = 0; r < R; ++r) msum[r] = V::dpwssd(msum[r], mp, V::set32(side[r][b * kKQuantSide + p]));
        for (int h = 0; h < 2; ++h) {
          const int q = 2 * hp + h;
          I sc;
          if constexpr (Layout::kQ3)
            sc = h == 0 ? V::srai32(V::slli32(scp, 16), 16) : V::srai32(scp, 16);
          else
            sc = V::and_(h == 0 ? scp : V::srli32(scp, 16), nibble32);
          I acc[R];
          for (int r = 0; r < R; ++r) acc[r] = V::zero();
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j) {
            const I c = kq_codes2<T, V>(ra, rb, m, q, j);
            for (int r = 0; r < R; ++r) acc[r] = V::dpbusd(acc[r], c, bcast4<V>(a[r][b].qs + 64 * m + 16 * q + 4 * j));
          }
          for (int r = 0; r < R; ++r) isum[r] = V::add(isum[r], V::mullo(acc[r], sc));
        }
      }
    }
    if constexpr (Layout::kQ3)
      for (int r = 0; r < R; ++r) isum[r] = V::sub(isum[r], V::slli32(msum[r], 2));
  }
};

// One group through ymm: a format's sums in the shape kq_group_rows (gguf_kquant_x8_gemm.hpp)
// calls.
template <class S>
struct OneGroup {
  using Layout = typename S::Layout;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, __m256i* isum, __m256i* msum) {
    S::template sums<YmmOps, R>(rec, rec, a, b, side, isum, msum);
  }
};

// The fold of one record's sums into one row's 8 lanes: kq_group_rows's expression, lane for
// lane (ymm: SIMDe, which the emulated build runs, has no 512-bit float conversion).
template <class L>
inline __attribute__((always_inline)) __m256 fold8(const uint8_t* rec, float d_a, __m256i isum, __m256i msum,
                                                   __m256 acc) {
  const __m256 da = _mm256_set1_ps(d_a);
  const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + L::kDAt)));
  __m256 term = _mm256_mul_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum));
  if constexpr (L::kDminAt >= 0) {
    const __m256 dminw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + L::kDminAt)));
    term = _mm256_sub_ps(term, _mm256_mul_ps(_mm256_mul_ps(dminw, da), _mm256_cvtepi32_ps(msum)));
  }
  return _mm256_add_ps(acc, term);
}

// R activation rows x groups ga and gb (adjacent: 16 weight rows), all nb super-blocks; y rows
// ys apart, n_out (<= 16) columns.
template <class S, int R>
inline __attribute__((always_inline)) void pair_rows(const uint8_t* ga, const uint8_t* gb, int64_t nb,
                                                     const g::BlockQ8_K* const* a, const int32_t* const* side,
                                                     float* y, int64_t ys, int64_t n_out) {
  using L = typename S::Layout;
  __m256 acc_a[R], acc_b[R];
  for (int r = 0; r < R; ++r) acc_a[r] = acc_b[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* ra = ga + b * L::kBytes;
    const uint8_t* rb = gb + b * L::kBytes;
    __m512i isum[R], msum[R];
    S::template sums<ZmmOps, R>(ra, rb, a, b, side, isum, msum);
    for (int r = 0; r < R; ++r) {
      acc_a[r] = fold8<L>(ra, a[r][b].d, _mm512_castsi512_si256(isum[r]), _mm512_castsi512_si256(msum[r]), acc_a[r]);
      acc_b[r] = fold8<L>(rb, a[r][b].d, _mm512_extracti64x4_epi64(isum[r], 1), _mm512_extracti64x4_epi64(msum[r], 1),
                          acc_b[r]);
    }
  }
  constexpr int64_t kRows = loom_gguf::kGroupRows;
  x8_store<R>(acc_a, y, ys, n_out < kRows ? n_out : kRows);
  if (n_out > kRows) x8_store<R>(acc_b, y + kRows, ys, n_out - kRows);
}

// R activation rows x groups [g0, g1): pairs through zmm (R >= 4), a last odd group and every
// group of fewer rows through ymm.
// Not inlined into the row blocking: inlined, Q6_K's prefill lost a fifth (118 -> 94 GMAC/s).
template <class S, int R>
__attribute__((noinline)) void rows_x_pairs(const loom_gguf::PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
                  const int32_t* side, int64_t t0, float* y, int64_t ys) {
  constexpr int64_t kRows = loom_gguf::kGroupRows;
  const int64_t nb = w.n_blocks;
  const g::BlockQ8_K* a[R];
  const int32_t* s[R];
  for (int r = 0; r < R; ++r) {
    a[r] = reinterpret_cast<const g::BlockQ8_K*>(xq + (t0 + r) * xq_row_bytes);
    s[r] = side + (t0 + r) * nb * kKQuantSide;
  }
  int64_t grp = g0;
  // Decode-like calls (R < 4) read one group at a time in address order: two streams a group
  // apart read Q2_K at 11 GB/s where one stream reaches 16 (one Zen 4 core).
  for (; R >= 4 && grp + 1 < g1; grp += 2) {
    const int64_t j0 = grp * kRows;
    const int64_t n_out = w.n_rows - j0 < 2 * kRows ? w.n_rows - j0 : 2 * kRows;
    pair_rows<S, R>(w.group(grp), w.group(grp + 1), nb, a, s, y + t0 * ys + (j0 - g0 * kRows), ys, n_out);
  }
  if (grp < g1) kq_rows_x_groups<OneGroup<S>, R>(w, grp, g1, xq, xq_row_bytes, side, t0, y + (grp - g0) * kRows, ys);
}

template <class S>
void gemm_x16(const loom_gguf::PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
              const int32_t* side, int64_t n, float* y, int64_t ys) {
  kq_row_blocks<8>(n, [&]<int R>(int64_t t) { rows_x_pairs<S, R>(w, g0, g1, xq, xq_row_bytes, side, t, y, ys); });
}

}  // namespace

KQuantPackedKernels avx512_kquant_x8_kernels() {
  return KQuantPackedKernels{&gemm_x16<TwoBit<LOOM_DTYPE_Q2_K>>,       &gemm_x16<TwoBit<LOOM_DTYPE_Q3_K>>,
                             &gemm_x16<ThirtyTwo<LOOM_DTYPE_Q4_K>>,    &gemm_x16<ThirtyTwo<LOOM_DTYPE_Q5_K>>,
                             &gemm_x16<Q6>,                            &gemm_x16<ThirtyTwo<LOOM_DTYPE_IQ4_XS>>};
}

#pragma GCC pop_options

}  // namespace LOOM_KQ_VNNI_NAMESPACE

#endif  // LOOM_GGUF_HAVE_AVX2
