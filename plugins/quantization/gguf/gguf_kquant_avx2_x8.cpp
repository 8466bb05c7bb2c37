// AVX2 kernels on Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS weights in the K-quant x8 layout (gguf_kquant_x8.hpp),
// compiled for AVX2+FMA+F16C and called only after cpu_has_avx2_fma(). Each 32-byte chunk meets
// 4 activation bytes broadcast to the 8 lanes in maddubs; madd against the sub-block's scale
// (an int16 pair per lane) widens to int32, so a super-block ends as 8 exact int32 sums with no
// horizontal reduction (gguf_kquant_x8_gemm.hpp folds them).
//
// Exactness of the int16 steps (Q8_K activations -128..127):
//   Q2_K, Q3_K  codes 0..7, a 16-value sub-block's 4 maddubs: 4 * 2 * 7 * 128 = 7168
//   Q4_K  codes 0..15, lo + hi maddubs of one sub-block: 2 * 2 * 15 * 128 = 7680
//   Q5_K  codes 0..31: 2 * 2 * 31 * 128 = 15872
//   Q6_K  codes 0..63, lo and hi in different 16-value sub-blocks, each maddubs (at most
//         2 * 63 * 128 = 16128) widened by its own madd
//   IQ4_XS  levels -127..113 by the sign trick, |level| against a with the level's sign (Q8_K
//           is -127..127, so the negation never wraps): one maddubs can reach 32258, so lo and
//           hi are each widened by madd
#include <cstdint>
#include <cstring>

#include "gguf_kquant_x8.hpp"
#include "gguf_stream_prefetch.hpp"
#include "loom/sdk_gguf_blocks.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

#include <immintrin.h>

namespace loom_gguf {

namespace g = loom::sdk::gguf;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

#include "gguf_kquant_x8_gemm.hpp"

// pshufb masks: int16 0 (kDup[0]) or 1 (kDup[1]) of each 32-bit lane copied to both halves.
alignas(32) constexpr uint8_t kDup[2][32] = {
    {0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13},
    {2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15, 2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15}};
inline __attribute__((always_inline)) __m256i dup(__m256i pairs, int h) {
  return _mm256_shuffle_epi8(pairs, _mm256_load_si256(reinterpret_cast<const __m256i*>(kDup[h])));
}

// Q4_K and Q5_K: 32-value sub-blocks with unsigned 6-bit scales and mins.
template <loom_dtype T>
struct WithMins {
  using Layout = KQuantRecord<T>;
  static constexpr int kRows = 4;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, __m256i* isum, __m256i* msum) {
    for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i scp = kq_pairs<false>(rec + Layout::kScaleAt + 16 * p);
      for (int h = 0; h < 2; ++h) {
        kq_prefetch_part<Layout::kBytes>(rec, 2 * p + h);
        const int s = 2 * p + h;
        const __m256i sc = dup(scp, h);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
          __m256i lo, hi;
          kq_codes<T>(rec, s, j, &lo, &hi);
          for (int r = 0; r < R; ++r) {
            const int8_t* q = a[r][b].qs + 32 * s + 4 * j;
            const __m256i p16 =
                _mm256_add_epi16(_mm256_maddubs_epi16(lo, kq_bcast4(q)), _mm256_maddubs_epi16(hi, kq_bcast4(q + 16)));
            isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(p16, sc));
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) msum[r] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i mn = kq_pairs<false>(rec + Layout::kMinAt + 16 * p);
      for (int r = 0; r < R; ++r)
        msum[r] = _mm256_add_epi32(msum[r],
                                   _mm256_madd_epi16(mn, _mm256_set1_epi32(side[r][b * kKQuantSide + 8 + p])));
    }
  }
};

// Q6_K: 16-value sub-blocks (lo and hi of a chunk are sub-blocks 2s and 2s + 1) with int8
// scales; codes 0..63, the -32 taken off as 32 * scale * bsum per sub-block pair as it goes (a
// second pass over the scales would keep all 8 pairs live across the first and spill).
struct Q6 {
  using Layout = KQuantRecord<LOOM_DTYPE_Q6_K>;
  static constexpr int kRows = 4;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, __m256i* isum, __m256i* msum) {
    for (int r = 0; r < R; ++r) isum[r] = msum[r] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
      kq_prefetch_part<Layout::kBytes>(rec, s);
      const __m256i scp = kq_pairs<true>(rec + Layout::kScaleAt + 16 * s);
      for (int r = 0; r < R; ++r)
        isum[r] = _mm256_sub_epi32(
            isum[r], _mm256_slli_epi32(_mm256_madd_epi16(scp, _mm256_set1_epi32(side[r][b * kKQuantSide + s])), 5));
      const __m256i sc_lo = dup(scp, 0), sc_hi = dup(scp, 1);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        __m256i lo, hi;
        kq_codes<LOOM_DTYPE_Q6_K>(rec, s, j, &lo, &hi);
        for (int r = 0; r < R; ++r) {
          const int8_t* q = a[r][b].qs + 32 * s + 4 * j;
          isum[r] = _mm256_add_epi32(
              isum[r], _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(lo, kq_bcast4(q)), sc_lo),
                                        _mm256_madd_epi16(_mm256_maddubs_epi16(hi, kq_bcast4(q + 16)), sc_hi)));
        }
      }
    }
  }
};

