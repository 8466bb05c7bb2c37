// AVX2+FMA tile kernels shared by the quantizing plugins, generic over how a weight row gives
// 8 dequantized f32 values at a time. Include ONLY inside a `#pragma GCC target("avx2,fma")`
// region of a file whose callers check cpu_has_avx2_fma() first, after dequant_gemm.hpp and
// every standard header were included outside it (so no AVX2 copy of a library template can be
// picked by the linker for portable code).
//
// A Row type provides `__m256 vec(int64_t k)` (w(k..k+7), k a multiple of 8) and
// `float one(int64_t k)` (w(k)), both giving exactly the dequantized values of the portable
// code. A micro-kernel keeps R x rows by C weight rows of accumulators in registers, so each
// dequantized vector feeds R FMAs; every (R, C) runs the per-element order of dequant_gemm.hpp.
#pragma once

#include <immintrin.h>

#include "dequant_gemm.hpp"

namespace loom_quant::avx2 {

struct RowF32 {
  const float* p;
  __m256 vec(int64_t k) const { return _mm256_loadu_ps(p + k); }
  float one(int64_t k) const { return p[k]; }
};

// [sum(a), sum(b), sum(c), sum(d)] with the lane tree ((0+1)+(2+3))+((4+5)+(6+7)).
inline __attribute__((always_inline)) __m128 lane_sum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// y[r * ys + c] = dot(x + r * xs, rows[c]) for r < R, c < C.
template <class Row, int R, int C>
inline __attribute__((always_inline)) void micro(const Row* rows, const float* x, int64_t xs, int64_t in, float* y,
                                                 int64_t ys) {
  constexpr int kPadded = (C + 3) / 4 * 4;  // accumulators past C stay zero for lane_sum4
  __m256 acc[R][kPadded];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kPadded; ++c) acc[r][c] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= in; k += 8) {
    __m256 wv[C];
    for (int c = 0; c < C; ++c) wv[c] = rows[c].vec(k);
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
        for (int64_t i = k; i < in; ++i) s += x[r * xs + i] * rows[c].one(i);
        y[r * ys + c] = s;
      }
    }
  }
}

template <class Row, int R, int C>
void row_group(const Row* rows, int64_t n_rows, const float* x, int64_t xs, int64_t in, float* y, int64_t ys) {
  int64_t j = 0;
  for (; j + C <= n_rows; j += C) micro<Row, R, C>(rows + j, x, xs, in, y + j, ys);
  for (; j < n_rows; ++j) micro<Row, R, 1>(rows + j, x, xs, in, y + j, ys);
}

// All n_rows rows against n rows of x: 4 x rows at a time, then the 1-3 left (decode steps).
// Quantized rows need a few registers of their own while dequantizing, hence the smaller
// blocks than the f32 ones.
template <class Row>
void tile(const Row* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in, float* y, int64_t ys) {
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) row_group<Row, 4, 3>(rows, n_rows, x + t * xs, xs, in, y + t * ys, ys);
  switch (n - t) {
    case 3:
      row_group<Row, 3, 4>(rows, n_rows, x + t * xs, xs, in, y + t * ys, ys);
      break;
    case 2:
      row_group<Row, 2, 4>(rows, n_rows, x + t * xs, xs, in, y + t * ys, ys);
      break;
    case 1:
      row_group<Row, 1, 8>(rows, n_rows, x + t * xs, xs, in, y + t * ys, ys);
      break;
    default:
      break;
  }
}

// dst[j * in + k] = rows[j] dequantized, for j < n_rows.
template <class Row>
void dequant(const Row* rows, int64_t n_rows, int64_t in, float* dst) {
  for (int64_t j = 0; j < n_rows; ++j) {
    float* d = dst + j * in;
    int64_t k = 0;
    for (; k + 8 <= in; k += 8) _mm256_storeu_ps(d + k, rows[j].vec(k));
    for (; k < in; ++k) d[k] = rows[j].one(k);
  }
}

inline void tile_f32(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                     float* y, int64_t ys) {
  RowF32 r[kTile];  // n_rows <= kTile
  for (int64_t j = 0; j < n_rows; ++j) r[j] = RowF32{rows[j]};
  tile<RowF32>(r, n_rows, x, xs, n, in, y, ys);
}

}  // namespace loom_quant::avx2
