// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS weights in an x8 layout (8 rows interleaved, lane =
// weight row) made once at load, and their AVX2 and AVX-512 (BW/VL/VNNI) kernels against Q8_K
// activations.
//
// Why: the file layout keeps a row's 256 values together, so a kernel forms each (activation
// row, weight row) super-block sum across SIMD lanes and must reduce it horizontally, and it
// unpacks a weight super-block for only the few activation rows that fit the registers. Here a
// register holds 4 consecutive values of 8 weight rows: 4 activation bytes broadcast to all
// lanes meet it in one maddubs (AVX2) or vpdpbusd (VNNI), each lane's sum belongs to one weight
// row, and a super-block ends as 8 int32 sums with no reduction.
//
// Layout: rows in groups of 8 (the last padded with zero rows); a group is nb records, one per
// super-block, one after the other, the group padded to 64 bytes. A record holds super-block b
// of the 8 rows; values are numbered e = 0..255 in the row, sub-block s = e / 32:
//   [0, 1024)  nibbles: chunk c = 4s + j (j < 4) of 32 bytes, row r's 4 bytes at 4r, byte k
//              holding the low 4 bits of value 32s + 4j + k in its low nibble and of value
//              32s + 16 + 4j + k in its high nibble
//   Q5_K       [1024, 1280): per s 32 bytes, row r's u32 at 4r: bit 8k + j is bit 4 of value
//              32s + 4j + k, bit 8k + 4 + j of value 32s + 16 + 4j + k (the legacy Q5 trick:
//              one 32-bit shift and a mask put chunk j's bits at bit 4 of each byte)
//   Q6_K       [1024, 1536): per s 64 bytes, two 32-byte halves (values 32s + 4j + k, then
//              32s + 16 + 4j + k), row r's u32 at 4r: bits 2j, 2j + 1 of byte k are the top 2
//              bits of that value
//   then       scales as [p][r][2] bytes (sub-blocks 2p, 2p + 1 of row r: one int16 pair per
//              32-bit lane after a widening load): Q4_K/Q5_K 4 x 16 bytes of 6-bit scales, then
//              4 x 16 of 6-bit mins; Q6_K 8 x 16 bytes of int8 scales (16-value sub-blocks);
//              IQ4_XS 4 x 16 bytes of its signed scales (ls - 32); the nibbles of IQ4_XS are
//              indices into kIQ4NL
//   then       8 f16 d; Q4_K/Q5_K then 8 f16 dmin
// Record bytes: Q4_K 1184, Q5_K 1440 (8 x 148 and 8 x 180: 4 bytes a row more than the file,
// the scales unpacked), Q6_K 1680 (8 x 210, the file's size), IQ4_XS 1104 (8 x 138, 2 more).
//
// Q2_K and Q3_K (16-value sub-blocks t = e / 16, 2-bit codes) instead take, per 64 values m:
//   [0, 512)   2-bit codes: chunk 4m + j (j < 4) of 32 bytes, row r's 4 bytes at 4r, bits 2q,
//              2q + 1 of byte k the code of value 64m + 16q + 4j + k (q < 4)
//   Q3_K       [512, 768): per m 64 bytes, two 32-byte halves v (j = 2v, 2v + 1), row r's u32
//              at 4r: bit 4 (j - 2v) + q of byte k is bit 2 of value 64m + 16q + 4j + k's code
//   then       scales as [p][r][2] bytes for sub-blocks 2p, 2p + 1 (p < 8): Q2_K the file's
//              bytes (scale in the low nibble, min in the high), Q3_K its signed 6-bit scales
//   then       8 f16 d; Q2_K then 8 f16 dmin
// Record bytes: Q2_K 672 (8 x 84, the file's size), Q3_K 912 (8 x 114, 4 more).
//
// Bits: per (activation row, weight row, super-block) the kernels form the portable kernels'
// exact integers (sum_s scale_s <code_s, a_s>, the mins' or Q6_K's -32 term through the Q8_K
// bsums) and fold them with the portable expression, d * d_a * isum - dmin * d_a * msum added to
// the row's sum, super-blocks in order; so these give gguf_kernels_kquant_portable.cpp's bits
// whatever n, the grouping or the instruction set.
#pragma once

