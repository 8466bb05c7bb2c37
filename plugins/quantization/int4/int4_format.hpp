// Group-wise INT4 weights, AWQ/GPTQ style: each row of `in` weights is cut into groups of
// group_size consecutive input channels (the last one may be short), each group with its own
// f32 scale and 4-bit zero point z:  w(o, k) = (q(o, k) - z(o, g)) * scale(o, g),  g = k / group.
//   zero_point = true (asymmetric, AWQ/GPTQ): the group's range [min(w, 0), max(w, 0)] maps onto
//       0..15: scale = (hi - lo) / 15, z = round(-lo / scale), q = clamp(round(w / scale) + z).
//   zero_point = false (symmetric): scale = max|w| / 7, q = clamp(round(w / scale), -8, 7) + 8
//       and z = 8, so the same kernel serves both.
// Rounding is half to even; an all-zero group gets scale 0 (every weight dequantizes to 0).
// That is quantize_group. quantize_row (what the plugin and loom-convert use) searches further,
// without calibration data, in the spirit of AWQ's clip search and llama.cpp's make_qkx: it
// alternates rounding and the least-squares scale of the rounded values (up to 4 rounds) from
// several starting grids: with zero points, the plain scale with each zero point within 1 of the
// plain one; without, the range shrunk by factors 1 - i/20, i = 0..5 (clipping the extremes).
// It keeps the candidate of least squared error among those whose error on every weight stays
// within the plain scheme's bound (a step of (hi - lo) / 15 with zero points, half a step of
// max|w| / 7 without): no weight loses more than quantize_group allows, and a zero weight still
// dequantizes to exactly 0. (Shrinking the range as well gained nothing with zero points on the
// demo model.) Cost at load: about 40 ns per weight with zero points, 80 without, on one core.
//
// Packing (GPTQ's order along the input dimension, 8 nibbles per uint32): input channel k of a
// row lives in word k / 8 at bits [4 * (k % 8), 4 * (k % 8) + 4), i.e. channel 8p + i is
// (words[p] >> 4i) & 0xF. Rows are packed one after another, ceil(in / 8) words each, nibbles
// past `in` are zero. (GPTQ's qweight holds the same words as [in / 8, out]; this is its
// transpose, rows of one output channel contiguous for the GEMV; AWQ's qweight packs along the
// output dimension in the order 0,2,4,6,1,3,5,7 and is repacked into this one on import.)
//
// Pre-quantized storage (loom-convert --quantize int4), one weight N of [out, in]:
//   N          I32 [out, ceil(in / 8)]  the packed words above
//   N.scale    F32 [out, n_groups]
//   N.zero     I8  [out, n_groups], 0..15 (absent: symmetric, z = 8)
// group_size = ceil(in / n_groups) rounded up to 32, 64 or 128, with ceil(in / group) = n_groups.
// quantize_row(v, in, RowQuant, ...) writes exactly the tensors the plugin makes at load.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dequant_gemm.hpp"

namespace loom_int4 {

struct Int4Weight {
  int64_t out = 0;
  int64_t in = 0;
  int64_t group = 128;
  int shift = 7;                 // log2(group)
  int64_t words_per_row = 0;     // ceil(in / 8)
  int64_t n_groups = 0;          // ceil(in / group)
  std::vector<uint32_t> packed;  // [out, words_per_row]
  std::vector<float> scale;      // [out, n_groups]
  std::vector<uint8_t> zero;     // [out, n_groups], 0..15
};

// The group sizes the format allows, and log2 of one (0 for any other).
inline bool valid_group(int64_t group) { return group == 32 || group == 64 || group == 128; }
inline int group_shift(int64_t group) { return group == 32 ? 5 : group == 64 ? 6 : group == 128 ? 7 : 0; }

// An empty weight of [out, in] with its sizes set and its arrays zeroed.
Int4Weight make_weight(int64_t out, int64_t in, int64_t group);

// How quantize_row quantizes: the plugin's config keys group_size and zero_point; scale_search
// false gives quantize_group's plain min/max scheme (the plugin's "scale_search": false). New
// fields will come with defaults that keep today's output.
struct RowQuant {
  int64_t group = 128;
  bool zero_point = true;
  bool scale_search = true;
};

// Quantizes one row of `in` values: packed [ceil(in / 8)] words, scale and zero [ceil(in / group)].
// loom-convert calls this to write N, N.scale and N.zero; the plugin calls it at load.
void quantize_row(const float* v, int64_t in, const RowQuant& rq, uint32_t* packed, float* scale, uint8_t* zero);

// Quantizes one group of n values into q (one 0..15 value per byte), *scale and *zero.
void quantize_group(const float* v, int64_t n, bool zero_point, uint8_t* q, float* scale, uint8_t* zero);

// words[k / 8] |= q[k] << 4 * (k % 8) for k < n, words (ceil(n / 8) of them) zeroed first.
void pack_row(const uint8_t* q, int64_t n, uint32_t* words);

// The 4-bit value of input channel k in a packed row.
inline uint32_t nibble(const uint32_t* words, int64_t k) { return (words[k >> 3] >> (4 * (k & 7))) & 0xFu; }

// Quantizes and packs row o of w from v (in values) with w's group size.
void quantize_row(const float* v, const RowQuant& rq, Int4Weight& w, int64_t o);
// The same with the default search (the first version's signature).
void quantize_row(const float* v, bool zero_point, Int4Weight& w, int64_t o);

void dequant_portable(const Int4Weight& w, int64_t o0, int64_t n_rows, float* dst);

loom_quant::DequantKernels<Int4Weight> select_kernels(bool allow_simd);

#if defined(__x86_64__) && defined(__GNUC__)
#define LOOM_INT4_HAVE_AVX2 1
void tile_q_avx2(const Int4Weight& w, int64_t o0, int64_t n_rows, const float* x, int64_t xs, int64_t n, float* y,
                 int64_t ys);
void dequant_avx2(const Int4Weight& w, int64_t o0, int64_t n_rows, float* dst);
void tile_f32_avx2(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                   float* y, int64_t ys);
#endif

}  // namespace loom_int4
