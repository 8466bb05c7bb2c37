// AVX2 kernels on Q4_1, Q5_0, Q5_1 and IQ4_NL weights in the legacy x8 layout
// (gguf_legacy_kernels.hpp), compiled for AVX2+FMA+F16C and called only after
// cpu_has_avx2_fma(). Each 32-byte chunk of a record meets 4 activation bytes broadcast to the
// 8 lanes (one per weight row) in maddubs, so a block ends as 8 exact int32 sums without a
// horizontal reduction; gguf_legacy_x8_gemm.hpp folds them.
//
// Exactness of the int16 steps (activations |a| <= 127, so a maddubs pair is at most 2 * 127 *
// the largest unsigned operand):
//   Q4_1    codes 0..15: the block's 8 maddubs add in int16 (8 * 3810 < 32768), one madd
//   Q5_*    codes 0..31: 4 maddubs (2 chunks) add in int16 (4 * 7874 < 32768), then madd
//   IQ4_NL  levels -127..113 by the sign trick, |w| against a with w's sign: one maddubs can
//           reach 32258, so each is widened by madd
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gguf_legacy_kernels.hpp"
#include "gguf_stream_prefetch.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

#include <immintrin.h>

namespace loom_gguf {

namespace g = loom::sdk::gguf;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

#include "gguf_legacy_x8_gemm.hpp"

// Q4_1 (kQ5 false, Q8_1), Q5_0 (Q8_0: the -16 comes back as 16 * sum(a) = 2 * offset) and Q5_1
// (Q8_1): unsigned codes against the activations.
template <bool kQ5, bool kMin>
struct CodesX8 : CodesLayout<kQ5, kMin> {
  using Act = typename CodesLayout<kQ5, kMin>::Act;
  // Chunks [j0, j1) summed in int16 per row, then widened and added to out.
  template <int R>
  static inline __attribute__((always_inline)) void chunks(const uint8_t* rec, const Act* const* a, int64_t b, int j0,
                                                           int j1, __m256i* out) {
    __m256i s16[R];
    for (int r = 0; r < R; ++r) s16[r] = _mm256_setzero_si256();
    for (int j = j0; j < j1; ++j) {
      __m256i lo, hi;
      legacy_codes<kQ5>(rec, j, &lo, &hi);
      for (int r = 0; r < R; ++r) {
        const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, legacy_bcast4(a[r][b].qs + 4 * j)),
                                           _mm256_maddubs_epi16(hi, legacy_bcast4(a[r][b].qs + 16 + 4 * j)));
        s16[r] = _mm256_add_epi16(s16[r], p);
      }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm256_add_epi32(out[r], _mm256_madd_epi16(s16[r], _mm256_set1_epi16(1)));
  }
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const Act* const* a, int64_t b,
                                                         const int32_t* const* off, __m256i* out) {
    for (int r = 0; r < R; ++r)
      out[r] = kQ5 && !kMin ? _mm256_set1_epi32(-2 * off[r][b]) : _mm256_setzero_si256();
    if constexpr (kQ5) {
      chunks<R>(rec, a, b, 0, 2, out);
      chunks<R>(rec, a, b, 2, 4, out);
    } else {
      chunks<R>(rec, a, b, 0, 4, out);
    }
  }
};

// IQ4_NL: the nibbles index the 16 levels (one pshufb), then the sign trick.
struct Iq4NlX8 : Iq4NlLayout {
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const Act* const* a, int64_t b,
                                                         const int32_t* const*, __m256i* out) {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g::kIq4nlValues)));
    for (int r = 0; r < R; ++r) out[r] = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      __m256i lo, hi;
      legacy_codes<false>(rec, j, &lo, &hi);
      const __m256i wl = _mm256_shuffle_epi8(levels, lo), wh = _mm256_shuffle_epi8(levels, hi);
      const __m256i al = _mm256_sign_epi8(wl, wl), ah = _mm256_sign_epi8(wh, wh);
      for (int r = 0; r < R; ++r) {
        const __m256i pl = _mm256_maddubs_epi16(al, _mm256_sign_epi8(legacy_bcast4(a[r][b].qs + 4 * j), wl));
        const __m256i ph = _mm256_maddubs_epi16(ah, _mm256_sign_epi8(legacy_bcast4(a[r][b].qs + 16 + 4 * j), wh));
        out[r] = _mm256_add_epi32(out[r], _mm256_add_epi32(_mm256_madd_epi16(pl, ones), _mm256_madd_epi16(ph, ones)));
      }
    }
  }
};

}  // namespace

LegacyPackedKernels avx2_legacy_x8_kernels() {
  return LegacyPackedKernels{&legacy_gemm_x8<CodesX8<false, true>>, &legacy_gemm_x8<CodesX8<true, false>>,
                             &legacy_gemm_x8<CodesX8<true, true>>, &legacy_gemm_x8<Iq4NlX8>};
}

#pragma GCC pop_options

}  // namespace loom_gguf

#endif  // LOOM_GGUF_HAVE_AVX2
