// The row-layout AVX2+FMA(+F16C) kernels (the micro-benchmark's baseline, none_gemm.hpp), compiled
// for that ISA only inside this file's target region and called only after cpu_has_avx2_fma_f16c().
//
// Register blocking: a micro-kernel keeps R x rows x C weight rows of 8-lane accumulators in
// ymm registers (R * C <= 12, plus the R x vectors and C weight vectors: 16 registers at 4 x 3),
// so each loaded vector feeds several FMAs. Cache blocking comes from the caller: one tile of
// weight rows (a few hundred KiB at most) stays in L2 while every group of x rows streams past.
// Decode (1-3 x rows) uses micro_stream(): the same arithmetic, unrolled to a cache line per
// row per step with software prefetch, since there the weights stream from DRAM.
// Every (R, C) runs the same per-element sequence (lane FMAs in k order, the shared lane tree,
// then the tail), so results never depend on n or on the grouping.
#include <cstdint>

#include "none_gemm.hpp"

#ifdef LOOM_NONE_HAVE_AVX2

#include <immintrin.h>

namespace loom_none {

// Everything below is compiled for AVX2+FMA+F16C; no standard-library template is used in it,
// so no ISA-specific copy of one can be picked by the linker for the portable code.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace {

// The lane tree of lane_sum() for four accumulators at once: [sum(a), sum(b), sum(c), sum(d)].
// hadd gives (0+1), (2+3) per 128-bit half, the second hadd ((0+1)+(2+3)) and ((4+5)+(6+7)),
// and the final add joins the halves: exactly ((0+1)+(2+3))+((4+5)+(6+7)).
inline __attribute__((always_inline)) __m128 lane_sum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// How a micro-kernel reads weights: 8 f32 values at a time plus single ones for the tail. The
// f16/bf16 loaders widen in registers, exactly, so they compute what the f32 loader computes
// on the widened row.
struct LoadF32 {
  using T = float;
  static __m256 vec(const float* p) { return _mm256_loadu_ps(p); }
  static float one(const float* p) { return *p; }
};
struct LoadF16 {
  using T = uint16_t;
  static __m256 vec(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static float one(const uint16_t* p) { return _cvtsh_ss(*p); }
};
struct LoadBF16 {
  using T = uint16_t;
  static __m256 vec(const uint16_t* p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static float one(const uint16_t* p) {
    return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(static_cast<uint32_t>(*p) << 16))));
  }
};

// y[r * ys + c] = dot(x + r * xs, w[c]) for r < R, c < C.
template <class Load, int R, int C>
inline __attribute__((always_inline)) void micro(const typename Load::T* const* w, const float* x, int64_t xs,
                                                 int64_t in, float* y, int64_t ys) {
  constexpr int kPadded = (C + 3) / 4 * 4;  // accumulators past C stay zero for lane_sum4
  __m256 acc[R][kPadded];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kPadded; ++c) acc[r][c] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= in; k += 8) {
    __m256 wv[C];
    for (int c = 0; c < C; ++c) wv[c] = Load::vec(w[c] + k);
    for (int r = 0; r < R; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + r * xs + k);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c0 = 0; c0 < C; c0 += 4) {
      alignas(16) float sums[4];
      _mm_store_ps(sums, lane_sum4(acc[r][c0], acc[r][c0 + 1], acc[r][c0 + 2], acc[r][c0 + 3]));
      for (int c = c0; c < C && c < c0 + 4; ++c) {
        float s = sums[c - c0];
        for (int64_t i = k; i < in; ++i) s += x[r * xs + i] * Load::one(w[c] + i);
        y[r * ys + c] = s;
      }
    }
  }
}

// How far ahead of the multiply-adds micro_stream() prefetches each weight row. Measured on
// llama-1b-shaped f16 rows (2048 features), one thread: 512 bytes with 8 rows in flight read
// ~24% faster than no prefetch; 1024 bytes or 12 rows were slower than none (too many lines in
// flight evict each other before use).
constexpr int64_t kPrefetchBytes = 512;

// micro() for 1-3 x rows (decode), where every weight byte comes from memory once and the
// kernel is bandwidth-bound: 32 features per row per step (a 64-byte line of f16), each of the
// C rows prefetched kPrefetchBytes ahead so C memory streams stay in flight. Same per-element
// order as micro() (the unrolled steps still feed each lane in k order).
template <class Load, int R, int C>
inline __attribute__((always_inline)) void micro_stream(const typename Load::T* const* w, const float* x,
                                                        int64_t xs, int64_t in, float* y, int64_t ys) {
  using T = typename Load::T;
  constexpr int64_t kAhead = kPrefetchBytes / static_cast<int64_t>(sizeof(T));  // elements
  constexpr int kPadded = (C + 3) / 4 * 4;
  __m256 acc[R][kPadded];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kPadded; ++c) acc[r][c] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= in; k += 32) {
    // Prefetching past the row's end touches at most kPrefetchBytes of the next row or of
    // unmapped memory, which prefetch never faults on.
    for (int c = 0; c < C; ++c) {
      const char* line = reinterpret_cast<const char*>(w[c] + k + kAhead);
      for (int64_t b = 0; b < 32 * static_cast<int64_t>(sizeof(T)); b += 64) _mm_prefetch(line + b, _MM_HINT_T0);
    }
    for (int u = 0; u < 4; ++u) {
      __m256 wv[C];
      for (int c = 0; c < C; ++c) wv[c] = Load::vec(w[c] + k + 8 * u);
      for (int r = 0; r < R; ++r) {
        const __m256 xv = _mm256_loadu_ps(x + r * xs + k + 8 * u);
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
      }
    }
  }
  for (; k + 8 <= in; k += 8) {
    for (int c = 0; c < C; ++c) {
      const __m256 wv = Load::vec(w[c] + k);
      for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * xs + k), wv, acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c0 = 0; c0 < C; c0 += 4) {
      alignas(16) float sums[4];
      _mm_store_ps(sums, lane_sum4(acc[r][c0], acc[r][c0 + 1], acc[r][c0 + 2], acc[r][c0 + 3]));
      for (int c = c0; c < C && c < c0 + 4; ++c) {
        float s = sums[c - c0];
        for (int64_t i = k; i < in; ++i) s += x[r * xs + i] * Load::one(w[c] + i);
        y[r * ys + c] = s;
      }
    }
  }
}

