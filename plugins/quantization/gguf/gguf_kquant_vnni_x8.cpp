// AVX512-VNNI kernels on Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS weights in the K-quant x8 layout
// (gguf_kquant_x8.hpp): the AVX2 kernels' structure (ymm, lane = weight row,
// gguf_kquant_x8_gemm.hpp around them) with each chunk's four u8 x s8 products added straight
// into int32 by vpdpbusd (AVX512-VNNI + AVX512-VL on ymm, 32 registers: 8 activation rows share
// a record), a sub-block's sum then times its scale (vpmulld), the mins' sums by vpdpwssd.
// IQ4_XS's levels go in unsigned (kIQ4NL + 128), the 128 * scale * sum(a) taken off like a min.
// Called only after cpu_has_avx512_vnni().
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
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")
#endif

namespace {

#include "gguf_kquant_x8_gemm.hpp"

// The 32-value sums of one sub-block (chunks j = 0..3, lo and hi in separate chains).
template <loom_dtype T, int R>
inline __attribute__((always_inline)) void chunk_sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                      int s, __m256i* lo_sum, __m256i* hi_sum) {
  // IQ4_XS: kIQ4NL + 128, 1..241 (the byte add wraps -127..113 there).
  const __m256i levels = _mm256_broadcastsi128_si256(
      _mm_add_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g::kIQ4NL)), _mm_set1_epi8(-128)));
  for (int r = 0; r < R; ++r) lo_sum[r] = hi_sum[r] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    __m256i lo, hi;
    kq_codes<T>(rec, s, j, &lo, &hi);
    if constexpr (T == LOOM_DTYPE_IQ4_XS) {
      lo = _mm256_shuffle_epi8(levels, lo);
      hi = _mm256_shuffle_epi8(levels, hi);
    }
    for (int r = 0; r < R; ++r) {
      const int8_t* q = a[r][b].qs + 32 * s + 4 * j;
      lo_sum[r] = _mm256_dpbusd_epi32(lo_sum[r], lo, kq_bcast4(q));
      hi_sum[r] = _mm256_dpbusd_epi32(hi_sum[r], hi, kq_bcast4(q + 16));
    }
  }
}

// Q4_K and Q5_K: 32-value sub-blocks, unsigned 6-bit scales and mins.
template <loom_dtype T>
struct WithMins {
  using Layout = KQuantRecord<T>;
  static constexpr int kRows = 8;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, __m256i* isum, __m256i* msum) {
    const __m256i low16 = _mm256_set1_epi32(0xFFFF);
    for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i scp = kq_pairs<false>(rec + Layout::kScaleAt + 16 * p);
      for (int h = 0; h < 2; ++h) {
        kq_prefetch_part<Layout::kBytes>(rec, 2 * p + h);
        const __m256i sc = h == 0 ? _mm256_and_si256(scp, low16) : _mm256_srli_epi32(scp, 16);
        __m256i lo_sum[R], hi_sum[R];
        chunk_sums<T, R>(rec, a, b, 2 * p + h, lo_sum, hi_sum);
        for (int r = 0; r < R; ++r)
          isum[r] = _mm256_add_epi32(isum[r], _mm256_mullo_epi32(_mm256_add_epi32(lo_sum[r], hi_sum[r]), sc));
      }
    }
    for (int r = 0; r < R; ++r) msum[r] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i mn = kq_pairs<false>(rec + Layout::kMinAt + 16 * p);
      for (int r = 0; r < R; ++r)
        msum[r] = _mm256_dpwssd_epi32(msum[r], mn, _mm256_set1_epi32(side[r][b * kKQuantSide + 8 + p]));
    }
  }
};

// Q6_K: lo and hi of a chunk are 16-value sub-blocks 2s and 2s + 1, int8 scales; the -32 as
// 32 * sum_s scale_s * bsum_s.
struct Q6 {
  using Layout = KQuantRecord<LOOM_DTYPE_Q6_K>;
  static constexpr int kRows = 8;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, __m256i* isum, __m256i* msum) {
    for (int r = 0; r < R; ++r) isum[r] = msum[r] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
      kq_prefetch_part<Layout::kBytes>(rec, s);
      const __m256i scp = kq_pairs<true>(rec + Layout::kScaleAt + 16 * s);
      const __m256i sc_lo = _mm256_srai_epi32(_mm256_slli_epi32(scp, 16), 16), sc_hi = _mm256_srai_epi32(scp, 16);
      __m256i lo_sum[R], hi_sum[R];
      chunk_sums<LOOM_DTYPE_Q6_K, R>(rec, a, b, s, lo_sum, hi_sum);
      for (int r = 0; r < R; ++r) {
        isum[r] = _mm256_add_epi32(
            isum[r], _mm256_add_epi32(_mm256_mullo_epi32(lo_sum[r], sc_lo), _mm256_mullo_epi32(hi_sum[r], sc_hi)));
        msum[r] = _mm256_dpwssd_epi32(msum[r], scp, _mm256_set1_epi32(side[r][b * kKQuantSide + s]));
      }
    }
    for (int r = 0; r < R; ++r) isum[r] = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(msum[r], 5));
  }
};

