// AVX2 K-quant kernels (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS x Q8_K), compiled for AVX2+FMA+F16C inside this
// file's target region and called only after cpu_has_avx2_fma().
//
// Per super-block the codes are unpacked 32 at a time into bytes in value order and multiplied
// with the activations by maddubs (unsigned codes x signed activations, pairs summed into int16,
// never saturating: 2 * 63 * 128 < 2^15 for the largest code, Q6_K's, and the sign trick's
// |v| <= 127 likewise); madd then
// applies each 16-value half's sub-block scale and widens to int32. The super-block's integer sum
// is reduced to one exact int32 and folded into the row's float sum by the portable kernels' own
// scalar expression (this file, like them, is built with -ffp-contract=off), so these kernels
// give the portable ones' bits exactly: batch-invariant, and one answer per row on every CPU.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gguf_kernels_kquant.hpp"
#include "gguf_stream_prefetch.hpp"
#include "loom/sdk_gguf_blocks.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

#include <immintrin.h>

namespace loom_gguf {

namespace g = loom::sdk::gguf;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

#include "gguf_kquant_simd.hpp"

// Q2_K: the 2-bit plane k of qs[32h..] holds values 128h + 32k + l, sub-blocks 8h + 2k, +1.
// Scales and mins are the nibbles of scales[16]; sum_s m_s * bsum_s is one madd.
template <int R>
void dot_q2_k(const g::BlockQ2_K* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  const __m256i mask2 = _mm256_set1_epi8(3);
  const __m256i mask4 = _mm256_set1_epi16(0xF);
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    const __m256i scales = _mm256_and_si256(sc16, mask4), mins = _mm256_srli_epi16(sc16, 4);
    const __m256i half_scales[2] = {_mm256_permute2x128_si256(scales, scales, 0x00),
                                    _mm256_permute2x128_si256(scales, scales, 0x11)};
    __m256i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      __m256i q = load(w[b].qs + 32 * h);
      for (int k = 0; k < 4; ++k) {
        const __m256i codes = _mm256_and_si256(q, mask2);
        q = _mm256_srli_epi16(q, 2);
        const __m256i scale = pick(half_scales[h], kPick.pair[k]);
        for (int r = 0; r < R; ++r) {
          const __m256i p = _mm256_maddubs_epi16(codes, load(a[r][b].qs + 128 * h + 32 * k));
          acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(p, scale));
        }
      }
    }
    fold_with_mins<R>(
        sum, acc, [&](const int16_t* bsums) { return _mm256_madd_epi16(mins, load(bsums)); }, w[b].d, w[b].dmin, a, b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

// Q3_K: Q2_K's planes plus bit 4h + k of hmask[l] as the code's bit 2; codes 0..7 go in
// unsigned and the -4 comes back as 4 * sum_s scale_s * bsum_s.
template <int R>
void dot_q3_k(const g::BlockQ3_K* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  const __m256i mask2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    const __m256i scales = q3_k_scales(w[b].scales);
    const __m256i half_scales[2] = {_mm256_permute2x128_si256(scales, scales, 0x00),
                                    _mm256_permute2x128_si256(scales, scales, 0x11)};
    __m256i hm = load(w[b].hmask);
    __m256i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      __m256i q = load(w[b].qs + 32 * h);
      for (int k = 0; k < 4; ++k) {
        const __m256i high = _mm256_slli_epi16(_mm256_and_si256(hm, one), 2);
        const __m256i codes = _mm256_or_si256(_mm256_and_si256(q, mask2), high);
        q = _mm256_srli_epi16(q, 2);
        hm = _mm256_srli_epi16(hm, 1);
        const __m256i scale = pick(half_scales[h], kPick.pair[k]);
        for (int r = 0; r < R; ++r) {
          const __m256i p = _mm256_maddubs_epi16(codes, load(a[r][b].qs + 128 * h + 32 * k));
          acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(p, scale));
        }
      }
    }
    for (int r = 0; r < R; ++r)
      acc[r] = _mm256_sub_epi32(acc[r], _mm256_slli_epi32(_mm256_madd_epi16(scales, load(a[r][b].bsums)), 2));
    fold<R>(sum, acc, w[b].d, a, b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

// Q4_K and Q5_K: chunk c of qs holds sub-blocks 2c (low nibbles) and 2c + 1 (high), under one
// scale packing. Q5_K adds bit 4 of value 32j + l as bit j of qh[l], taken off qh two planes per
// chunk.
template <class W, int R>
void dot_q4_q5_k(const W* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  constexpr bool kHigh = std::is_same_v<W, g::BlockQ5_K>;
  const __m256i mask4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    __m128i sc8, mn8;
    q5_k_scales_mins(w[b].scales, &sc8, &mn8);
    const __m256i scales = both_halves(sc8);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kHigh) qh = load(w[b].qh);
    __m256i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load(w[b].qs + 32 * c);
      __m256i lo = _mm256_and_si256(q, mask4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), mask4);
      if constexpr (kHigh) {
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(qh, one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 1), one), 4));
        qh = _mm256_srli_epi16(qh, 2);
      }
      const __m256i s_lo = pick(scales, kPick.same[2 * c]), s_hi = pick(scales, kPick.same[2 * c + 1]);
      for (int r = 0; r < R; ++r) {
        const __m256i p_lo = _mm256_maddubs_epi16(lo, load(a[r][b].qs + 64 * c));
        const __m256i p_hi = _mm256_maddubs_epi16(hi, load(a[r][b].qs + 64 * c + 32));
        acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(p_lo, s_lo));
        acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(p_hi, s_hi));
      }
    }
    fold_with_mins<R>(
        sum, acc, [&](const int16_t* bsums) { return q5_k_min_sums(mn8, bsums); }, w[b].d, w[b].dmin, a, b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

// Q6_K: in half h, value 128h + 32k + l has its low nibble in ql[64h + 32(k % 2) + l] (high
// nibble for k >= 2) and 2 high bits at bit 2k of qh[32h + l]. The codes 0..63 go in unsigned
// and the -32 comes back as 32 * sum_s scale_s * bsum_s; the 16 int8 scales, one per 16 values,
// are picked as Q2_K's.
template <int R>
void dot_q6_k(const g::BlockQ6_K* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  const __m256i mask4 = _mm256_set1_epi8(0xF), mask2 = _mm256_set1_epi8(3);
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    const __m256i half_scales[2] = {_mm256_permute2x128_si256(scales, scales, 0x00),
                                    _mm256_permute2x128_si256(scales, scales, 0x11)};
    __m256i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      __m256i qh = load(w[b].qh + 32 * h);
      const __m256i ql[2] = {load(w[b].ql + 64 * h), load(w[b].ql + 64 * h + 32)};
      for (int k = 0; k < 4; ++k) {
        const __m256i low = k < 2 ? _mm256_and_si256(ql[k], mask4) : _mm256_and_si256(_mm256_srli_epi16(ql[k - 2], 4), mask4);
        const __m256i codes = _mm256_or_si256(low, _mm256_slli_epi16(_mm256_and_si256(qh, mask2), 4));
        qh = _mm256_srli_epi16(qh, 2);
        const __m256i scale = pick(half_scales[h], kPick.pair[k]);
        for (int r = 0; r < R; ++r) {
          const __m256i p = _mm256_maddubs_epi16(codes, load(a[r][b].qs + 128 * h + 32 * k));
          acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(p, scale));
        }
      }
    }
    for (int r = 0; r < R; ++r)
      acc[r] = _mm256_sub_epi32(acc[r], _mm256_slli_epi32(_mm256_madd_epi16(scales, load(a[r][b].bsums)), 5));
    fold<R>(sum, acc, w[b].d, a, b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

// IQ4_XS: 32 bytes of qs are sub-blocks 2p (bytes 0..15) and 2p + 1; their low nibbles are each
// sub-block's first 16 values, the high nibbles its last 16, so the activations are regrouped
// by 128-bit halves to match. pshufb maps indices to kIQ4NL levels; signed x signed goes through
// the sign trick.
template <int R>
void dot_iq4_xs(const g::BlockIQ4_XS* w, const g::BlockQ8_K* const* a, int64_t nb, float* out) {
  const __m256i mask4 = _mm256_set1_epi8(0xF);
  const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g::kIQ4NL)));
  float sum[R];
  for (int r = 0; r < R; ++r) sum[r] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(w + b);
    const __m256i scales = both_halves(iq4_xs_scales(w[b]));
    __m256i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i q = load(w[b].qs + 32 * p);
      const __m256i v_lo = _mm256_shuffle_epi8(levels, _mm256_and_si256(q, mask4));
      const __m256i v_hi = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(q, 4), mask4));
      const __m256i scale = pick(scales, kPick.pair[p]);
      const __m256i abs_lo = _mm256_sign_epi8(v_lo, v_lo), abs_hi = _mm256_sign_epi8(v_hi, v_hi);
      for (int r = 0; r < R; ++r) {
        const __m256i a0 = load(a[r][b].qs + 64 * p), a1 = load(a[r][b].qs + 64 * p + 32);
        const __m256i a_lo = _mm256_permute2x128_si256(a0, a1, 0x20);  // values 0..15 of each sub-block
        const __m256i a_hi = _mm256_permute2x128_si256(a0, a1, 0x31);  // values 16..31
        const __m256i p_lo = _mm256_maddubs_epi16(abs_lo, _mm256_sign_epi8(a_lo, v_lo));
        const __m256i p_hi = _mm256_maddubs_epi16(abs_hi, _mm256_sign_epi8(a_hi, v_hi));
        acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(p_lo, scale));
        acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(p_hi, scale));
      }
    }
    fold<R>(sum, acc, w[b].d, a, b);
  }
  for (int r = 0; r < R; ++r) out[r] = sum[r];
}

}  // namespace

KQuantKernels avx2_kquant_kernels() {
  return KQuantKernels{
      tile<g::BlockQ2_K, &dot_q2_k<kRows>, &dot_q2_k<1>>,     tile<g::BlockQ3_K, &dot_q3_k<kRows>, &dot_q3_k<1>>,
      tile<g::BlockQ4_K, &dot_q4_q5_k<g::BlockQ4_K, kRows>, &dot_q4_q5_k<g::BlockQ4_K, 1>>,     tile<g::BlockQ5_K, &dot_q4_q5_k<g::BlockQ5_K, kRows>, &dot_q4_q5_k<g::BlockQ5_K, 1>>,
      tile<g::BlockQ6_K, &dot_q6_k<kRows>, &dot_q6_k<1>>,     tile<g::BlockIQ4_XS, &dot_iq4_xs<kRows>, &dot_iq4_xs<1>>};
}

#pragma GCC pop_options

}  // namespace loom_gguf

#endif  // LOOM_GGUF_HAVE_AVX2
