// AVX2+FMA(+F16C) GEMM on weight panels (none_panel.hpp), compiled for that ISA only inside this
// file's target region and called only after cpu_has_avx2_fma_f16c().
//
// Micro-kernel: R rows of x by P panels (16 features each) in R x 2P ymm accumulators, one lane
// per output element. Each k step loads 2P weight vectors (widened from f16/bf16 in registers),
// broadcasts R x values and issues R x 2P FMAs: 6 x 1 panel (12 FMAs per 2 loads + 6 broadcasts)
// for prefill, where x is packed [k][R] so the broadcasts read one sequential stream, and up to
// 4 panels for decode (1-5 rows), where the panels stream from memory and 8-12 independent
// chains hide the FMA latency.
// Prefill blocking: for each block of kBlockRows x rows and block_k() of k, x is packed once per
// thread (in L2) and every panel of the thread's range walks past it, its block_k() x 16 weight
// block (16 KiB) staying in L1 across the row groups. The 6 x 16 tile of y holds each element's
// partial chain between k blocks (stored, then reloaded: no bit changes).
#include <cstdint>

#include "none_panel.hpp"
#include "none_row_tiles.hpp"

#ifdef LOOM_NONE_HAVE_AVX2

#include <immintrin.h>

namespace loom_none {

bool cpu_has_avx2_fma_f16c() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

// Everything below is compiled for AVX2+FMA+F16C; no standard-library template is used in it,
// so no ISA-specific copy of one can be picked by the linker for the portable code.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

constexpr int kRows = 6;  // x rows per prefill micro-kernel

// How the micro-kernel reads 8 weights as f32; the f16/bf16 loaders widen exactly.
struct LoadF32 {
  using T = float;
  static __m256 vec(const float* p) { return _mm256_loadu_ps(p); }
};
struct LoadF16 {
  using T = uint16_t;
  static __m256 vec(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
};
struct LoadBF16 {
  using T = uint16_t;
  static __m256 vec(const uint16_t* p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
};

// c[r * ldc + j] (r < R, j < 16 P) continues its chain over kn steps of k: c = fma(x, w, c) with
// x = xp[k * R + r] and w = panel (j / 16) at w + (j / 16) * ps + k * 16 + j % 16. `first`
// starts every chain at 0 instead of reading c.
template <class Load, int R, int P, bool kStream = false>
inline __attribute__((always_inline)) void micro(const typename Load::T* w, int64_t ps, const float* xp, int64_t kn,
                                                 float* c, int64_t ldc, bool first) {
  using T = typename Load::T;
  // Decode (kStream): each panel stream prefetches ahead (none_panel.hpp) once per 64-byte line,
  // every 2 k steps for f16/bf16, every one for f32.
  constexpr int64_t kPerLine = 64 / (kPanel * static_cast<int64_t>(sizeof(T)));
  __m256 acc[R][2 * P];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < 2 * P; ++q) acc[r][q] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8 * q);
  for (int64_t k = 0; k < kn; ++k) {
    if (kStream && k % kPerLine == 0)
      for (int p = 0; p < P; ++p) stream_prefetch(w + p * ps + k * kPanel);
    __m256 wv[2 * P];
    for (int p = 0; p < P; ++p) {
      wv[2 * p] = Load::vec(w + p * ps + k * kPanel);
      wv[2 * p + 1] = Load::vec(w + p * ps + k * kPanel + 8);
    }
    for (int r = 0; r < R; ++r) {
      const __m256 xb = _mm256_broadcast_ss(xp + k * R + r);
      for (int q = 0; q < 2 * P; ++q) acc[r][q] = _mm256_fmadd_ps(xb, wv[q], acc[r][q]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < 2 * P; ++q) _mm256_storeu_ps(c + r * ldc + 8 * q, acc[r][q]);
}

// micro() on y, only its first `cols` features valid (the last panel of a weight whose out is
// not a multiple of 16): the partial tile goes through a local copy.
template <class Load, int R, int P>
void tile(const typename Load::T* w, int64_t ps, const float* xp, int64_t kn, float* y, int64_t ys, int64_t cols,
          bool first) {
  constexpr int64_t kCols = P * kPanel;
  if (cols == kCols) {
    micro<Load, R, P>(w, ps, xp, kn, y, ys, first);
    return;
  }
  alignas(32) float c[R * kCols] = {};
  if (!first)
    for (int r = 0; r < R; ++r)
      for (int64_t j = 0; j < cols; ++j) c[r * kCols + j] = y[r * ys + j];
  micro<Load, R, P>(w, ps, xp, kn, c, kCols, first);
  for (int r = 0; r < R; ++r)
    for (int64_t j = 0; j < cols; ++j) y[r * ys + j] = c[r * kCols + j];
}

// dst[k * 6 + r] = src[r][k] for k < 8, r < 6, and 2 more floats written past dst + 48 (the
// caller's slack, or the next columns, written after): 8 x 8 transpose, rows 6 and 7 zero.
inline void transpose6x8(const float* const* src, int64_t k, float* dst) {
  const __m256 z = _mm256_setzero_ps();
  const __m256 t0 = _mm256_unpacklo_ps(_mm256_loadu_ps(src[0] + k), _mm256_loadu_ps(src[1] + k));
  const __m256 t1 = _mm256_unpackhi_ps(_mm256_loadu_ps(src[0] + k), _mm256_loadu_ps(src[1] + k));
  const __m256 t2 = _mm256_unpacklo_ps(_mm256_loadu_ps(src[2] + k), _mm256_loadu_ps(src[3] + k));
  const __m256 t3 = _mm256_unpackhi_ps(_mm256_loadu_ps(src[2] + k), _mm256_loadu_ps(src[3] + k));
  const __m256 t4 = _mm256_unpacklo_ps(_mm256_loadu_ps(src[4] + k), _mm256_loadu_ps(src[5] + k));
  const __m256 t5 = _mm256_unpackhi_ps(_mm256_loadu_ps(src[4] + k), _mm256_loadu_ps(src[5] + k));
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, z, 0x44), s5 = _mm256_shuffle_ps(t4, z, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, z, 0x44), s7 = _mm256_shuffle_ps(t5, z, 0xEE);
  // In increasing k: each store's 2 spare floats are overwritten by the next one.
  _mm256_storeu_ps(dst + 0, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(dst + 6, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(dst + 12, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(dst + 18, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(dst + 24, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(dst + 30, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(dst + 36, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(dst + 42, _mm256_permute2f128_ps(s3, s7, 0x31));
}

// xp <- x rows [0, rows) (stride xs), features [k0, k0 + kn), in groups of kRows rows, each
// group [kn][group rows] so the micro-kernel's broadcasts read it in order. May write 8 floats
// past the packed rows (scratch_floats() leaves room).
void pack_rows(const float* x, int64_t xs, int64_t rows, int64_t k0, int64_t kn, float* xp) {
  for (int64_t b0 = 0; b0 < rows; b0 += kRows) {
    const int64_t g = rows - b0 < kRows ? rows - b0 : kRows;
    float* dst = xp + b0 * kn;
    int64_t k = 0;
    if (g == kRows) {
      const float* src[kRows];
      for (int r = 0; r < kRows; ++r) src[r] = x + (b0 + r) * xs + k0;
      for (; k + 8 <= kn; k += 8) transpose6x8(src, k, dst + k * kRows);
    }
    for (int64_t r = 0; r < g; ++r) {
      const float* src = x + (b0 + r) * xs + k0;
      for (int64_t kk = k; kk < kn; ++kk) dst[kk * g + r] = src[kk];
    }
  }
}

int64_t cols_of(const PanelView& w, int64_t p, int64_t panels) {
  const int64_t left = w.out - p * kPanel;
  return left < panels * kPanel ? left : panels * kPanel;
}

// 1-5 rows: bandwidth-bound on the weights, so P panels at once (4-12 accumulators) over the
// whole k range, x packed once.
template <class Load, int R, int P>
void decode(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, float* y, int64_t ys,
            float* xp) {
  using T = typename Load::T;
  const T* wd = static_cast<const T*>(w.data);
  const int64_t ps = w.in * kPanel;
  pack_rows(x, xs, R, 0, w.in, xp);
  int64_t p = p_begin;
  for (; p + P <= p_end && cols_of(w, p, P) == P * kPanel; p += P)
    micro<Load, R, P, true>(wd + p * ps, ps, xp, w.in, y + p * kPanel, ys, true);
  for (; p < p_end; ++p) tile<Load, R, 1>(wd + p * ps, ps, xp, w.in, y + p * kPanel, ys, cols_of(w, p, 1), true);
}

// Rows [0, mn) of one row block over one k block [k0, k0 + kn), for the panels [p_begin, p_end):
// xp is the block packed (pack_rows), y its first row. k0 == 0 starts the chains.
template <class Load>
void row_block(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t mn, int64_t k0,
               int64_t kn, float* y, int64_t ys) {
  using T = typename Load::T;
  const T* wd = static_cast<const T*>(w.data);
  const int64_t ps = w.in * kPanel;
  for (int64_t p = p_begin; p < p_end; ++p) {
    const T* wp = wd + p * ps + k0 * kPanel;
    const int64_t cols = cols_of(w, p, 1);
    float* yp = y + p * kPanel;
    int64_t b0 = 0;
    // The next panel's block (kn x 16 weights, from L3 or memory) comes into L2 a slice per
    // row group, while this panel's block computes out of L1.
    const char* ahead = p + 1 < p_end ? reinterpret_cast<const char*>(wp + ps) : nullptr;
    const int64_t ahead_bytes = kn * kPanel * static_cast<int64_t>(sizeof(T));
    const int64_t slice = (ahead_bytes / 64 + mn / kRows) / (mn / kRows > 0 ? mn / kRows : 1) * 64;
    int64_t ahead_done = 0;
    for (; b0 + kRows <= mn; b0 += kRows) {
      if (ahead != nullptr)
        for (int64_t e = ahead_done + slice; ahead_done < e && ahead_done < ahead_bytes; ahead_done += 64)
          _mm_prefetch(ahead + ahead_done, _MM_HINT_T1);
      // The next tile's partial sums (rows far apart in y, long evicted from L1 and L2 by
      // the other panels) are fetched while this tile computes, not when it is loaded.
      if (k0 > 0) {
        const float* next = b0 + 2 * kRows <= mn ? yp + (b0 + kRows) * ys : y + (p + 1) * kPanel;
        for (int r = 0; r < kRows; ++r) _mm_prefetch(reinterpret_cast<const char*>(next + r * ys), _MM_HINT_T0);
      }
      tile<Load, kRows, 1>(wp, ps, xp + b0 * kn, kn, yp + b0 * ys, ys, cols, k0 == 0);
    }
  }
  // The short last group several panels at a time (none_row_tiles.hpp).
  const int64_t whole = mn / kRows * kRows;
  const float* xs = xp + whole * kn;
  float* ys0 = y + whole * ys;
  loom_none::for_each_short_group_tile<4, 3, 2, 1, 1>(mn - whole, p_begin, p_end, w.out / kPanel,
                                                      [&]<int R, int P>(int64_t p) {
    tile<Load, R, P>(wd + p * ps + k0 * kPanel, ps, xs, kn, ys0 + p * kPanel, ys, cols_of(w, p, P), k0 == 0);
  });
}

template <class Load>
void gemm(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n, float* y,
          int64_t ys, float* xp) {
  switch (n) {
    // One row: 2 panels (4 chains, 16 bytes a cycle at FMA latency) rather than 4, so fewer weight
    // streams are open at once. llama-1b f16 with simd = "avx2" on a 2-core Zen 4 VM, one
    // sequence, 2 threads, builds alternating over 4 rounds: 13.5-15.4 -> 16.0-21.6 tok/s.
    case 1: decode<Load, 1, 2>(w, p_begin, p_end, x, xs, y, ys, xp); return;
    case 2: decode<Load, 2, 3>(w, p_begin, p_end, x, xs, y, ys, xp); return;
    case 3: decode<Load, 3, 2>(w, p_begin, p_end, x, xs, y, ys, xp); return;
    case 4: decode<Load, 4, 1>(w, p_begin, p_end, x, xs, y, ys, xp); return;
    case 5: decode<Load, 5, 1>(w, p_begin, p_end, x, xs, y, ys, xp); return;
    default: break;
  }
  const int64_t kb = block_k(w.dtype);
  for (int64_t m0 = 0; m0 < n; m0 += kBlockRows) {
    const int64_t mn = n - m0 < kBlockRows ? n - m0 : kBlockRows;
    for (int64_t k0 = 0; k0 < w.in; k0 += kb) {
      const int64_t kn = w.in - k0 < kb ? w.in - k0 : kb;
      pack_rows(x + m0 * xs, xs, mn, k0, kn, xp);
      row_block<Load>(w, p_begin, p_end, xp, mn, k0, kn, y + m0 * ys, ys);
    }
  }
}

#include "none_packed_gemm.hpp"

}  // namespace

void panel_gemm_avx2(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                     float* y, int64_t ys, float* scratch) {
  switch (w.dtype) {
    case LOOM_DTYPE_F16: gemm<LoadF16>(w, p_begin, p_end, x, xs, n, y, ys, scratch); break;
    case LOOM_DTYPE_BF16: gemm<LoadBF16>(w, p_begin, p_end, x, xs, n, y, ys, scratch); break;
    default: gemm<LoadF32>(w, p_begin, p_end, x, xs, n, y, ys, scratch); break;
  }
}

void pack_x_avx2(const PanelView& w, const float* x, int64_t xs, int64_t n, int64_t block, float* xp) {
  const int64_t kb = block_k(w.dtype);
  const int64_t k_blocks = (w.in + kb - 1) / kb;
  const int64_t m = block / k_blocks, b = block % k_blocks;
  const int64_t m0 = m * kBlockRows, k0 = b * kb;
  const int64_t mn = n - m0 < kBlockRows ? n - m0 : kBlockRows;
  const int64_t kn = w.in - k0 < kb ? w.in - k0 : kb;
  pack_rows(x + m0 * xs, xs, mn, k0, kn, xp + packed_x_offset(n, w.in, w.dtype, m, b));
}

void packed_gemm_avx2(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n, int64_t m,
                      float* y, int64_t ys) {
  packed_gemm_of_dtype(w, p_begin, p_end, xp, n, m, y, ys);
}

#pragma GCC pop_options

}  // namespace loom_none

#endif  // LOOM_NONE_HAVE_AVX2
