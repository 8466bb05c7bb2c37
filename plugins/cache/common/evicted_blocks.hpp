// cache/paged, cache/radix (cache/common): the record of evicted prefix blocks the host
// spills to a cache_offload tier. Bounded at one pool's worth: between two take() calls (one per
// engine step) at most num_blocks registered blocks can be evicted, since a block is registered
// again only after a forward pass; a host that never takes them loses the oldest, never memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace loom::block_cache {

// One evicted block, laid out as interface 1.4's loom_evicted_block (the plugins hand a span of
// these over as that C list; they check the layout where they do). Kept free of the C header so
// the library compiles the same for a plugin built against an older cache.h.
struct EvictedBlock {
  int32_t block_id;
  int32_t num_tokens;
  uint64_t hash;
  uint64_t salt;
};

class EvictedBlocks {
 public:
  explicit EvictedBlocks(size_t capacity) : capacity_(capacity) {}

  void add(int32_t block_id, int32_t num_tokens, uint64_t hash, uint64_t salt) {
    if (capacity_ == 0) return;
    pending_.push_back(EvictedBlock{block_id, num_tokens, hash, salt});
    if (pending_.size() > capacity_) pending_.pop_front();
  }
  // Everything recorded since the last take, oldest first; valid until the next add or take.
  std::span<const EvictedBlock> take() {
    taken_.assign(pending_.begin(), pending_.end());
    pending_.clear();
    return taken_;
  }

 private:
  size_t capacity_;
  std::deque<EvictedBlock> pending_;
  std::vector<EvictedBlock> taken_;  // what the last take handed out
};

}  // namespace loom::block_cache
