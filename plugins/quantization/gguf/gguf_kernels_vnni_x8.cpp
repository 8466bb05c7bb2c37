// AVX512-VNNI kernels on Q4_0 and Q8_0 weights in the x8 layout (gguf_repack.hpp): the AVX2
// kernels' structure (ymm, lane = weight row, gguf_x8_gemm.hpp around them) with each chunk's
// products summed by vpdpbusd (AVX512-VNNI + AVX512-VL on ymm), one instruction where AVX2 needs
// maddubs + madd + add. Called only after cpu_has_avx512_vnni().
//
// Same integers, same bits: a block's sums are exact int32 in both (AVX2 adds int16 pairs that
// cannot saturate), and the float fold around them is shared code, so these kernels give the
// AVX2 kernels' output bit for bit; tests/conformance checks that where the CPU has VNNI, and
// tests/unit/test_gguf_vnni_emulated.cpp on any AVX2 CPU by compiling this file against SIMDe's
// VNNI emulation (LOOM_SIMD_EMULATE: the entry points move to namespace loom_gguf::emulated).
#include <cstdint>
#include <cstring>

#include "gguf_kernels.hpp"
#include "gguf_repack.hpp"
#include "gguf_stream_prefetch.hpp"
#include "loom/sdk_gguf_blocks.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

#ifdef LOOM_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define LOOM_VNNI_NAMESPACE loom_gguf::emulated
#else
#include <immintrin.h>
#define LOOM_VNNI_NAMESPACE loom_gguf
#endif

namespace loom_gguf {
#ifndef LOOM_SIMD_EMULATE
bool cpu_has_avx512_vnni() {
  return cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vnni");
}
#endif
}  // namespace loom_gguf

namespace LOOM_VNNI_NAMESPACE {

namespace g = loom::sdk::gguf;

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")
#endif

namespace {

using loom_gguf::ActivationBlockInfo;
using loom_gguf::kGroupRows;
using loom_gguf::PackedWeight;

#include "gguf_x8_gemm.hpp"

// Q4_0: nibbles are the unsigned operand as they are; the sums start at -8 * sum(a) (the
// offset), so they end as the sum of (nibble - 8) * a. Low and high nibbles fold in separate
// registers (two dependency chains per row), added at the end.
struct Q4_0x8 {
  static constexpr int64_t kQuantBytes = 128;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* q, const g::BlockQ8_0* const* a, int64_t b,
                                                         const int32_t* const* off, __m256i* out) {
    const __m256i mask = _mm256_set1_epi8(0xF);
    __m256i lo_sum[R], hi_sum[R];
    for (int r = 0; r < R; ++r) {
      lo_sum[r] = _mm256_set1_epi32(-off[r][b]);
      hi_sum[r] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 4; ++j) {
      const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * j));
      const __m256i lo = _mm256_and_si256(w, mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), mask);
      for (int r = 0; r < R; ++r) {
        lo_sum[r] = _mm256_dpbusd_epi32(lo_sum[r], lo, bcast4(a[r][b].qs + 4 * j));
        hi_sum[r] = _mm256_dpbusd_epi32(hi_sum[r], hi, bcast4(a[r][b].qs + 16 + 4 * j));
      }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm256_add_epi32(lo_sum[r], hi_sum[r]);
  }
};

// Q8_0: signed by signed through the sign trick, |w| (unsigned, formed once for the R rows)
// against a with w's sign; even and odd chunks fold in separate registers.
struct Q8_0x8 {
  static constexpr int64_t kQuantBytes = 256;
  template <int R>
  static inline __attribute__((always_inline)) void sums(const uint8_t* q, const g::BlockQ8_0* const* a, int64_t b,
                                                         const int32_t* const*, __m256i* out) {
    __m256i even[R], odd[R];
    for (int r = 0; r < R; ++r) even[r] = odd[r] = _mm256_setzero_si256();
    for (int j = 0; j < 8; j += 2) {
      const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * j));
      const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * j + 32));
      const __m256i abs0 = _mm256_sign_epi8(w0, w0), abs1 = _mm256_sign_epi8(w1, w1);
      for (int r = 0; r < R; ++r) {
        even[r] = _mm256_dpbusd_epi32(even[r], abs0, _mm256_sign_epi8(bcast4(a[r][b].qs + 4 * j), w0));
        odd[r] = _mm256_dpbusd_epi32(odd[r], abs1, _mm256_sign_epi8(bcast4(a[r][b].qs + 4 * j + 4), w1));
      }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm256_add_epi32(even[r], odd[r]);
  }
};

}  // namespace

loom_gguf::PackedKernel vnni_q4_0_x8_kernel() { return &gemm_x8<Q4_0x8>; }
loom_gguf::PackedKernel vnni_q8_0_x8_kernel() { return &gemm_x8<Q8_0x8>; }

#pragma GCC pop_options

}  // namespace LOOM_VNNI_NAMESPACE

#endif  // LOOM_GGUF_HAVE_AVX2
