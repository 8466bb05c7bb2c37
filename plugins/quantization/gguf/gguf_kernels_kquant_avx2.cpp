// AVX2 K-quant kernels (Q2_K, Q3_K, Q5_K, IQ4_XS x Q8_K), compiled for AVX2+FMA+F16C inside this
// file's target region and called only after cpu_has_avx2_fma().
//
// Per super-block the codes are unpacked 32 at a time into bytes in value order and multiplied
// with the activations by maddubs (unsigned codes x signed activations, pairs summed into int16,
// never saturating: |code| <= 31 or the sign trick's |v| <= 127 against |a| <= 127); madd then
// applies each 16-value half's sub-block scale and widens to int32. The super-block's integer sum
// is reduced to one exact int32 and folded into the row's float sum by the portable kernels' own
// scalar expression (this file, like them, is built with -ffp-contract=off), so these kernels
// give the portable ones' bits exactly: batch-invariant, and one answer per row on every CPU.
#include <cstdint>

#include "gguf_kernels_kquant.hpp"
#include "loom/sdk_gguf_blocks.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

#include <immintrin.h>

namespace loom_gguf {

namespace g = loom::sdk::gguf;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

using loom::sdk::f16_to_f32;

inline __attribute__((always_inline)) int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// madd's scale operand for 32 values that span 16-value sub-blocks s and s + 1 (low, high half).
inline __attribute__((always_inline)) __m256i pair_scale(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(hi)), _mm_set1_epi16(static_cast<int16_t>(lo)));
}

inline __attribute__((always_inline)) __m256i load(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Q2_K: the 2-bit plane k of qs[32h..] holds values 128h + 32k + l, sub-blocks 8h + 2k, +1.
float dot_q2_k(const g::BlockQ2_K* w, const g::BlockQ8_K* a, int64_t nb) {
  const __m256i mask2 = _mm256_set1_epi8(3);
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* sc = w[b].scales;
    __m256i acc = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      __m256i q = load(w[b].qs + 32 * h);
      for (int k = 0; k < 4; ++k) {
        const __m256i codes = _mm256_and_si256(q, mask2);
        q = _mm256_srli_epi16(q, 2);
        const int s = 8 * h + 2 * k;
        const __m256i p = _mm256_maddubs_epi16(codes, load(a[b].qs + 128 * h + 32 * k));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, pair_scale(sc[s] & 0xF, sc[s + 1] & 0xF)));
      }
    }
    int32_t msum = 0;
    for (int s = 0; s < 16; ++s) msum += (sc[s] >> 4) * int32_t{a[b].bsums[s]};
    sum += (f16_to_f32(w[b].d) * a[b].d) * static_cast<float>(hsum_i32(acc)) -
           (f16_to_f32(w[b].dmin) * a[b].d) * static_cast<float>(msum);
  }
  return sum;
}

// Q3_K: Q2_K's planes plus bit 4h + k of hmask[l] as the code's bit 2; codes 0..7 go in
// unsigned and the -4 comes back as 4 * sum_s scale_s * bsum_s.
float dot_q3_k(const g::BlockQ3_K* w, const g::BlockQ8_K* a, int64_t nb) {
  const __m256i mask2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int scale[16];
    for (int s = 0; s < 16; ++s) scale[s] = g::q3_k_scale(w[b], s);
    __m256i hm = load(w[b].hmask);
    __m256i acc = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      __m256i q = load(w[b].qs + 32 * h);
      for (int k = 0; k < 4; ++k) {
        const __m256i high = _mm256_slli_epi16(_mm256_and_si256(hm, one), 2);
        const __m256i codes = _mm256_or_si256(_mm256_and_si256(q, mask2), high);
        q = _mm256_srli_epi16(q, 2);
        hm = _mm256_srli_epi16(hm, 1);
        const int s = 8 * h + 2 * k;
        const __m256i p = _mm256_maddubs_epi16(codes, load(a[b].qs + 128 * h + 32 * k));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, pair_scale(scale[s], scale[s + 1])));
      }
    }
    int32_t bias = 0;
    for (int s = 0; s < 16; ++s) bias += scale[s] * int32_t{a[b].bsums[s]};
    sum += (f16_to_f32(w[b].d) * a[b].d) * static_cast<float>(hsum_i32(acc) - 4 * bias);
  }
  return sum;
}

