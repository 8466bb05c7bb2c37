// The physical KV pool the core owns: per layer, K and V as
// [num_blocks, block_size, n_kv_heads, head_dim]. With block-table groups (kv_groups.hpp) the
// "layers" here are a group's slots: a block holds one group's layers, and which group a block
// serves is the cache's table that names it. The cache plugin decides which block holds
// what; the attention plugin reads and writes the memory through the views handed out here.
// The KV dtype is f32, f16, bf16, int8 or fp8_e4m3; int8/fp8 blocks end in per-head f32 scales
// (layout and scale scheme: sdk/include/loom/sdk_kv_quant.hpp), so a view's strides[0] is the
// whole block's size in elements and every block copy carries its scales.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "loom/types.h"

namespace loom {

struct KvPoolShape {
  int32_t n_layers = 0;
  int32_t num_blocks = 0;
  int32_t block_size = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  loom_dtype dtype = LOOM_DTYPE_F32;
};

class KvPool {
 public:
  // Allocates and zeroes the whole pool. Throws loom::Error on a non-positive dimension or a
  // dtype the pool cannot hold (anything but f32, f16, bf16, int8, fp8_e4m3).
  explicit KvPool(const KvPoolShape& shape);

  const KvPoolShape& shape() const { return shape_; }
  // Views of one layer's pool: [num_blocks, block_size, n_kv_heads, head_dim], strides[0] =
  // block_bytes() / element size.
  loom_tensor_view& k(int32_t layer) { return k_views_.at(static_cast<size_t>(layer)); }
  loom_tensor_view& v(int32_t layer) { return v_views_.at(static_cast<size_t>(layer)); }

  // Copies block src's K and V to block dst in every layer (copy-on-write of a shared block).
  // Throws loom::Error naming an id outside [0, num_blocks). src == dst is a no-op.
  void copy_block(int32_t src, int32_t dst);

  // Bytes of K and V of one token over all layers (what the cache plugin sizes blocks with).
  static int64_t bytes_per_token(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim, loom_dtype dtype);
  // Per-block bytes beyond block_size * bytes_per_token over all layers, K and V: the int8/fp8
  // scales (0 for f32/f16/bf16). Blocks whose data is not a multiple of 4 bytes pad up to 3 more.
  static int64_t scale_bytes_per_block(int32_t n_layers, int32_t n_kv_heads, loom_dtype dtype);
  // Bytes of one block of one layer's K (or V), scales included.
  int64_t block_bytes() const { return block_bytes_; }
  int64_t total_bytes() const { return bytes_; }
  // Element size of a KV dtype in bytes; 0 when it has none (block-quantized types).
  static int64_t element_size(loom_dtype dtype);

 private:
  // The pool is an anonymous mapping: zero pages until first written, so a large default pool
  // (sized from free memory) costs resident memory only for the blocks requests have used.
  struct Unmap {
    size_t bytes;  // no initializer: nested-class NSDMIs block unique_ptr's default constructor in GCC
    void operator()(void* p) const;
  };
  KvPoolShape shape_;
  int64_t block_bytes_ = 0;
  int64_t bytes_ = 0;
  std::unique_ptr<void, Unmap> memory_;  // [n_layers][K, V][num_blocks][block bytes]
  std::vector<loom_tensor_view> k_views_;      // [n_layers]
  std::vector<loom_tensor_view> v_views_;      // [n_layers]
};

}  // namespace loom
