// AVX512-VNNI kernels on Q4_1, Q5_0, Q5_1 and IQ4_NL weights in the legacy x8 layout: the AVX2
// kernels' structure (ymm, lane = weight row, gguf_legacy_x8_gemm.hpp around them) with each
// chunk's products summed by vpdpbusd (AVX512-VNNI + AVX512-VL on ymm), which adds four u8 x s8
// products straight into int32: no int16 step, so IQ4_NL's levels go in unsigned (level + 128)
// with 128 * sum(a) = 16 * offset taken off, as Q5_0's 16 * sum(a). Called only after
// cpu_has_avx512_vnni().
//
// Same integers, same bits: a block's sums are exact int32 here and in the AVX2 kernels, and the
// float fold is shared code, so these give the AVX2 kernels' output bit for bit;
// tests/conformance/conformance_simd_isa.cpp checks it natively where the CPU has VNNI and on
// any AVX2 CPU by compiling this file against SIMDe (LOOM_SIMD_EMULATE: the entry point moves
// to namespace loom_gguf::emulated).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gguf_legacy_kernels.hpp"
#include "gguf_stream_prefetch.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

#ifdef LOOM_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define LOOM_LEGACY_VNNI_NAMESPACE loom_gguf::emulated
#else
#include <immintrin.h>
#define LOOM_LEGACY_VNNI_NAMESPACE loom_gguf
#endif

namespace LOOM_LEGACY_VNNI_NAMESPACE {

namespace g = loom::sdk::gguf;

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")
#endif

namespace {

using loom_gguf::LegacyPackedKernels;

#include "gguf_legacy_x8_gemm.hpp"

// Q4_1, Q5_0 (sums start at -16 * sum(a)), Q5_1: low and high values fold in separate
// registers (two dependency chains per row), added at the end.
template <bool kQ5, bool kMin>
struct CodesX8 : CodesLayout<kQ5, kMin> {
  using Act = typename CodesLayout<kQ5, kMin>::Act;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const Act* const* a, int64_t b,
                                                         const int32_t* const* off, __m256i* out) {
    __m256i lo_sum[R], hi_sum[R];
    for (int r = 0; r < R; ++r) {
      lo_sum[r] = kQ5 && !kMin ? _mm256_set1_epi32(-2 * off[r][b]) : _mm256_setzero_si256();
      hi_sum[r] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 4; ++j) {
      __m256i lo, hi;
      legacy_codes<kQ5>(rec, j, &lo, &hi);
      for (int r = 0; r < R; ++r) {
        lo_sum[r] = _mm256_dpbusd_epi32(lo_sum[r], lo, legacy_bcast4(a[r][b].qs + 4 * j));
        hi_sum[r] = _mm256_dpbusd_epi32(hi_sum[r], hi, legacy_bcast4(a[r][b].qs + 16 + 4 * j));
      }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm256_add_epi32(lo_sum[r], hi_sum[r]);
  }
};

// IQ4_NL's levels shifted to 1..241 (unsigned for vpdpbusd).
alignas(16) constexpr uint8_t kIq4nlUnsigned[16] = {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241};
static_assert(kIq4nlUnsigned[0] == g::kIq4nlValues[0] + 128 && kIq4nlUnsigned[7] == g::kIq4nlValues[7] + 128 &&
                  kIq4nlUnsigned[15] == g::kIq4nlValues[15] + 128,
              "the unsigned table is kIq4nlValues + 128");

struct Iq4NlX8 : Iq4NlLayout {
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* rec, const Act* const* a, int64_t b,
                                                         const int32_t* const* off, __m256i* out) {
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(kIq4nlUnsigned)));
    __m256i lo_sum[R], hi_sum[R];
    for (int r = 0; r < R; ++r) {
      lo_sum[r] = _mm256_set1_epi32(-16 * off[r][b]);
      hi_sum[r] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 4; ++j) {
      __m256i lo, hi;
      legacy_codes<false>(rec, j, &lo, &hi);
      const __m256i wl = _mm256_shuffle_epi8(levels, lo), wh = _mm256_shuffle_epi8(levels, hi);
      for (int r = 0; r < R; ++r) {
        lo_sum[r] = _mm256_dpbusd_epi32(lo_sum[r], wl, legacy_bcast4(a[r][b].qs + 4 * j));
        hi_sum[r] = _mm256_dpbusd_epi32(hi_sum[r], wh, legacy_bcast4(a[r][b].qs + 16 + 4 * j));
      }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm256_add_epi32(lo_sum[r], hi_sum[r]);
  }
};

}  // namespace

LegacyPackedKernels vnni_legacy_x8_kernels() {
  return LegacyPackedKernels{&legacy_gemm_x8<CodesX8<false, true>>, &legacy_gemm_x8<CodesX8<true, false>>,
                             &legacy_gemm_x8<CodesX8<true, true>>, &legacy_gemm_x8<Iq4NlX8>};
}

#pragma GCC pop_options

}  // namespace LOOM_LEGACY_VNNI_NAMESPACE

#endif  // LOOM_GGUF_HAVE_AVX2
