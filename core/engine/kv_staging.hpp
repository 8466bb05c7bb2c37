// Host staging buffers for moves between the KV pool and the cache_offload tiers, so the tiers'
// copies run on the copy worker while the pool keeps changing under the engine thread.
//
//   spill:   engine thread: pool block -> staging slot (before the pool reuses the block)
//            copy worker:   staging slot -> every tier (save_entry / save)
//   restore: copy worker:   first tier that holds the key -> staging slot
//            engine thread: staging slot -> the request's new pool block (in prepare)
//
// Block ids the tiers see: [0, num_pool_blocks) are pool blocks, num_pool_blocks + s is slot s.
// Slots are allocated on first use, at most max_slots, and reused; acquire/release may run on
// any thread (one lock), a slot's bytes belong to whoever acquired it until release.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/executor/kv_pool.hpp"
#include "loom/cache_offload.h"

namespace loom {

class KvStaging {
 public:
  // pool outlives this object; max_slots >= 1.
  KvStaging(KvPool& pool, int32_t max_slots);

  // The copy ops handed to the tiers: pool ids and staging ids (valid while this object lives).
  const loom_kv_copy_ops& copy_ops() const { return ops_; }
  int64_t bytes_per_block() const { return ops_.bytes_per_block; }

  // A free slot, or nullopt when max_slots are all taken.
  std::optional<int32_t> acquire();
  void release(int32_t slot);
  // The id a tier's save/load uses for a slot.
  int32_t block_id(int32_t slot) const { return num_pool_blocks_ + slot; }
  // Engine thread: pool block -> slot, and slot -> pool block.
  void stage_from_pool(int32_t pool_block, int32_t slot);
  void unstage_to_pool(int32_t slot, int32_t pool_block);
  int32_t slots_in_use() const;

 private:
  static loom_status read_block(void* ctx, int32_t block_id, void* dst, loom_error_buf* err);
  static loom_status write_block(void* ctx, int32_t block_id, const void* src, loom_error_buf* err);
  std::byte* slot_bytes(int32_t slot) const;

  loom_kv_copy_ops pool_ops_;  // the pool's own copies (make_kv_copy_ops)
  loom_kv_copy_ops ops_;       // pool + staging, host_ctx = this
  int32_t num_pool_blocks_;
  int32_t max_slots_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<std::byte[]>> slots_;  // [allocated][bytes_per_block]
  std::vector<int32_t> free_;                        // allocated slots not in use
  int32_t in_use_ = 0;
};

}  // namespace loom
