// INT8 weights: symmetric, one scale per output channel, w(o, k) = q(o, k) * scale[o] with
// q in [-127, 127] (-128 is never written, so the W8A8 sign trick cannot overflow), and the
// kernels on them:
//   w8a16: x stays f32, weights dequantized in registers (dequant_gemm.hpp order);
//   w8a8:  x quantized per token the same way (x(t, k) ~ xq(t, k) * xscale[t]), exact int32
//          dot products, y = float(dot) * (xscale[t] * scale[o]).
// SmoothQuant: with per-input-channel factors s_j, W is quantized as W diag(s) and x as
// x diag(1/s), which leaves x W^T unchanged but moves activation outliers into the weights.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dequant_gemm.hpp"

namespace loom_int8 {

using loom_quant::StoredWeight;

struct Int8Weight {
  int64_t out = 0;
  int64_t in = 0;
  int64_t in_pad = 0;             // in rounded up to 32; q is zero past in
  std::vector<int8_t> q;          // [out, in_pad]
  std::vector<float> scale;       // [out]
  std::vector<float> inv_smooth;  // [in] 1 / s_j: w8a8 after calibration, or N.smooth; empty: none
  StoredWeight source;            // the stored weight (outlives this), re-quantized on calibration
};

constexpr int64_t kPad = 32;

// Quantizes one row of `in` values (each multiplied by smooth[k] first when smooth is not null):
// scale = max|v| / 127, q = clamp(round-half-even(v / scale), -127, 127); all-zero rows get
// scale 0 and q 0. q is written for k < in only.
void quantize_row(const float* v, const float* smooth, int64_t in, int8_t* q, float* scale);

// s_j = act_absmax[j]^alpha / w_absmax[j]^(1 - alpha); 1 where either maximum is 0 or not finite.
void smoothing_factors(const float* act_absmax, const float* w_absmax, int64_t n, float alpha, float* s);

// Quantizes one activation row into xq (in_pad values, zero past in) and returns its scale; x is
// multiplied by inv_smooth[k] first when inv_smooth is not null.
float quantize_activation(const float* x, const float* inv_smooth, int64_t in, int64_t in_pad, int8_t* xq);

// acc[t * accs + j] = sum_k xq(t, k) * rows[j][k] over k < k_pad (exact), t < n, j < n_rows.
using DotTile = void (*)(const int8_t* const* rows, int64_t n_rows, const int8_t* xq, int64_t xqs, int64_t n,
                         int64_t k_pad, int32_t* acc, int64_t accs);

struct Kernels {
  loom_quant::DequantKernels<Int8Weight> w8a16;
  DotTile dot;
};

Kernels select_kernels(bool allow_simd);

void dequant_portable(const Int8Weight& w, int64_t o0, int64_t n_rows, float* dst);
void dot_portable(const int8_t* const* rows, int64_t n_rows, const int8_t* xq, int64_t xqs, int64_t n, int64_t k_pad,
                  int32_t* acc, int64_t accs);

#if defined(__x86_64__) && defined(__GNUC__)
#define LOOM_INT8_HAVE_AVX2 1
void tile_q_avx2(const Int8Weight& w, int64_t o0, int64_t n_rows, const float* x, int64_t xs, int64_t n, float* y,
                 int64_t ys);
void dequant_avx2(const Int8Weight& w, int64_t o0, int64_t n_rows, float* dst);
void tile_f32_avx2(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                   float* y, int64_t ys);
void dot_avx2(const int8_t* const* rows, int64_t n_rows, const int8_t* xq, int64_t xqs, int64_t n, int64_t k_pad,
              int32_t* acc, int64_t accs);
#endif

}  // namespace loom_int8
