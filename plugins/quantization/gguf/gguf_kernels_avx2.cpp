// AVX2+FMA(+F16C) kernels, compiled for that ISA only inside this file's target region and
// called only after cpu_has_avx2_fma().
//
// Integer dot products without VNNI: for a 32-value block, _mm256_maddubs_epi16 multiplies
// unsigned by signed bytes and adds pairs into int16, and _mm256_madd_epi16 widens pairs of those
// into int32. Q8_0 weights take the sign trick,
// Q4_0 nibbles go in unsigned with the -8 folded out per activation block (see LoadQ4_0). Each
// block's int32 lanes become floats and are folded into 8 float lanes by one FMA with the
// block's scale; the lanes are summed by a fixed tree at the end.
//
// Register blocking (Q8_0, Q4_0): a micro-kernel holds R activation rows x C weight rows of
// accumulators, so each unpacked weight block feeds R rows and each activation block C weight
// rows. Cache blocking comes from the caller (a tile of weight rows stays in L2 while every
// activation row streams past). Every (R, C) runs the same per-element sequence, so results do
// not depend on n or on the grouping.
#include <cstdint>

#include "gguf_kernels.hpp"
#include "loom/sdk_gguf_blocks.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

#include <immintrin.h>

namespace loom_gguf {

bool cpu_has_avx2_fma() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

namespace g = loom::sdk::gguf;

// Everything below is compiled for AVX2+FMA+F16C; no standard-library template is used in it.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

inline __attribute__((always_inline)) float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

inline __attribute__((always_inline)) float half(uint16_t h) { return _cvtsh_ss(h); }

// A weight block as 32 bytes for maddubs, and how a row's products come out of it. Both give
// every (activation block, weight block) pair the same eight int32 lanes (sums of four exact
// products), so Q8_0 and Q4_0 share the float part and the two Q4_0 forms agree bit for bit.
//
// Q8_0: signed weights go through the sign trick: |w| as the unsigned operand, a with w's sign as
// the signed one (|w|, |a| <= 128, so a pair sums to at most 2 * 128 * 127 and never saturates).
struct LoadQ8_0 {
  using Block = g::BlockQ8_0;
  static constexpr bool kNibbles = false;
  static __m256i q(const Block& blk) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs)); }
};
// Q4_0: the nibbles (0..15) go to maddubs as they are; the -8 comes back per activation block as
// 8 * (a_2i + a_2i+1) in int16, computed once and subtracted from every weight row's pairs
// (|15 * a0 + 15 * a1| <= 3840 and the difference is the exact (q - 8) * a pair sum).
struct LoadQ4_0 {
  using Block = g::BlockQ4_0;
  static constexpr bool kNibbles = true;
  static __m256i q(const Block& blk) {
    // The 16 bytes in both halves (a load-port broadcast), the upper half shifted by 4: low
    // nibbles are values 0..15, high nibbles 16..31.
    const __m256i bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs)));
    return _mm256_and_si256(_mm256_srlv_epi64(bytes, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0xF));
  }
};

