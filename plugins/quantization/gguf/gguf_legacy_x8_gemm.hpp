// The GEMM over legacy-x8 weights (gguf_legacy_kernels.hpp: Q4_1, Q5_0, Q5_1, IQ4_NL), generic
// in how a block's exact int32 sums are formed: F::sums<R>(record, a, b, off, out) gives, lane =
// weight row, the 8 sums of block b against R activation rows. Included inside an anonymous
// namespace by each kernel file after its `#pragma GCC target`, so each instruction set
// compiles its own copy; it also gives the F types legacy_bcast4.
//
// F also names its activation block (F::Act: Q8_0 or Q8_1) and where its record keeps the 8 f16
// scales (F::kScaleAt) and, for Q4_1/Q5_1, the 8 f16 minimums (F::kMinAt, else -1).
//
// Per (activation row, weight row) the blocks fold in order, block 0, 1, ...:
//   acc = fma(d_w * d_a, float(sum), acc), then (minimums) acc = fma(m_w, s_a, acc)
// whatever n is and however rows share the loop, so kernels whose F gives the same integers
// give the same bits.
//
// GEMM: R activation rows (R = 4, fewer at the end) share each loaded and unpacked record.
// Decode (R = 1) reads one group at a time, in address order: two groups side by side (two
// streams a group apart) made SmolLM2 Q4_1 decode 1.5x slower at 2 threads on a Zen 4 part,
// where the one-stream loop with its prefetch reads the weights as fast as 2 decode rows do.
// Every record read asks for the one kStreamAhead bytes on (gguf_stream_prefetch.hpp).

// Where a record keeps what (gguf_legacy_kernels.hpp): Q4_1 (kQ5 false, kMin true), Q5_0 (true,
// false), Q5_1 (true, true); each F derives from its format's layout.
template <bool kQ5, bool kMin>
struct CodesLayout {
  using Act = std::conditional_t<kMin, loom::sdk::gguf::BlockQ8_1, loom::sdk::gguf::BlockQ8_0>;
  static constexpr int64_t kScaleAt = kQ5 ? 160 : 128;
  static constexpr int64_t kMinAt = kMin ? kScaleAt + 16 : -1;
  static constexpr int64_t kRecordBytes = kScaleAt + 16 + (kMin ? 16 : 0);
};
struct Iq4NlLayout {
  using Act = loom::sdk::gguf::BlockQ8_0;
  static constexpr int64_t kScaleAt = 128;
  static constexpr int64_t kMinAt = -1;
  static constexpr int64_t kRecordBytes = 144;
};

// 4 activation bytes broadcast to the 8 lanes (one per weight row).
inline __attribute__((always_inline)) __m256i legacy_bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Chunk j (< 4) of a record's codes, lane = weight row: lo holds values 4j..4j+3, hi values
// 16+4j..16+4j+3 of its row, one byte each (0..15, or 0..31 with the Q5 fifth bits).
template <bool kQ5>
inline __attribute__((always_inline)) void legacy_codes(const uint8_t* rec, int j, __m256i* lo, __m256i* hi) {
  const __m256i mask = _mm256_set1_epi8(0xF);
  const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 32 * j));
  *lo = _mm256_and_si256(w, mask);
  *hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), mask);
  if constexpr (kQ5) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 128));
    const __m256i fifth = _mm256_set1_epi8(0x10);
    *lo = _mm256_or_si256(*lo, _mm256_and_si256(_mm256_slli_epi32(bits, 4 - j), fifth));
    *hi = _mm256_or_si256(*hi, _mm256_and_si256(_mm256_srli_epi32(bits, j), fifth));
  }
}

// The fold of one block into one row's 8 lanes.
template <class F>
inline __attribute__((always_inline)) __m256 legacy_fold(const uint8_t* rec, float da, float sa, __m256i sum,
                                                         __m256 acc) {
  const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + F::kScaleAt)));
  acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(da)), _mm256_cvtepi32_ps(sum), acc);
  if constexpr (F::kMinAt >= 0) {
    const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + F::kMinAt)));
    acc = _mm256_fmadd_ps(mw, _mm256_set1_ps(sa), acc);
  }
  return acc;
}

// Where R activation rows' blocks and per-block floats start.
template <class F, int R>
struct LegacyRows {
  const typename F::Act* a[R];
  const float* da[R];
  const float* sa[R];
  const int32_t* off[R];
};

#include "gguf_x8_store.hpp"

// R activation rows x one 8-row group, all nb blocks; y rows ys apart, n_out (<= 8) columns.
template <class F, int R>
inline __attribute__((always_inline)) void legacy_group_rows(const uint8_t* grp, int64_t nb, const LegacyRows<F, R>& x,
                                                             float* y, int64_t ys, int64_t n_out) {
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = grp + b * F::kRecordBytes;
    loom_gguf::stream_prefetch<static_cast<uintptr_t>(F::kRecordBytes)>(rec);
    __m256i sum[R];
    F::template sums<R>(rec, x.a, b, x.off, sum);
    for (int r = 0; r < R; ++r) acc[r] = legacy_fold<F>(rec, x.da[r][b], F::kMinAt >= 0 ? x.sa[r][b] : 0.0f, sum[r], acc[r]);
  }
  x8_store<R>(acc, y, ys, n_out);
}

template <class F, int R>
void legacy_rows_x_groups(const loom_gguf::PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq,
                          int64_t xq_row_bytes, const loom_gguf::LegacyActivationInfo& info, int64_t t0, float* y,
                          int64_t ys) {
  constexpr int64_t kRows = loom_gguf::kGroupRows;
  const int64_t nb = w.n_blocks;
  LegacyRows<F, R> x;
  for (int r = 0; r < R; ++r) {
    x.a[r] = reinterpret_cast<const typename F::Act*>(xq + (t0 + r) * xq_row_bytes);
    x.da[r] = info.d + (t0 + r) * nb;
    x.sa[r] = F::kMinAt >= 0 ? info.s + (t0 + r) * nb : nullptr;
    x.off[r] = F::kMinAt >= 0 ? nullptr : info.offset + (t0 + r) * nb;
  }
  for (int64_t grp = g0; grp < g1; ++grp) {
    const int64_t j0 = grp * kRows;
    const int64_t n_out = w.n_rows - j0 < kRows ? w.n_rows - j0 : kRows;
    legacy_group_rows<F, R>(w.group(grp), nb, x, y + t0 * ys + (j0 - g0 * kRows), ys, n_out);
  }
}

template <class F>
void legacy_gemm_x8(const loom_gguf::PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
                    const loom_gguf::LegacyActivationInfo& info, int64_t n, float* y, int64_t ys) {
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) legacy_rows_x_groups<F, 4>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys);
  switch (n - t) {
    case 3: legacy_rows_x_groups<F, 3>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys); break;
    case 2: legacy_rows_x_groups<F, 2>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys); break;
    case 1: legacy_rows_x_groups<F, 1>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys); break;
    default: break;
  }
}
