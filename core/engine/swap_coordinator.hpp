// The one place KV blocks leave a request: preemption (swap out from the live block table, then
// free), release at finish/abort, and restoring swapped tokens when a preempted request is
// scheduled again. The cache plugin manages block ids, the cache_offload tier (optional) holds
// swapped contents, KvSwapper does the tier's bookkeeping; this coordinator fixes the order:
//
//   preempt(req, SWAP):      tier.save(live tables[g][0, ceil(computed / bs)), every group g)
//                            ->  cache.free  ->  computed = 0
//   preempt(req, RECOMPUTE): cache.free  ->  computed = 0
//   release(id):             cache.free  ->  tier entries dropped
//   restore(req, n):         tier.load into the blocks the scheduler just gave req; with windowed
//                            groups then cache.append(req at computed + restored, 0 tokens)
//
// No block table is copied: swap-out reads the cache's tables while the blocks are still held,
// before the pool may hand them to anyone else. The append after a restore makes the windowed
// groups release what lies before their windows now: the stand-ins of blocks a window had
// released before the swap-out were never written, and must leave the table before a commit
// could register them as prefix blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/engine/kv_swap.hpp"
#include "core/engine/plugin_handles.hpp"
#include "core/engine/request_state.hpp"
#include "loom/scheduler.h"

namespace loom {

class SwapCoordinator {
 public:
  // tier: a created cache_offload plugin or null (then every preemption recomputes); both it and
  // `cache` outlive this object. bytes_per_block: one pool block's K/V (one group's layers).
  // group_windows: [cache.num_groups()] each block-table group's window, 0 = full attention.
  SwapCoordinator(const CacheHandle& cache, const LoadedPlugin* tier, int64_t bytes_per_block, int32_t block_size,
                  std::vector<int32_t> group_windows = {0});

  bool swap_available() const { return swapper_ != nullptr; }
  // Carries out a preemption at once; returns the tokens now restorable from the tier (0 for
  // RECOMPUTE, or when the tier could not keep every block: then it recomputes).
  int32_t preempt(RequestState& req, loom_preempt_mode mode);
  // A preemption an interface 1.0 scheduler already did by freeing the blocks itself: nothing is
  // left to save, so it recomputes.
  void preempted_by_plugin(RequestState& req);
  // Frees a finished/aborted request's blocks and drops what the tier holds of it.
  void release(uint64_t request_id);
  // For a scheduled request whose num_computed_tokens includes this step's cached prefix: the
  // tokens of its num_new_tokens chunk restored from the tier (see restore_swapped). The caller
  // advances num_computed_tokens by the result and computes the rest.
  int32_t restore(const RequestState& req, int32_t num_new_tokens);
  void read_stats(EngineStats& out) const;

 private:
  // Views of the request's tables, one per group (valid until the cache's next mutating call).
  GroupTables tables_of(uint64_t request_id);

  const CacheHandle* cache_;
  std::unique_ptr<KvSwapper> swapper_;  // null without a tier
  int32_t block_size_;
  bool windowed_;                                 // some group has a window
  std::vector<std::span<const int32_t>> tables_;  // scratch for tables_of
};

}  // namespace loom