#include <cstdint>

#include "gguf_kernels.hpp"
#include "gguf_repack.hpp"
#include "loom/types.h"

namespace loom_gguf {

inline bool is_kquant_x8_format(loom_dtype t) {
  return t == LOOM_DTYPE_Q2_K || t == LOOM_DTYPE_Q3_K || t == LOOM_DTYPE_Q4_K || t == LOOM_DTYPE_Q5_K ||
         t == LOOM_DTYPE_Q6_K || t == LOOM_DTYPE_IQ4_XS;
}
constexpr int64_t kquant_x8_record_bytes(loom_dtype t) {
  switch (t) {
    case LOOM_DTYPE_Q2_K: return 672;
    case LOOM_DTYPE_Q3_K: return 912;
    case LOOM_DTYPE_Q4_K: return 1184;
    case LOOM_DTYPE_Q5_K: return 1440;
    case LOOM_DTYPE_Q6_K: return 1680;
    default: return 1104;  // IQ4_XS
  }
}

// Rows of Q2_K, Q3_K, Q4_K, Q5_K, Q6_K or IQ4_XS super-blocks ([n_rows] rows, row_bytes apart, n_blocks each) in the
// layout above; quant_bytes is the record size. In two steps so that threads can share the
// filling (the repack, and the first touch of the fresh pages, are most of a model's load):
// allocate_kquant, then pack_kquant_groups over every group [g0, g1) once (it zeroes them first).
PackedWeight allocate_kquant(loom_dtype dtype, int64_t n_rows, int64_t n_blocks);
void pack_kquant_groups(loom_dtype dtype, const uint8_t* rows, int64_t row_bytes, PackedWeight* p, int64_t g0, int64_t g1);
PackedWeight pack_kquant(loom_dtype dtype, const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks);

// Per Q8_K activation super-block, the bsum pairs the kernels broadcast: [0, 8) the 16-value
// sums as int16 pairs (bsums 2p, 2p + 1), for Q6_K's -32, Q3_K's -4 and Q2_K's mins; [8, 12) the 32-value sums
// (bsums 4p + bsums 4p+1, 4p+2 + 4p+3) as int16 pairs, for the Q4_K/Q5_K mins and IQ4_XS's
// level offset.
constexpr int64_t kKQuantSide = 12;
void kquant_activation_info(const uint8_t* xq, int64_t xq_row_bytes, int64_t n, int64_t nb, int32_t* side);

// y[t * ys + j] = dot(activation row t, weight row j) for t < n, j < w.n_rows, over groups
// [g0, g1) (j counted from 8 g0); side: kquant_activation_info's [n, nb, kKQuantSide].
using KQuantPackedKernel = void (*)(const PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq,
                                    int64_t xq_row_bytes, const int32_t* side, int64_t n, float* y, int64_t ys);
struct KQuantPackedKernels {
  KQuantPackedKernel q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs;
  KQuantPackedKernel of(loom_dtype t) const {
    switch (t) {
      case LOOM_DTYPE_Q2_K: return q2_k;
      case LOOM_DTYPE_Q3_K: return q3_k;
      case LOOM_DTYPE_Q4_K: return q4_k;
      case LOOM_DTYPE_Q5_K: return q5_k;
      case LOOM_DTYPE_Q6_K: return q6_k;
      default: return iq4_xs;
    }
  }
};

#ifdef LOOM_GGUF_HAVE_AVX2
KQuantPackedKernels avx2_kquant_x8_kernels();  // after cpu_has_avx2_fma()
KQuantPackedKernels avx512_kquant_x8_kernels();  // after cpu_has_avx512_kquant() (F, BW, VL, VNNI)
namespace emulated {  // gguf_kquant_avx512_x8.cpp against SIMDe, for tests on CPUs without VNNI
KQuantPackedKernels avx512_kquant_x8_kernels();
}
#endif

}  // namespace loom_gguf
