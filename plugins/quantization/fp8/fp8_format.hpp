// FP8 E4M3 weights (the OCP "fn" variant: 1 sign, 4 exponent bits with bias 7, 3 mantissa bits;
// no infinities, S.1111.111 is NaN, largest finite 448) with one f32 scale per output channel:
// w(o, k) = e4m3(q(o, k)) * scale[o], scale = max|w| / 448 so each row's extreme hits +-448.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dequant_gemm.hpp"

namespace loom_fp8 {

struct Fp8Weight {
  int64_t out = 0;
  int64_t in = 0;
  std::vector<uint8_t> q;    // [out, in] E4M3 codes
  std::vector<float> scale;  // [out]
};

// f32 -> E4M3, rounding to nearest even and saturating to +-448 (NaN -> 0x7f / 0xff).
uint8_t f32_to_e4m3(float f);
// E4M3 -> f32, exact (a 256-entry table).
float e4m3_to_f32(uint8_t code);

// Quantizes one row of `in` values into q and *scale (an all-zero row: scale 0, codes 0).
void quantize_row(const float* v, int64_t in, uint8_t* q, float* scale);

void dequant_portable(const Fp8Weight& w, int64_t o0, int64_t n_rows, float* dst);

loom_quant::DequantKernels<Fp8Weight> select_kernels(bool allow_simd);

#if defined(__x86_64__) && defined(__GNUC__)
#define LOOM_FP8_HAVE_AVX2 1
void tile_q_avx2(const Fp8Weight& w, int64_t o0, int64_t n_rows, const float* x, int64_t xs, int64_t n, float* y,
                 int64_t ys);
void dequant_avx2(const Fp8Weight& w, int64_t o0, int64_t n_rows, float* dst);
void tile_f32_avx2(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                   float* y, int64_t ys);
#endif

}  // namespace loom_fp8
