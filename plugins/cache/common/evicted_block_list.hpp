// cache/paged, cache/radix (cache/common): the evicted blocks as interface 1.4's C list, for the
// plugins' take_evicted. Only for a build against cache.h 1.4 or later (an older header has no
// such list; the ABI fixtures build the plugins against one).
#pragma once

#include <cstddef>
#include <span>

#include "evicted_blocks.hpp"
#include "loom/cache.h"

#if LOOM_CACHE_IFACE_MINOR >= 4
namespace loom::block_cache {

static_assert(sizeof(EvictedBlock) == sizeof(loom_evicted_block));
static_assert(offsetof(EvictedBlock, block_id) == offsetof(loom_evicted_block, block_id));
static_assert(offsetof(EvictedBlock, num_tokens) == offsetof(loom_evicted_block, num_tokens));
static_assert(offsetof(EvictedBlock, hash) == offsetof(loom_evicted_block, hash));
static_assert(offsetof(EvictedBlock, salt) == offsetof(loom_evicted_block, salt));

inline loom_evicted_block_list as_c_list(std::span<const EvictedBlock> blocks) {
  return loom_evicted_block_list{reinterpret_cast<const loom_evicted_block*>(blocks.data()),
                                 static_cast<int32_t>(blocks.size())};
}

}  // namespace loom::block_cache
#endif
