// Spill and restore of prefix blocks through the cache_offload tiers (pool -> tier 0 -> tier 1
// ...), the engine-thread side. The copy worker (tier_copy_worker.hpp) does the tiers' copies.
//
//   spill   (prepare, before any write to the pool): every full prefix block the cache evicted
//           this step is copied into a staging slot and queued for the tiers; their keys are the
//           cache's chain hashes, so equal prefixes meet in a tier as they do in the pool.
//   hold    (a new request reaches the scheduler): when the pool misses a leading full block a
//           tier holds, the request is held back and a fetch of its next blocks is queued; the
//           scheduler sees it only once they are staged (resident on the host), so no step
//           ever waits on a tier.
//   release_held (start of each schedule): finished fetches hand their requests to the scheduler.
//   restore (prepare, after the cache's prefix hit): the staged blocks that continue the pool's
//           hit are copied into the request's new blocks and count as computed; the model
//           computes only the rest of the chunk. Commit registers them in the pool again.
//
// Region map of a held request (bs = block size, hashes from the cache):
//   blocks [0, pool)             in the pool (match_prefix at hold time)
//   blocks [pool, pool + k)      staged from a tier: restored when the pool's hit reaches them
//   blocks [pool + k, ...)       computed
//
// Block-table groups (cache interfaces 1.5, 1.6): a block position holds one pool block per group
// (each its own layers), spilled under that group's chain hash. A run [pool, pool + k) is
// restored only where the tiers hold the block of EVERY group, so the model finds in the pool
// whatever layer it reads; k blocks take k * num_groups staging slots. A cache with groups that
// does not give the other groups' hashes (group_block_hashes) still spills; nothing is restored.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/engine/kv_staging.hpp"
#include "core/engine/offload_tier.hpp"
#include "core/engine/plugin_handles.hpp"
#include "core/engine/request_state.hpp"
#include "core/engine/tier_copy_worker.hpp"

namespace loom {

class PrefixTiers {
 public:
  // tiers: the created cache_offload plugins, top first, made with staging.copy_ops(); they,
  // the cache and the staging outlive this object.
  PrefixTiers(const CacheHandle& cache, KvStaging& staging, std::vector<const LoadedPlugin*> tiers,
              int32_t block_size);
  // Spills the pool's cached prefix blocks (a persistent tier keeps them over a restart) and
  // waits for the copies.
  ~PrefixTiers();

  // Stages and queues the blocks the cache evicted since the last call.
  void spill_evicted();
  // True when the request is held for a fetch (the caller must not add it to the scheduler now).
  bool hold(const loom_request_view& req);
  // Requests whose fetch finished, to add to the scheduler now.
  std::vector<uint64_t> release_held();
  // Tokens of the chunk restored from staged blocks (see the top); the caller adds them to
  // num_computed_tokens.
  int32_t restore(const RequestState& req, int32_t num_new_tokens);
  // Forgets a finished or aborted request: its staged blocks go back to the staging pool.
  void release(uint64_t request_id);
  // True while a fetch is in flight (the engine has a reason to come back soon).
  bool fetching() const { return !held_.empty(); }
  // True while the copy worker has spills or fetches queued or running.
  bool copies_pending() const { return worker_->pending() != 0; }
  void read_stats(EngineStats& out) const;
  // Tests: waits for the copy worker to finish what is queued.
  void wait_idle() { worker_->wait_idle(); }

 private:
  struct Staged {
    int32_t first_block = 0;
    // [i * num_groups + g]: group g's block first_block + i; -1 once used or released
    std::vector<int32_t> slots;
  };
  void drop_staged(Staged& s);
  void spill(std::span<const loom_evicted_block> evicted);

  const CacheHandle* cache_;
  int32_t block_size_;
  int32_t num_groups_;
  bool restores_;  // the cache gives every group's hashes
  KvStaging* staging_;
  std::vector<std::unique_ptr<OffloadTier>> tiers_;
  std::unique_ptr<TierCopyWorker> worker_;  // after the tiers and the staging: joined first
  std::unordered_set<uint64_t> held_;
  std::unordered_map<uint64_t, Staged> staged_;
  std::vector<std::vector<uint64_t>> hashes_;  // [num_groups] scratch
  TierDecisions decisions_;
  int64_t lower_tier_tokens_ = 0;
};

}  // namespace loom