// y[r * ys + c] = dot(activation row r, weight row c) for r < R, c < C (R > 1).
template <class Load, int R, int C>
inline __attribute__((always_inline)) void micro(const uint8_t* w, int64_t w_row_bytes, const uint8_t* xq,
                                                 int64_t xq_row_bytes, int64_t nb, float* y, int64_t ys) {
  using WB = typename Load::Block;
  const WB* wr[C];
  const g::BlockQ8_0* ar[R];
  for (int c = 0; c < C; ++c) wr[c] = reinterpret_cast<const WB*>(w + c * w_row_bytes);
  for (int r = 0; r < R; ++r) ar[r] = reinterpret_cast<const g::BlockQ8_0*>(xq + r * xq_row_bytes);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  // Q8_0's |w| is formed once per block and reused R times (one row goes to micro_row).
  static_assert(R > 1, "one activation row takes micro_row");
  for (int64_t b = 0; b < nb; ++b) {
    __m256i wq[C], wabs[C];
    float dw[C];
    for (int c = 0; c < C; ++c) {
      wq[c] = Load::q(wr[c][b]);
      if constexpr (!Load::kNibbles) wabs[c] = _mm256_sign_epi8(wq[c], wq[c]);
      dw[c] = half(wr[c][b].d);
    }
    for (int r = 0; r < R; ++r) {
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ar[r][b].qs));
      const float da = half(ar[r][b].d);
      __m256i offset = _mm256_setzero_si256();  // Q4_0: 8 * (a_2i + a_2i+1)
      if constexpr (Load::kNibbles) offset = _mm256_maddubs_epi16(_mm256_set1_epi8(8), av);
      for (int c = 0; c < C; ++c) {
        __m256i p;
        if constexpr (Load::kNibbles) {
          p = _mm256_sub_epi16(_mm256_maddubs_epi16(wq[c], av), offset);
        } else {
          p = _mm256_maddubs_epi16(wabs[c], _mm256_sign_epi8(av, wq[c]));
        }
        const __m256 s = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
        acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(dw[c] * da), s, acc[r][c]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) y[r * ys + c] = hsum(acc[r][c]);
}

// Block scales dw * da of one weight row for blocks [0, len) into sc. Four f16 scales are
// gathered into a 64-bit word with scalar integer ops (ports the vector kernel leaves idle),
// two words make one cvtph of 8; dw * da is the same single rounding as the scalar product.
template <class WB>
inline __attribute__((always_inline)) void block_scales(const WB* wr, const float* da, int64_t len, float* sc) {
  int64_t b = 0;
  for (; b + 8 <= len; b += 8) {
    uint64_t lo = 0, hi = 0;
    for (int k = 0; k < 4; ++k) {
      lo |= uint64_t{wr[b + k].d} << (16 * k);
      hi |= uint64_t{wr[b + 4 + k].d} << (16 * k);
    }
    const __m128i h = _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo));
    _mm256_storeu_ps(sc + b, _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_loadu_ps(da + b)));
  }
  for (; b < len; ++b) sc[b] = half(wr[b].d) * da[b];
}

// One activation row x C weight rows (decode): micro<Load, 1, C>'s arithmetic, with the block
// scales computed ahead per chunk of blocks so the inner loop only broadcasts them from memory.
template <class Load, int C>
void micro_row(const uint8_t* w, int64_t w_row_bytes, const uint8_t* xq, int64_t nb, float* y) {
  using WB = typename Load::Block;
  constexpr int64_t kChunk = 64;
  const auto* a = reinterpret_cast<const g::BlockQ8_0*>(xq);
  const WB* wr[C];
  for (int c = 0; c < C; ++c) wr[c] = reinterpret_cast<const WB*>(w + c * w_row_bytes);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[C];
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
  alignas(32) float da[kChunk];
  alignas(32) float sc[C][kChunk];
  for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
    const int64_t len = nb - b0 < kChunk ? nb - b0 : kChunk;
    for (int64_t b = 0; b < len; ++b) da[b] = half(a[b0 + b].d);
    for (int c = 0; c < C; ++c) block_scales(wr[c] + b0, da, len, sc[c]);
    for (int64_t b = 0; b < len; ++b) {
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b0 + b].qs));
      __m256i offset = _mm256_setzero_si256();  // Q4_0: 8 * (a_2i + a_2i+1)
      if constexpr (Load::kNibbles) offset = _mm256_maddubs_epi16(_mm256_set1_epi8(8), av);
      for (int c = 0; c < C; ++c) {
        const __m256i wq = Load::q(wr[c][b0 + b]);
        __m256i p;
        if constexpr (Load::kNibbles) {
          p = _mm256_sub_epi16(_mm256_maddubs_epi16(wq, av), offset);
        } else {
          p = _mm256_maddubs_epi16(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(av, wq));
        }
        const __m256 s = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
        acc[c] = _mm256_fmadd_ps(_mm256_broadcast_ss(&sc[c][b]), s, acc[c]);
      }
    }
  }
  for (int c = 0; c < C; ++c) y[c] = hsum(acc[c]);
}

