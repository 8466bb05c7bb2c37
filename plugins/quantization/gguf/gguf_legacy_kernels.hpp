// Kernels of quantization/gguf for the 32-value formats Q4_1, Q5_0, Q5_1 and IQ4_NL
// (loom/sdk_gguf_legacy.hpp), on activations quantized as llama.cpp pairs them: Q8_1 blocks
// against Q4_1/Q5_1 (whose minimum term needs d * sum(a), the Q8_1 s), Q8_0 blocks against
// Q5_0/IQ4_NL.
//
// Portable: TileKernels (gguf_kernels.hpp) on the file layout. x86-64: PackedWeights in the
// legacy x8 layout below, made once at load, with AVX2 and AVX512-VNNI kernels that give the
// same bits (a block's integer sums are exact in both; the float fold is shared code).
//
// Legacy x8 layout: rows in groups of 8 (the last padded with zero rows); a group is nb block
// records one after the other, padded to 64 bytes. A record holds block b of the 8 rows:
//   [0, 128)   the nibbles, x8-interleaved as Q4_0's (gguf_repack.hpp): chunk j of 32 bytes holds
//              qs[4j .. 4j+3] of rows 0..7 at byte 4r, low nibbles values 4j+k, high 16+4j+k
//   Q5 only:   32 bytes, row r's fifth bits as a u32 at byte 4r, rearranged so that bit 8k + j
//              is value 4j + k's and bit 8k + 4 + j value 16 + 4j + k's (j, k < 4): one shift
//              by a constant and a mask put chunk j's bits at bit 4 of each lane byte
//   then       8 f16 d (rows 0..7); Q4_1/Q5_1 then 8 f16 m
// Record bytes: Q4_1 160, Q5_0 176, Q5_1 192, IQ4_NL 144 (the file's bytes, rearranged).
#pragma once

#include <cstdint>

#include "gguf_kernels.hpp"
#include "gguf_repack.hpp"
#include "loom/sdk_gguf_blocks.hpp"
#include "loom/types.h"

namespace loom_gguf {

// The four formats' file-layout kernels, portable.
struct LegacyKernels {
  TileKernel q4_1;    // x Q8_1 activations
  TileKernel q5_0;    // x Q8_0
  TileKernel q5_1;    // x Q8_1
  TileKernel iq4_nl;  // x Q8_0
};
LegacyKernels legacy_portable_kernels();

// Q8_1 activations through a Q8_0 quantizer (Kernels::quantize_q8_0, SIMD where the CPU has
// it): the bits of loom::sdk::gguf::quantize_q8_1, whose d and qs are Q8_0's.
void quantize_q8_1(QuantizeQ8_0 quantize_q8_0, const float* x, loom::sdk::gguf::BlockQ8_1* y, int64_t n_blocks);

// True for Q4_1/Q5_1 (Q8_1 activations), false for Q5_0/IQ4_NL (Q8_0).
inline bool legacy_takes_q8_1(loom_dtype t) { return t == LOOM_DTYPE_Q4_1 || t == LOOM_DTYPE_Q5_1; }
inline bool is_legacy_format(loom_dtype t) {
  return t == LOOM_DTYPE_Q4_1 || t == LOOM_DTYPE_Q5_0 || t == LOOM_DTYPE_Q5_1 || t == LOOM_DTYPE_IQ4_NL;
}

// Rows of one of the four formats ([n_rows] rows, row_bytes apart, n_blocks blocks each) in the
// legacy x8 layout; quant_bytes is the record size.
PackedWeight pack_legacy(loom_dtype dtype, const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks);

// Per activation block, as floats: d, and s (Q8_1) or 8 * sum(qs) (Q8_0) for the kernels.
struct LegacyActivationInfo {
  float* d;         // [n, nb]
  float* s;         // [n, nb] Q8_1: f16 s as f32; unused for Q8_0
  int32_t* offset;  // [n, nb] Q8_0: 8 * sum(qs); unused for Q8_1
};
void legacy_activation_info(bool q8_1, const uint8_t* xq, int64_t xq_row_bytes, int64_t n, int64_t nb,
                            LegacyActivationInfo info);

// y[t * ys + j] = dot(activation row t, weight row j) for t < n, j < w.n_rows, over groups
// [g0, g1) (j counted from 8 g0). Per (t, j) the blocks fold in increasing order as
// acc = fma(m_w, s_a, fma(d_w * d_a, float(exact block sum), acc)) (no m term for Q5_0/IQ4_NL).
using LegacyPackedKernel = void (*)(const PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq,
                                    int64_t xq_row_bytes, const LegacyActivationInfo& info, int64_t n, float* y,
                                    int64_t ys);
struct LegacyPackedKernels {
  LegacyPackedKernel q4_1, q5_0, q5_1, iq4_nl;
  LegacyPackedKernel of(loom_dtype t) const {
    return t == LOOM_DTYPE_Q4_1 ? q4_1 : t == LOOM_DTYPE_Q5_0 ? q5_0 : t == LOOM_DTYPE_Q5_1 ? q5_1 : iq4_nl;
  }
};

#ifdef LOOM_GGUF_HAVE_AVX2
LegacyPackedKernels avx2_legacy_x8_kernels();  // after cpu_has_avx2_fma()
LegacyPackedKernels vnni_legacy_x8_kernels();  // after cpu_has_avx512_vnni()
namespace emulated {  // gguf_legacy_vnni_x8.cpp against SIMDe, for tests on CPUs without VNNI
LegacyPackedKernels vnni_legacy_x8_kernels();
}
#endif

}  // namespace loom_gguf
