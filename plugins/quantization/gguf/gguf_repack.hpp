// The interleaved ("x8") layout the AVX2 kernels take Q4_0 and Q8_0 weights in, made once at
// load.
//
// Rows go in groups of 8 (the last group padded with zero rows). A group of nb blocks is
//   quants: nb x Q bytes (Q = 8 x the block's 16 (Q4_0) or 32 (Q8_0) quant bytes); block b's
//           Q bytes are chunks of 32, chunk j holding bytes qs[4j .. 4j+3] of rows 0..7 side by
//           side (row r at byte 4r of the chunk), so one 32-bit lane per row. Q4_0: low nibbles
//           are values 4j..4j+3, high nibbles 16+4j..16+4j+3; Q8_0: values 4j..4j+3.
//   scales: nb x 8 f16, block b's scales of rows 0..7 at nb * Q + 16 b
// padded to a multiple of 64 bytes, groups one after the other from a 64-byte aligned base. A
// kernel broadcasts 4 activation bytes to all 8 lanes, so one maddubs serves 8 weight rows and
// each lane's sum belongs to one row: no horizontal reduction per block.
//
// The bytes are the file's own (quants and f16 scales unchanged), only moved: as many bytes per
// 32 weights as in the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace loom_gguf {

constexpr int64_t kGroupRows = 8;

struct PackedWeight {
  int64_t quant_bytes = 0;  // Q: quant bytes of one block of 8 rows (128 Q4_0, 256 Q8_0)
  int64_t n_rows = 0;       // weight rows (out features), before padding
  int64_t n_blocks = 0;     // 32-value blocks per row
  int64_t group_bytes = 0;  // bytes from one 8-row group to the next
  std::unique_ptr<uint8_t, void (*)(void*)> data{nullptr, nullptr};  // 64-byte aligned

  const uint8_t* group(int64_t g) const { return data.get() + g * group_bytes; }
};

// p->data: the n_groups * group_bytes bytes of p's groups, 64-byte aligned, zeroed (padding
// rows: zero quants and scales), huge pages advised; from p's n_rows and group_bytes.
// zero = false leaves the bytes (and their first touch) to whoever fills the groups.
void allocate_groups(PackedWeight* p, bool zero = true);

// Repacks rows of GGUF Q4_0 or Q8_0 blocks ([n_rows] rows, row_bytes apart, n_blocks blocks each).
PackedWeight pack_q4_0(const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks);
PackedWeight pack_q8_0(const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks);

// Per Q8_0 activation block: its f16 scale as f32, and 8 * (sum of its 32 values), the term
// that turns the Q4_0 kernel's unsigned-nibble products into (nibble - 8) products (the Q8_0
// kernel reads only d).
struct ActivationBlockInfo {
  float* d;         // [n, nb]
  int32_t* offset;  // [n, nb]
};
void activation_block_info(const uint8_t* xq, int64_t xq_row_bytes, int64_t n, int64_t nb, ActivationBlockInfo info);

// y[t * ys + j] = dot(activation row t, weight row j) for t < n, j < packed.n_rows, over
// groups [g0, g1) (j counted from 8 g0). Per (t, j) the blocks fold in increasing order as
// acc = fma(d_w * d_a, float(exact block sum), acc), the same whatever n or the grouping.
using PackedKernel = void (*)(const PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
                              const ActivationBlockInfo& info, int64_t n, float* y, int64_t ys);

}  // namespace loom_gguf
