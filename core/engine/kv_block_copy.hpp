// Copies of one KV block (every layer's K and V) between the pool and plain host memory: what
// the host hands a cache_offload plugin so it never touches the pool itself.
// Layout of a copied block: for layer 0..L-1: K [block_size, n_kv_heads, head_dim] then V [same].
#pragma once

#include "core/executor/kv_pool.hpp"
#include "loom/cache_offload.h"

namespace loom {

// Copy functions over `pool` (which must outlive the returned ops).
loom_kv_copy_ops make_kv_copy_ops(KvPool& pool);

}  // namespace loom
