// The physical KV pool the core owns: per layer, K and V as
// [num_blocks, block_size, n_kv_heads, head_dim]. The cache plugin decides which block holds
// what; the attention plugin reads and writes the memory through the views handed out here.
#pragma once

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
  // dtype without a fixed element size.
  explicit KvPool(const KvPoolShape& shape);

  const KvPoolShape& shape() const { return shape_; }
  // Views of one layer's pool: [num_blocks, block_size, n_kv_heads, head_dim].
  loom_tensor_view& k(int32_t layer) { return k_views_.at(static_cast<size_t>(layer)); }
  loom_tensor_view& v(int32_t layer) { return v_views_.at(static_cast<size_t>(layer)); }

  // Copies block src's K and V to block dst in every layer (copy-on-write of a shared block).
  // Throws loom::Error naming an id outside [0, num_blocks). src == dst is a no-op.
  void copy_block(int32_t src, int32_t dst);

  // Bytes of K and V of one token over all layers (what the cache plugin sizes blocks with).
  static int64_t bytes_per_token(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim, loom_dtype dtype);
  int64_t total_bytes() const { return bytes_; }
  // Element size of a KV dtype in bytes; 0 when it has none (block-quantized types).
  static int64_t element_size(loom_dtype dtype);

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  KvPoolShape shape_;
  int64_t bytes_ = 0;
  std::unique_ptr<void, FreeDeleter> memory_;  // [n_layers][K, V][num_blocks, block_size, n_kv_heads, head_dim]
  std::vector<loom_tensor_view> k_views_;      // [n_layers]
  std::vector<loom_tensor_view> v_views_;      // [n_layers]
};

}  // namespace loom
