// attention/flash_cpu: the tile kernel — online-softmax attention of a tile of query rows that
// share one KV head (or a run of KV heads, each with its own rows), walking the KV blocks one
// block at a time.
//
// A "row" is one (query token, query head) pair. All rows of a tile belong to one sequence and
// one GQA group, so every K/V block row is read from memory once and reused from L1 for every
// row of the tile. Each row keeps a running max m, a running sum l and an accumulator acc that
// is rescaled by exp(m_old - m_new) whenever the max grows; no full score matrix exists.
//
// Invariant the plugin relies on: a row's result depends only on its own query, its position
// and its sequence's K/V — never on the other rows of the tile — so tiling choices and batch
// composition cannot change a single bit of the output.
//
// A tile folds only the keys of one split-K partition [kv_begin, kv_end) (flash_cpu_split.hpp).
// A row whose keys all lie in it is finished (out = acc / l); a row whose keys reach outside it
// leaves its partial state (acc, m, l) for the plugin to merge; a row with no key in it is left
// alone.
//
// KV dtypes, portable kernel: an f32 pool is read in place. An f16/bf16/int8/fp8_e4m3 pool is
// dequantised one block-head at a time (only the rows some row of the tile admits) into a
// per-thread f32 buffer of [block_size, head_dim] that stays in L1, and then folded exactly like
// f32; the dequantised block is reused by every row of the tile (G query heads x tile tokens), so
// the conversion costs one pass per block per tile. The AVX2 kernel instead converts every dtype
// in registers where it is used (flash_cpu_kernel_avx2.cpp). Block layout and scales:
// loom/sdk_kv_quant.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/types.h"

namespace loom::flash_cpu {

// One work item: rows of one sequence against `kv_heads` consecutive KV heads of the paged pool.
// Rows are head-major: rows / kv_heads rows per KV head, the first KV head's first. Several heads
// per item let a decode step walk each block's rows of all its heads, which are contiguous in the
// pool, instead of one head's rows KVH * head_dim apart (a stride no hardware prefetcher follows).
struct TileArgs {
  const float* const* q_rows;  // [rows] -> [head_dim] query of each row (RoPE applied)
  float* const* out_rows;      // [rows] -> [head_dim] where each row's result goes
  const int32_t* row_pos;      // [rows] position of each row's token; it attends to 0..pos
  int32_t rows;
  int32_t window;              // > 0: a row attends to pos - window + 1 .. pos only (sliding window)
  int32_t kv_begin, kv_end;    // only keys at positions kv_begin .. kv_end - 1 are folded (a partition)
  float* const* part_rows;     // [rows] -> [head_dim + 2] partial state of a row whose keys reach
                               // outside [kv_begin, kv_end) (flash_cpu_split.hpp); else unused
  const int32_t* block_table;  // [>= max(row_pos) / block_size + 1] this sequence's blocks
  const void* k_head;          // k_cache data advanced to the item's first KV head
  const void* v_head;          // v_cache data advanced to the item's first KV head
  int32_t kv_heads;            // >= 1, a divisor of rows
  int64_t k_head_stride, v_head_stride;  // k_cache/v_cache strides of dim 2 (KV head), in elements
  int64_t k_block_stride, k_row_stride;  // k_cache strides of dims 0 (block) and 1 (slot), in elements
  int64_t v_block_stride, v_row_stride;
  loom_dtype kv_dtype;         // f32, f16, bf16, i8 or fp8_e4m3
  int64_t scale_offset;        // int8/fp8: bytes from a block's first row of the first head to its scale
                               // (fp8: the scale of that row; loom/sdk_kv_quant.hpp)
  int64_t scale_head_stride;   // int8/fp8: bytes between the scales of consecutive KV heads
  int64_t scale_slot_stride;   // bytes between the scales of consecutive slots (fp8); 0 for int8
  int32_t block_size;
  int32_t head_dim;  // a multiple of 4
  float scale;
};

// Per-thread buffers, grown on demand and reused across steps.
struct TileScratch {
  std::vector<float> acc;     // [rows, head_dim] unnormalised weighted sum of V
  std::vector<float> m;       // [rows] running max of the scores
  std::vector<float> l;       // [rows] running sum of exp(score - m)
  std::vector<float> scores;  // [rows of a group][block_size rounded up to 8] scores, then weights, in one block
  std::vector<float> k_block;  // [block_size, head_dim] dequantised K of one block-head (portable, non-f32 pools)
  std::vector<float> v_block;  // [block_size, head_dim] dequantised V
  std::vector<float> k_row_scales;  // [block_size rounded up to 8] fp8: one block-head's K row scales (AVX2)
  std::vector<float> v_row_scales;  // [block_size rounded up to 8] fp8: its V row scales
};

using TileKernel = void (*)(const TileArgs& args, TileScratch& scratch);

// The last step of both kernels: each row with a key in [kv_begin, kv_end) is finished into
// out_rows or, if its keys reach outside, stored as a partial into part_rows.
// acc [rows, head_dim], m [rows], l [rows]: the rows' running states.
void store_rows(const TileArgs& args, const float* acc, const float* m, const float* l);

#if defined(__x86_64__) && defined(__GNUC__)
// Intrinsics for AVX2+FMA+F16C; callable only where the CPU has them (select_tile_kernel checks).
void tile_avx2(const TileArgs& args, TileScratch& scratch);
// out[0..n) = x as f16, 8 at a time by F16C (round to nearest even): the bits of
// sdk::f32_to_f16 for every value, NaN included (a group of 8 holding a NaN goes through it).
void encode_f16_avx2(const float* x, uint16_t* out, int32_t n);
// out[0..n) = x as bf16, 8 at a time by integer rounding: the bits of sdk::f32_to_bf16 for every
// value (round to nearest even, NaN kept quiet).
void encode_bf16_avx2(const float* x, uint16_t* out, int32_t n);
#endif

// The portable kernel, or the AVX2+FMA+F16C one when `allow_simd` and the CPU has them.
TileKernel select_tile_kernel(bool allow_simd, const char** name);

}  // namespace loom::flash_cpu