template <class Load, int R, int C>
void row_group_stream(const typename Load::T* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t in,
                      float* y, int64_t ys) {
  int64_t j = 0;
  for (; j + C <= n_rows; j += C) micro_stream<Load, R, C>(rows + j, x, xs, in, y + j, ys);
  for (; j < n_rows; ++j) micro_stream<Load, R, 1>(rows + j, x, xs, in, y + j, ys);
}

// Cache lines of the caller's next tile still to prefetch, spread evenly over this tile's
// micro-kernel calls: the next tile's weights arrive from memory while this one computes,
// instead of the first group of x rows waiting on them (measured on cold f32 weights, one
// thread, n = 32, in = 768: 67 -> 78 GFLOP/s). Into L2 only: L1 holds the working set. Not for
// tiles over kAheadMaxBytes: two of them overflow a 512 KiB L2 and the prefetched lines evict
// the current tile (in = 2048, 384 KiB tiles: 64 -> 62 GFLOP/s with it).
constexpr int64_t kAheadMaxBytes = 192 * 1024;
// Nor below this many x rows: the tile computes too briefly to hide the fetch (n = 8: no gain
// on cold weights, 87 -> 74 GFLOP/s on weights already in cache).
constexpr int64_t kAheadMinRows = 16;

struct Ahead {
  const char* next;
  const char* end;
  int64_t lines_per_call;
  inline __attribute__((always_inline)) void step() {
    for (int64_t i = 0; i < lines_per_call && next < end; ++i, next += 64) _mm_prefetch(next, _MM_HINT_T1);
  }
};

// All n_rows weight rows against R x rows: blocks of C, then single rows.
template <class Load, int R, int C>
void row_group(const typename Load::T* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t in,
               float* y, int64_t ys, Ahead& ahead) {
  int64_t j = 0;
  for (; j + C <= n_rows; j += C) {
    ahead.step();
    micro<Load, R, C>(rows + j, x, xs, in, y + j, ys);
  }
  for (; j < n_rows; ++j) {
    ahead.step();
    micro<Load, R, 1>(rows + j, x, xs, in, y + j, ys);
  }
}

template <class Load>
void tile(const typename Load::T* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
          float* y, int64_t ys, const void* next, int64_t next_bytes) {
  const int64_t calls = n / 4 * (n_rows / 3 + n_rows % 3);
  const bool prefetch = next != nullptr && next_bytes > 0 && next_bytes <= kAheadMaxBytes && n >= kAheadMinRows;
  const int64_t lines = prefetch ? (next_bytes + 63) / 64 : 0;
  const char* next_begin = static_cast<const char*>(next);
  Ahead ahead{next_begin, next_begin + 64 * lines, calls > 0 ? (lines + calls - 1) / calls : 0};
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) row_group<Load, 4, 3>(rows, n_rows, x + t * xs, xs, in, y + t * ys, ys, ahead);
  // 1-3 rows left (decode steps mostly): the streaming kernel, more weight rows per block.
  switch (n - t) {
    case 3: row_group_stream<Load, 3, 4>(rows, n_rows, x + t * xs, xs, in, y + t * ys, ys); break;
    case 2: row_group_stream<Load, 2, 6>(rows, n_rows, x + t * xs, xs, in, y + t * ys, ys); break;
    case 1: row_group_stream<Load, 1, 8>(rows, n_rows, x + t * xs, xs, in, y + t * ys, ys); break;
    default: break;
  }
}

}  // namespace

void tile_avx2(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
               float* y, int64_t ys, const void* next, int64_t next_bytes) {
  tile<LoadF32>(rows, n_rows, x, xs, n, in, y, ys, next, next_bytes);
}

void tile_half_avx2(const uint16_t* const* rows, bool bf16, int64_t n_rows, const float* x, int64_t xs, int64_t n,
                    int64_t in, float* y, int64_t ys, const void* next, int64_t next_bytes) {
  if (bf16) {
    tile<LoadBF16>(rows, n_rows, x, xs, n, in, y, ys, next, next_bytes);
  } else {
    tile<LoadF16>(rows, n_rows, x, xs, n, in, y, ys, next, next_bytes);
  }
}

void widen_f16c(const uint16_t* src, float* dst, int64_t n, bool bf16) {
  int64_t i = 0;
  if (bf16) {
    for (; i + 8 <= n; i += 8) {
      const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
      _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
    }
  } else {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  if (i < n) widen_portable(src + i, dst + i, n - i, bf16);
}

#pragma GCC pop_options

}  // namespace loom_none

#endif  // LOOM_NONE_HAVE_AVX2
