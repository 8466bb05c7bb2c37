// AVX2 kernels on Q4_0 and Q8_0 weights in the x8 layout (gguf_repack.hpp), compiled for
// AVX2+FMA+F16C and called only after cpu_has_avx2_fma().
//
// Per block and 8 weight rows: chunks of 32 bytes, one 32-bit lane per weight row; each meets
// 4 activation bytes broadcast to all 8 lanes in one maddubs, so lane r holds row r's pair sums
// and a block ends as 8 exact int32 sums, one per row, with no horizontal reduction. Then
// acc = fma(d_w * d_a, float(sum), acc), one lane per row: the fold order of every (activation
// row, weight row) pair is block 0, 1, ... whatever n is and however rows share the loop.
// The GEMM around them is gguf_x8_gemm.hpp.
#include <cstdint>
#include <cstring>

#include "gguf_kernels.hpp"
#include "gguf_repack.hpp"
#include "gguf_stream_prefetch.hpp"
#include "loom/sdk_gguf_blocks.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

#include <immintrin.h>

namespace loom_gguf {

namespace g = loom::sdk::gguf;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

#include "gguf_x8_gemm.hpp"

// The exact int32 sums of one block of 8 weight rows (lane = row) against R activation rows.
//
// Q4_0: the 8 maddubs of a block add up in int16 (|pair| <= 2 * 15 * 128 = 3840, eight of them
// <= 30720 < 32768: exact); one madd makes them int32 per row, and subtracting 8 * sum(a) gives
// the sum of (nibble - 8) * a.
struct Q4_0x8 {
  static constexpr int64_t kQuantBytes = 128;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* q, const g::BlockQ8_0* const* a, int64_t b,
                                                         const int32_t* const* off, __m256i* out) {
    const __m256i mask = _mm256_set1_epi8(0xF);
    __m256i s[R];
    for (int j = 0; j < 4; ++j) {
      const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * j));
      const __m256i lo = _mm256_and_si256(w, mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), mask);
      for (int r = 0; r < R; ++r) {
        const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast4(a[r][b].qs + 4 * j)),
                                           _mm256_maddubs_epi16(hi, bcast4(a[r][b].qs + 16 + 4 * j)));
        s[r] = j == 0 ? p : _mm256_add_epi16(s[r], p);
      }
    }
    for (int r = 0; r < R; ++r)
      out[r] = _mm256_sub_epi32(_mm256_madd_epi16(s[r], _mm256_set1_epi16(1)), _mm256_set1_epi32(off[r][b]));
  }
};

// Q8_0: signed weights by the sign trick, |w| (formed once, shared by the R rows) against a with
// w's sign; a pair can reach 2 * 128 * 127, so each maddubs is widened by madd before adding.
struct Q8_0x8 {
  static constexpr int64_t kQuantBytes = 256;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* q, const g::BlockQ8_0* const* a, int64_t b,
                                                         const int32_t* const*, __m256i* out) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int j = 0; j < 8; ++j) {
      const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * j));
      const __m256i wabs = _mm256_sign_epi8(w, w);
      for (int r = 0; r < R; ++r) {
        const __m256i p =
            _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, _mm256_sign_epi8(bcast4(a[r][b].qs + 4 * j), w)), ones);
        out[r] = j == 0 ? p : _mm256_add_epi32(out[r], p);
      }
    }
  }
};

}  // namespace

PackedKernel avx2_q4_0_x8_kernel() { return &gemm_x8<Q4_0x8>; }
PackedKernel avx2_q8_0_x8_kernel() { return &gemm_x8<Q8_0x8>; }

#pragma GCC pop_options

}  // namespace loom_gguf

#endif  // LOOM_GGUF_HAVE_AVX2