// All n_rows weight rows against R activation rows: blocks of C, then single rows.
template <class Load, int R, int C>
void row_group(const uint8_t* w, int64_t w_row_bytes, int64_t n_rows, const uint8_t* xq, int64_t xq_row_bytes,
               int64_t nb, float* y, int64_t ys) {
  int64_t j = 0;
  if constexpr (R == 1) {
    for (; j + C <= n_rows; j += C) micro_row<Load, C>(w + j * w_row_bytes, w_row_bytes, xq, nb, y + j);
    for (; j < n_rows; ++j) micro_row<Load, 1>(w + j * w_row_bytes, w_row_bytes, xq, nb, y + j);
  } else {
    for (; j + C <= n_rows; j += C)
      micro<Load, R, C>(w + j * w_row_bytes, w_row_bytes, xq, xq_row_bytes, nb, y + j, ys);
    for (; j < n_rows; ++j) micro<Load, R, 1>(w + j * w_row_bytes, w_row_bytes, xq, xq_row_bytes, nb, y + j, ys);
  }
}

template <class Load, int kDecodeC>
void tile_q0(const uint8_t* w, int64_t w_row_bytes, int64_t n_rows, const uint8_t* xq, int64_t xq_row_bytes,
             int64_t n, int64_t in, float* y, int64_t ys) {
  const int64_t nb = in / g::kQK;
  int64_t t = 0;
  // 3 x 2 is the largest block whose 6 accumulators, weights and temporaries fit the 16 ymm
  // registers (4 x 2 spills two accumulators, putting a store-load on their FMA chains). One
  // activation row (decode) takes kDecodeC weight rows: 8 for Q4_0, whose cheap unpacking
  // leaves registers for 8 accumulators; 4 for Q8_0, which needs |w| temporaries.
  for (; t + 3 <= n; t += 3)
    row_group<Load, 3, 2>(w, w_row_bytes, n_rows, xq + t * xq_row_bytes, xq_row_bytes, nb, y + t * ys, ys);
  const uint8_t* x = xq + t * xq_row_bytes;
  switch (n - t) {
    case 2: row_group<Load, 2, 2>(w, w_row_bytes, n_rows, x, xq_row_bytes, nb, y + t * ys, ys); break;
    case 1: row_group<Load, 1, kDecodeC>(w, w_row_bytes, n_rows, x, xq_row_bytes, nb, y + t * ys, ys); break;
    default: break;
  }
}

// Activation rows to Q8_0, the same bits as g::quantize_q8_0: amax by max_ps (exact, and like
// std::max it keeps the running value when x is NaN), d and 1/d in scalar exactly as there, and
// x * id rounded by cvtps (round-to-nearest-even, as lrintf in the default mode). The packs
// interleave 128-bit lanes; one permute restores the value order.
void quantize_q8_0_avx2(const float* x, g::BlockQ8_0* y, int64_t n_blocks) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < n_blocks; ++b, x += g::kQK) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(x + 8 * k);
      amax = _mm256_max_ps(_mm256_andnot_ps(sign, v[k]), amax);
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    const float d = _mm_cvtss_f32(m) / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = loom::sdk::f32_to_f16(d);
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], idv));
    const __m256i q16 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), _mm256_permutevar8x32_epi32(q16, order));
  }
}

}  // namespace

Kernels avx2_kernels() {
  return Kernels{&tile_q0<LoadQ8_0, 4>, &tile_q0<LoadQ4_0, 8>, &quantize_q8_0_avx2, "avx2", avx2_kquant_kernels()};
}

#pragma GCC pop_options

}  // namespace loom_gguf

#endif  // LOOM_GGUF_HAVE_AVX2
