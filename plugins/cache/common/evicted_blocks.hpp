// cache/paged, cache/radix (cache/common): the 1.3 record of evicted prefix blocks the host
// spills to a cache_offload tier. Bounded at one pool's worth: between two take() calls (one per
// engine step) at most num_blocks registered blocks can be evicted, since a block is registered
// again only after a forward pass; a host that never takes them loses the oldest, never memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "loom/cache.h"

namespace loom::block_cache {

class EvictedBlocks {
 public:
  explicit EvictedBlocks(size_t capacity) : capacity_(capacity) {}

  void add(int32_t block_id, int32_t num_tokens, uint64_t hash, uint64_t salt) {
    if (capacity_ == 0) return;
    pending_.push_back(loom_evicted_block{block_id, num_tokens, hash, salt});
    if (pending_.size() > capacity_) pending_.pop_front();
  }
  // Everything recorded since the last take, oldest first; valid until the next add or take.
  loom_evicted_block_list take() {
    taken_.assign(pending_.begin(), pending_.end());
    pending_.clear();
    return loom_evicted_block_list{taken_.data(), static_cast<int32_t>(taken_.size())};
  }

 private:
  size_t capacity_;
  std::deque<loom_evicted_block> pending_;
  std::vector<loom_evicted_block> taken_;  // what the last take handed out
};

}  // namespace loom::block_cache