// IQ4_XS: 32-value sub-blocks, signed scales, kIQ4NL levels.
struct Iq4Xs {
  using Layout = KQuantRecord<LOOM_DTYPE_IQ4_XS>;
  static constexpr int kRows = 4;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const*, __m256i* isum, __m256i* msum) {
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g::kIQ4NL)));
    for (int r = 0; r < R; ++r) isum[r] = msum[r] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i scp = kq_pairs<true>(rec + Layout::kScaleAt + 16 * p);
      for (int h = 0; h < 2; ++h) {
        kq_prefetch_part<Layout::kBytes>(rec, 2 * p + h);
        const int s = 2 * p + h;
        const __m256i sc = dup(scp, h);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          __m256i lo, hi;
          kq_codes<LOOM_DTYPE_IQ4_XS>(rec, s, j, &lo, &hi);
          lo = _mm256_shuffle_epi8(levels, lo);
          hi = _mm256_shuffle_epi8(levels, hi);
          const __m256i lo_abs = _mm256_abs_epi8(lo), hi_abs = _mm256_abs_epi8(hi);
          for (int r = 0; r < R; ++r) {
            const int8_t* q = a[r][b].qs + 32 * s + 4 * j;
            const __m256i plo = _mm256_maddubs_epi16(lo_abs, _mm256_sign_epi8(kq_bcast4(q), lo));
            const __m256i phi = _mm256_maddubs_epi16(hi_abs, _mm256_sign_epi8(kq_bcast4(q + 16), hi));
            isum[r] = _mm256_add_epi32(isum[r], _mm256_add_epi32(_mm256_madd_epi16(plo, sc), _mm256_madd_epi16(phi, sc)));
          }
        }
      }
    }
  }
};

// Q2_K (unsigned 4-bit scales and mins) and Q3_K (signed scales; codes - 4 through the bsums,
// taken off as it goes): 16-value sub-blocks 4m + q.
template <loom_dtype T>
struct TwoBit {
  using Layout = KQuant2Record<T>;
  static constexpr int kRows = 4;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, __m256i* isum, __m256i* msum) {
    const __m256i nibble16 = _mm256_set1_epi16(0xF);
    for (int r = 0; r < R; ++r) isum[r] = msum[r] = _mm256_setzero_si256();
    for (int m = 0; m < 4; ++m) {
      for (int hp = 0; hp < 2; ++hp) {
        const int p = 2 * m + hp;
        kq_prefetch_part<Layout::kBytes>(rec, p);
        const __m256i scp = kq_pairs<Layout::kQ3>(rec + Layout::kScaleAt + 16 * p);
        const __m256i sp = Layout::kQ3 ? scp : _mm256_and_si256(scp, nibble16);
        for (int r = 0; r < R; ++r) {
          const __m256i bs = _mm256_set1_epi32(side[r][b * kKQuantSide + p]);
          if constexpr (Layout::kQ3)
            isum[r] = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(_mm256_madd_epi16(scp, bs), 2));
          else
            msum[r] = _mm256_add_epi32(
                msum[r], _mm256_madd_epi16(_mm256_and_si256(_mm256_srli_epi16(scp, 4), nibble16), bs));
        }
        for (int h = 0; h < 2; ++h) {
          const int q = 2 * hp + h;
          const __m256i sc = dup(sp, h);
          __m256i acc[R];
          for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j) {
            const __m256i c = kq_codes2<T>(rec, m, q, j);
            for (int r = 0; r < R; ++r)
              acc[r] = _mm256_add_epi16(acc[r], _mm256_maddubs_epi16(c, kq_bcast4(a[r][b].qs + 64 * m + 16 * q + 4 * j)));
          }
          for (int r = 0; r < R; ++r) isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(acc[r], sc));
        }
      }
    }
  }
};

}  // namespace

KQuantPackedKernels avx2_kquant_x8_kernels() {
  return KQuantPackedKernels{&kq_gemm_x8<TwoBit<LOOM_DTYPE_Q2_K>>, &kq_gemm_x8<TwoBit<LOOM_DTYPE_Q3_K>>,
                             &kq_gemm_x8<WithMins<LOOM_DTYPE_Q4_K>>, &kq_gemm_x8<WithMins<LOOM_DTYPE_Q5_K>>,
                             &kq_gemm_x8<Q6>, &kq_gemm_x8<Iq4Xs>};
}

#pragma GCC pop_options

}  // namespace loom_gguf

#endif  // LOOM_GGUF_HAVE_AVX2
