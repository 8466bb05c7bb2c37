// AVX-512 K-quant kernels (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS x Q8_K) for CPUs with AVX512-BW and
// AVX512-VNNI (cpu_has_avx512_kquant()): the AVX2 kernels' unpacking on 64 values per zmm, with
// maddubs + vpdpwssd (VNNI's fused madd + add) applying the sub-block scales, which
// vpermw spreads from one register of int16 scales. Same integers, same scalar fold: these give
// the portable (and AVX2) kernels' bits, checked by tests/conformance/conformance_gguf_kquant.cpp
// natively and, on CPUs without the ISA, through this file compiled against SIMDe's emulation
// (LOOM_SIMD_EMULATE: the entry point moves to namespace loom_gguf::emulated).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gguf_kernels_kquant.hpp"
#include "gguf_stream_prefetch.hpp"
#include "loom/sdk_gguf_blocks.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

// GCC 12 flags the undefined-vector idiom inside its own AVX-512 intrinsics (_mm512_undefined_*)
// as uninitialized when they inline; a false positive, as in none_panel_avx512.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#ifdef LOOM_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define LOOM_KQ512_NAMESPACE loom_gguf::emulated
#else
#include <immintrin.h>
#define LOOM_KQ512_NAMESPACE loom_gguf
#endif

namespace loom_gguf {
#ifndef LOOM_SIMD_EMULATE
bool cpu_has_avx512_kquant() {
  return cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}
#endif
}  // namespace loom_gguf

