// AVX2 kernels on Q4_0 and Q8_0 weights in the x8 layout (gguf_repack.hpp), compiled for
// AVX2+FMA+F16C and called only after cpu_has_avx2_fma().
//
// Per block and 8 weight rows: chunks of 32 bytes, one 32-bit lane per weight row; each meets
// 4 activation bytes broadcast to all 8 lanes in one maddubs, so lane r holds row r's pair sums
// and a block ends as 8 exact int32 sums, one per row, with no horizontal reduction. Then
// acc = fma(d_w * d_a, float(sum), acc), one lane per row: the fold order of every (activation
// row, weight row) pair is block 0, 1, ... whatever n is and however rows share the loop.
//
// GEMM: R activation rows (R = 4, fewer at the end) share each loaded and unpacked weight
// chunk; their int sums and float accumulators, the weight registers and temporaries fit the 16
// ymm registers. Decode (R = 1) streams each group's bytes once, in address order.
#include <cstdint>
#include <cstring>

#include "gguf_kernels.hpp"
#include "gguf_repack.hpp"
#include "loom/sdk_gguf_blocks.hpp"

#ifdef LOOM_GGUF_HAVE_AVX2

#include <immintrin.h>

namespace loom_gguf {

namespace g = loom::sdk::gguf;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

inline __attribute__((always_inline)) __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

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

// R activation rows x one 8-row group, all nb blocks; y rows ys apart, n_out (<= 8) columns.
// Per (row, lane) the blocks fold in order: acc = fma(d_w * d_a, float(sum), acc).
template <class F, int R>
inline __attribute__((always_inline)) void group_rows(const uint8_t* grp, int64_t nb, const g::BlockQ8_0* const* a,
                                                      const float* const* da, const int32_t* const* off, float* y,
                                                      int64_t ys, int64_t n_out) {
  const auto* scales = reinterpret_cast<const __m128i*>(grp + nb * F::kQuantBytes);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i sum[R];
    F::template sums<R>(grp + b * F::kQuantBytes, a, b, off, sum);
    const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(scales + b));
    for (int r = 0; r < R; ++r)
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(da[r][b])), _mm256_cvtepi32_ps(sum[r]), acc[r]);
  }
  for (int r = 0; r < R; ++r) {
    if (n_out == kGroupRows) {
      _mm256_storeu_ps(y + r * ys, acc[r]);
    } else {
      alignas(32) float tmp[kGroupRows];
      _mm256_store_ps(tmp, acc[r]);
      for (int64_t c = 0; c < n_out; ++c) y[r * ys + c] = tmp[c];
    }
  }
}

// Decode (one activation row): two 8-row groups side by side, so the two block streams overlap
// and each activation broadcast serves 16 rows. Each lane keeps its own fold order.
template <class F>
inline __attribute__((always_inline)) void group_pair(const uint8_t* ga, const uint8_t* gb, int64_t nb,
                                                      const g::BlockQ8_0* const* a, const float* const* da,
                                                      const int32_t* const* off, float* y) {
  const auto* sa = reinterpret_cast<const __m128i*>(ga + nb * F::kQuantBytes);
  const auto* sb = reinterpret_cast<const __m128i*>(gb + nb * F::kQuantBytes);
  __m256 acc_a = _mm256_setzero_ps(), acc_b = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i sum_a, sum_b;
    F::template sums<1>(ga + b * F::kQuantBytes, a, b, off, &sum_a);
    F::template sums<1>(gb + b * F::kQuantBytes, a, b, off, &sum_b);
    const __m256 d = _mm256_set1_ps(da[0][b]);
    acc_a = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtph_ps(_mm_load_si128(sa + b)), d), _mm256_cvtepi32_ps(sum_a), acc_a);
    acc_b = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtph_ps(_mm_load_si128(sb + b)), d), _mm256_cvtepi32_ps(sum_b), acc_b);
  }
  _mm256_storeu_ps(y, acc_a);
  _mm256_storeu_ps(y + kGroupRows, acc_b);
}

template <class F, int R>
void rows_x_groups(const PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
                   const ActivationBlockInfo& info, int64_t t0, float* y, int64_t ys) {
  const int64_t nb = w.n_blocks;
  const g::BlockQ8_0* a[R];
  const float* da[R];
  const int32_t* off[R];
  for (int r = 0; r < R; ++r) {
    a[r] = reinterpret_cast<const g::BlockQ8_0*>(xq + (t0 + r) * xq_row_bytes);
    da[r] = info.d + (t0 + r) * nb;
    off[r] = info.offset + (t0 + r) * nb;
  }
  int64_t grp = g0;
  if constexpr (R == 1) {
    // Full pairs of full groups; a short last group takes the general path below.
    for (; grp + 1 < g1 && (grp + 2) * kGroupRows <= w.n_rows; grp += 2)
      group_pair<F>(w.group(grp), w.group(grp + 1), nb, a, da, off, y + t0 * ys + (grp - g0) * kGroupRows);
  }
  for (; grp < g1; ++grp) {
    const int64_t j0 = grp * kGroupRows;
    const int64_t n_out = w.n_rows - j0 < kGroupRows ? w.n_rows - j0 : kGroupRows;
    group_rows<F, R>(w.group(grp), nb, a, da, off, y + t0 * ys + (j0 - g0 * kGroupRows), ys, n_out);
  }
}

template <class F>
void gemm_x8(const PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
             const ActivationBlockInfo& info, int64_t n, float* y, int64_t ys) {
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) rows_x_groups<F, 4>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys);
  switch (n - t) {
    case 3: rows_x_groups<F, 3>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys); break;
    case 2: rows_x_groups<F, 2>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys); break;
    case 1: rows_x_groups<F, 1>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys); break;
    default: break;
  }
}

}  // namespace

PackedKernel avx2_q4_0_x8_kernel() { return &gemm_x8<Q4_0x8>; }
PackedKernel avx2_q8_0_x8_kernel() { return &gemm_x8<Q8_0x8>; }

#pragma GCC pop_options

}  // namespace loom_gguf

#endif  // LOOM_GGUF_HAVE_AVX2
