// cache/paged, cache/radix: the copy-on-write queue (interface 1.1). A sequence about to write
// into a block another sequence still holds gets a fresh block; the copy old -> new waits here
// until the host takes it and performs it before the next forward pass.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/cache.h"

namespace loom::block_cache {

class BlockCopies {
 public:
  void push(int32_t src, int32_t dst) { queued_.push_back(loom_block_copy{src, dst}); }
  int32_t num_queued() const { return static_cast<int32_t>(queued_.size()); }
  // Hands over what is queued and forgets it. The list stays valid until the next take():
  // mutating calls only add to the queue, never touch what was handed over.
  loom_block_copy_list take() {
    handed_.swap(queued_);
    queued_.clear();
    return loom_block_copy_list{handed_.data(), static_cast<int32_t>(handed_.size())};
  }

 private:
  std::vector<loom_block_copy> queued_;
  std::vector<loom_block_copy> handed_;
};

}  // namespace loom::block_cache