namespace LOOM_KQ512_NAMESPACE {

namespace g = loom::sdk::gguf;

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#endif

namespace {

#include "gguf_kquant_simd.hpp"

inline __attribute__((always_inline)) __m512i join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
// R zmm accumulators as R ymm ones (the two halves added: the lane sums are what count).
template <int R>
struct Halves {
  __m256i v[R];
};
template <int R>
inline __attribute__((always_inline)) Halves<R> halves(const __m512i* acc) {
  Halves<R> h;
  for (int r = 0; r < R; ++r)
    h.v[r] = _mm256_add_epi32(_mm512_castsi512_si256(acc[r]), _mm512_extracti64x4_epi64(acc[r], 1));
  return h;
}
inline __attribute__((always_inline)) __m512i load64(const void* p) { return _mm512_loadu_si512(p); }

// vpermw indices: which int16 scale each of the 32 madd lanes of 64 values takes.
//   kSub16[m]: 16-value sub-blocks 4m..4m+3, one per 128-bit lane (Q2_K, Q3_K)
//   kSub32[c]: 32-value sub-blocks 2c, 2c + 1, one per 256-bit half (Q5_K)
//   kIq4[p]:   IQ4_XS's nibble order, lanes alternating sub-blocks 2p, 2p + 1
struct ScaleIndex {
  alignas(64) int16_t sub16[4][32];
  alignas(64) int16_t sub32[4][32];
  alignas(64) int16_t iq4[4][32];
};
constexpr ScaleIndex make_scale_index() {
  ScaleIndex x{};
  for (int m = 0; m < 4; ++m) {
    for (int i = 0; i < 32; ++i) {
      x.sub16[m][i] = static_cast<int16_t>(4 * m + i / 8);
      x.sub32[m][i] = static_cast<int16_t>(2 * m + i / 16);
      x.iq4[m][i] = static_cast<int16_t>(2 * m + (i / 8) % 2);
    }
  }
  return x;
}
constexpr ScaleIndex kScaleIndex = make_scale_index();

inline __attribute__((always_inline)) __m512i spread(__m512i scales, const int16_t* index) {
  return _mm512_permutexvar_epi16(_mm512_load_si512(index), scales);
}

// Q2_K: planes k and k + 1 of qs[32h..] are values 128h + 32k .. + 63, contiguous in a.
template <int R>
void dot_q2_k(const g::BlockQ2_K* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  const __m256i mask2 = _mm256_set1_epi8(3);
  const __m256i mask4 = _mm256_set1_epi16(0xF);
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    const __m512i scales = _mm512_castsi256_si512(_mm256_and_si256(sc16, mask4));
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m256i q = load(w[b].qs + 32 * h);
      for (int k = 0; k < 4; k += 2) {
        const __m512i codes = join(_mm256_and_si256(_mm256_srli_epi16(q, 2 * k), mask2),
                                   _mm256_and_si256(_mm256_srli_epi16(q, 2 * k + 2), mask2));
        const __m512i scale = spread(scales, kScaleIndex.sub16[2 * h + k / 2]);
        for (int r = 0; r < R; ++r)
          acc[r] =
              _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(codes, load64(a[r][b].qs + 128 * h + 32 * k)), scale);
      }
    }
    const __m256i mins = _mm256_srli_epi16(sc16, 4);
    fold_with_mins<R>(
        sum, halves<R>(acc).v, [&](const int16_t* bsums) { return _mm256_madd_epi16(mins, load(bsums)); }, w[b].d,
        w[b].dmin, a, b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

// Q3_K: Q2_K's planes; bit 2 of the codes of plane k is bit 4h + k of hmask, and of plane k + 1
// the same bit of hmask >> 1, so one byte mask test serves 64 values.
template <int R>
void dot_q3_k(const g::BlockQ3_K* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  const __m256i mask2 = _mm256_set1_epi8(3);
  const __m512i four = _mm512_set1_epi8(4);
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    const __m256i scales16 = q3_k_scales(w[b].scales);
    const __m512i scales = _mm512_castsi256_si512(scales16);
    const __m256i hm = load(w[b].hmask);
    const __m512i hm2 = join(hm, _mm256_srli_epi16(hm, 1));
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m256i q = load(w[b].qs + 32 * h);
      for (int k = 0; k < 4; k += 2) {
        __m512i codes = join(_mm256_and_si256(_mm256_srli_epi16(q, 2 * k), mask2),
                             _mm256_and_si256(_mm256_srli_epi16(q, 2 * k + 2), mask2));
        const __mmask64 high = _mm512_test_epi8_mask(hm2, _mm512_set1_epi8(static_cast<char>(1 << (4 * h + k))));
        codes = _mm512_mask_add_epi8(codes, high, codes, four);
        const __m512i scale = spread(scales, kScaleIndex.sub16[2 * h + k / 2]);
        for (int r = 0; r < R; ++r)
          acc[r] =
              _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(codes, load64(a[r][b].qs + 128 * h + 32 * k)), scale);
      }
    }
    Halves<R> h = halves<R>(acc);
    for (int r = 0; r < R; ++r)
      h.v[r] = _mm256_sub_epi32(h.v[r], _mm256_slli_epi32(_mm256_madd_epi16(scales16, load(a[r][b].bsums)), 2));
    fold<R>(sum, h.v, w[b].d, a, b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

// Q4_K and Q5_K: chunk c's low and high nibbles (sub-blocks 2c, 2c + 1) side by side are values
// 64c .. 64c + 63; Q5_K's bit 4 comes from qh (low half) and qh >> 1 (high half) at bit 2c.
template <class W, int R>
void dot_q4_q5_k(const W* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  constexpr bool kHigh = std::is_same_v<W, g::BlockQ5_K>;
  const __m256i mask4 = _mm256_set1_epi8(0xF);
  const __m512i sixteen = _mm512_set1_epi8(16);
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    __m128i sc8, mn8;
    q5_k_scales_mins(w[b].scales, &sc8, &mn8);
    const __m512i scales = _mm512_castsi128_si512(sc8);
    __m512i qh2 = _mm512_setzero_si512();
    if constexpr (kHigh) {
      const __m256i qh = load(w[b].qh);
      qh2 = join(qh, _mm256_srli_epi16(qh, 1));
    }
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load(w[b].qs + 32 * c);
      __m512i codes = join(_mm256_and_si256(q, mask4), _mm256_and_si256(_mm256_srli_epi16(q, 4), mask4));
      if constexpr (kHigh) {
        const __mmask64 high = _mm512_test_epi8_mask(qh2, _mm512_set1_epi8(static_cast<char>(1 << (2 * c))));
        codes = _mm512_mask_add_epi8(codes, high, codes, sixteen);
      }
      const __m512i scale = spread(scales, kScaleIndex.sub32[c]);
      for (int r = 0; r < R; ++r)
        acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(codes, load64(a[r][b].qs + 64 * c)), scale);
    }
    fold_with_mins<R>(
        sum, halves<R>(acc).v, [&](const int16_t* bsums) { return q5_k_min_sums(mn8, bsums); }, w[b].d, w[b].dmin, a,
        b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

// Q6_K: values 128h + 32k .. + 63 (k = 0, 2) are the low (k = 0) or high nibbles of
// ql[64h..64h + 63] with bits 2k, 2k + 2 of qh[32h..] on top; scales as Q3_K's (int8 here), the
// -32 folded out by the bsums.
template <int R>
void dot_q6_k(const g::BlockQ6_K* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  const __m512i mask4 = _mm512_set1_epi8(0xF), mask2 = _mm512_set1_epi8(3);
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    const __m512i scales = _mm512_castsi256_si512(scales16);
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = load64(w[b].ql + 64 * h);
      const __m256i qh = load(w[b].qh + 32 * h);
      const __m512i qh2 = join(qh, _mm256_srli_epi16(qh, 2));
      for (int k = 0; k < 4; k += 2) {
        const __m512i low = _mm512_and_si512(k == 0 ? ql : _mm512_srli_epi16(ql, 4), mask4);
        const __m512i high = _mm512_and_si512(_mm512_srli_epi16(qh2, 2 * k), mask2);
        const __m512i codes = _mm512_or_si512(low, _mm512_slli_epi16(high, 4));
        const __m512i scale = spread(scales, kScaleIndex.sub16[2 * h + k / 2]);
        for (int r = 0; r < R; ++r)
          acc[r] =
              _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(codes, load64(a[r][b].qs + 128 * h + 32 * k)), scale);
      }
    }
    Halves<R> hv = halves<R>(acc);
    for (int r = 0; r < R; ++r)
      hv.v[r] = _mm256_sub_epi32(hv.v[r], _mm256_slli_epi32(_mm256_madd_epi16(scales16, load(a[r][b].bsums)), 5));
    fold<R>(sum, hv.v, w[b].d, a, b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

// IQ4_XS: the low then high nibbles of 32 bytes of qs are, by 128-bit lane, sub-blocks 2p and
// 2p + 1's first 16 values, then their last 16; the activations' lanes are reordered to match.
// Signed x signed without vpsignb: |level| against a negated where the level is negative.
template <int R>
void dot_iq4_xs(const g::BlockIQ4_XS* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  const __m256i mask4 = _mm256_set1_epi8(0xF);
  const __m512i levels = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g::kIQ4NL)));
  const __m512i zero = _mm512_setzero_si512();
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    const __m512i scales = _mm512_castsi128_si512(iq4_xs_scales(w[b]));
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      const __m256i q = load(w[b].qs + 32 * p);
      const __m512i v = _mm512_shuffle_epi8(
          levels, join(_mm256_and_si256(q, mask4), _mm256_and_si256(_mm256_srli_epi16(q, 4), mask4)));
      const __m512i scale = spread(scales, kScaleIndex.iq4[p]), abs_v = _mm512_abs_epi8(v);
      const __mmask64 negative = _mm512_movepi8_mask(v);
      for (int r = 0; r < R; ++r) {
        const __m256i a0 = load(a[r][b].qs + 64 * p), a1 = load(a[r][b].qs + 64 * p + 32);
        __m512i av = join(_mm256_permute2x128_si256(a0, a1, 0x20), _mm256_permute2x128_si256(a0, a1, 0x31));
        av = _mm512_mask_sub_epi8(av, negative, zero, av);
        acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(abs_v, av), scale);
      }
    }
    fold<R>(sum, halves<R>(acc).v, w[b].d, a, b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

}  // namespace

loom_gguf::KQuantKernels avx512_kquant_kernels() {
  return loom_gguf::KQuantKernels{
      tile<g::BlockQ2_K, &dot_q2_k<kRows>, &dot_q2_k<1>>,     tile<g::BlockQ3_K, &dot_q3_k<kRows>, &dot_q3_k<1>>,
      tile<g::BlockQ4_K, &dot_q4_q5_k<g::BlockQ4_K, kRows>, &dot_q4_q5_k<g::BlockQ4_K, 1>>,     tile<g::BlockQ5_K, &dot_q4_q5_k<g::BlockQ5_K, kRows>, &dot_q4_q5_k<g::BlockQ5_K, 1>>,
      tile<g::BlockQ6_K, &dot_q6_k<kRows>, &dot_q6_k<1>>,     tile<g::BlockIQ4_XS, &dot_iq4_xs<kRows>, &dot_iq4_xs<1>>};
}

#pragma GCC pop_options

}  // namespace LOOM_KQ512_NAMESPACE

#endif  // LOOM_GGUF_HAVE_AVX2