// IQ4_XS: 32-value sub-blocks, signed scales; sum_s ls_s <level_s + 128, a_s> less
// 128 * sum_s ls_s * sum(a_s).
struct Iq4Xs {
  using Layout = KQuantRecord<LOOM_DTYPE_IQ4_XS>;
  static constexpr int kRows = 8;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, __m256i* isum, __m256i* msum) {
    for (int r = 0; r < R; ++r) isum[r] = msum[r] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i scp = kq_pairs<true>(rec + Layout::kScaleAt + 16 * p);
      for (int h = 0; h < 2; ++h) {
        kq_prefetch_part<Layout::kBytes>(rec, 2 * p + h);
        const __m256i sc = h == 0 ? _mm256_srai_epi32(_mm256_slli_epi32(scp, 16), 16) : _mm256_srai_epi32(scp, 16);
        __m256i lo_sum[R], hi_sum[R];
        chunk_sums<LOOM_DTYPE_IQ4_XS, R>(rec, a, b, 2 * p + h, lo_sum, hi_sum);
        for (int r = 0; r < R; ++r)
          isum[r] = _mm256_add_epi32(isum[r], _mm256_mullo_epi32(_mm256_add_epi32(lo_sum[r], hi_sum[r]), sc));
      }
      for (int r = 0; r < R; ++r)
        msum[r] = _mm256_dpwssd_epi32(msum[r], scp, _mm256_set1_epi32(side[r][b * kKQuantSide + 8 + p]));
    }
    for (int r = 0; r < R; ++r) isum[r] = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(msum[r], 7));
  }
};

// Q2_K (unsigned 4-bit scales and mins) and Q3_K (signed scales, codes - 4 through the bsums):
// 16-value sub-blocks 4m + q, one chain of 4 chunks each.
template <loom_dtype T>
struct TwoBit {
  using Layout = KQuant2Record<T>;
  static constexpr int kRows = 8;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const g::BlockQ8_K* const* a, int64_t b,
                                                         const int32_t* const* side, __m256i* isum, __m256i* msum) {
    const __m256i nibble16 = _mm256_set1_epi16(0xF), nibble32 = _mm256_set1_epi32(0xF);
    for (int r = 0; r < R; ++r) isum[r] = msum[r] = _mm256_setzero_si256();
    for (int m = 0; m < 4; ++m) {
      for (int hp = 0; hp < 2; ++hp) {
        const int p = 2 * m + hp;
        kq_prefetch_part<Layout::kBytes>(rec, p);
        const __m256i scp = kq_pairs<Layout::kQ3>(rec + Layout::kScaleAt + 16 * p);
        // Q2_K: the mins' pairs; Q3_K: the scales' (for the -4).
        const __m256i mp = Layout::kQ3 ? scp : _mm256_and_si256(_mm256_srli_epi16(scp, 4), nibble16);
        for (int r = 0; r < R; ++r) msum[r] = _mm256_dpwssd_epi32(msum[r], mp, _mm256_set1_epi32(side[r][b * kKQuantSide + p]));
        for (int h = 0; h < 2; ++h) {
          const int q = 2 * hp + h;
          __m256i sc;
          if constexpr (Layout::kQ3)
            sc = h == 0 ? _mm256_srai_epi32(_mm256_slli_epi32(scp, 16), 16) : _mm256_srai_epi32(scp, 16);
          else
            sc = _mm256_and_si256(h == 0 ? scp : _mm256_srli_epi32(scp, 16), nibble32);
          __m256i acc[R];
          for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j) {
            const __m256i c = kq_codes2<T>(rec, m, q, j);
            for (int r = 0; r < R; ++r)
              acc[r] = _mm256_dpbusd_epi32(acc[r], c, kq_bcast4(a[r][b].qs + 64 * m + 16 * q + 4 * j));
          }
          for (int r = 0; r < R; ++r) isum[r] = _mm256_add_epi32(isum[r], _mm256_mullo_epi32(acc[r], sc));
        }
      }
    }
    if constexpr (Layout::kQ3)
      for (int r = 0; r < R; ++r) isum[r] = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(msum[r], 2));
  }
};

}  // namespace

KQuantPackedKernels vnni_kquant_x8_kernels() {
  return KQuantPackedKernels{&kq_gemm_x8<TwoBit<LOOM_DTYPE_Q2_K>>, &kq_gemm_x8<TwoBit<LOOM_DTYPE_Q3_K>>,
                             &kq_gemm_x8<WithMins<LOOM_DTYPE_Q4_K>>, &kq_gemm_x8<WithMins<LOOM_DTYPE_Q5_K>>,
                             &kq_gemm_x8<Q6>, &kq_gemm_x8<Iq4Xs>};
}

#pragma GCC pop_options

}  // namespace LOOM_KQ_VNNI_NAMESPACE

#endif  // LOOM_GGUF_HAVE_AVX2