// Q5_K: chunk c of qs holds sub-blocks 2c (low nibbles) and 2c + 1 (high); bit 4 of value
// 32j + l is bit j of qh[l], taken off qh two planes per chunk.
float dot_q5_k(const g::BlockQ5_K* w, const g::BlockQ8_K* a, int64_t nb) {
  const __m256i mask4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int sc[8], m[8];
    for (int j = 0; j < 8; ++j) g::q5_k_scale_min(j, w[b].scales, &sc[j], &m[j]);
    __m256i qh = load(w[b].qh);
    __m256i acc = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load(w[b].qs + 32 * c);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, mask4), _mm256_slli_epi16(_mm256_and_si256(qh, one), 4));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), mask4),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 1), one), 4));
      qh = _mm256_srli_epi16(qh, 2);
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load(a[b].qs + 64 * c));
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load(a[b].qs + 64 * c + 32));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p_lo, _mm256_set1_epi16(static_cast<int16_t>(sc[2 * c]))));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p_hi, _mm256_set1_epi16(static_cast<int16_t>(sc[2 * c + 1]))));
    }
    int32_t msum = 0;
    for (int j = 0; j < 8; ++j) msum += m[j] * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
    sum += (f16_to_f32(w[b].d) * a[b].d) * static_cast<float>(hsum_i32(acc)) -
           (f16_to_f32(w[b].dmin) * a[b].d) * static_cast<float>(msum);
  }
  return sum;
}

// IQ4_XS: 32 bytes of qs are sub-blocks 2p (bytes 0..15) and 2p + 1; their low nibbles are each
// sub-block's first 16 values, the high nibbles its last 16, so the activations are regrouped
// by 128-bit halves to match. pshufb maps indices to kIQ4NL levels; signed x signed goes through
// the sign trick.
float dot_iq4_xs(const g::BlockIQ4_XS* w, const g::BlockQ8_K* a, int64_t nb) {
  const __m256i mask4 = _mm256_set1_epi8(0xF);
  const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g::kIQ4NL)));
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    __m256i acc = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i q = load(w[b].qs + 32 * p);
      const __m256i v_lo = _mm256_shuffle_epi8(levels, _mm256_and_si256(q, mask4));
      const __m256i v_hi = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(q, 4), mask4));
      const __m256i a0 = load(a[b].qs + 64 * p), a1 = load(a[b].qs + 64 * p + 32);
      const __m256i a_lo = _mm256_permute2x128_si256(a0, a1, 0x20);  // values 0..15 of each sub-block
      const __m256i a_hi = _mm256_permute2x128_si256(a0, a1, 0x31);  // values 16..31
      const __m256i scale = pair_scale(g::iq4_xs_scale(w[b], 2 * p), g::iq4_xs_scale(w[b], 2 * p + 1));
      const __m256i p_lo = _mm256_maddubs_epi16(_mm256_sign_epi8(v_lo, v_lo), _mm256_sign_epi8(a_lo, v_lo));
      const __m256i p_hi = _mm256_maddubs_epi16(_mm256_sign_epi8(v_hi, v_hi), _mm256_sign_epi8(a_hi, v_hi));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p_lo, scale));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p_hi, scale));
    }
    sum += (f16_to_f32(w[b].d) * a[b].d) * static_cast<float>(hsum_i32(acc));
  }
  return sum;
}

}  // namespace

KQuantKernels avx2_kquant_kernels() {
  return KQuantKernels{&kquant_tile<g::BlockQ2_K, &dot_q2_k>, &kquant_tile<g::BlockQ3_K, &dot_q3_k>,
                       &kquant_tile<g::BlockQ5_K, &dot_q5_k>, &kquant_tile<g::BlockIQ4_XS, &dot_iq4_xs>};
}

#pragma GCC pop_options

}  // namespace loom_gguf

#endif  // LOOM_GGUF_HAVE_AVX2
