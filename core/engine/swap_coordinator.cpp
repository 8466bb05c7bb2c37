#include "core/engine/swap_coordinator.hpp"

#include <exception>

#include "core/common/logging.hpp"

namespace loom {

SwapCoordinator::SwapCoordinator(const CacheHandle& cache, const LoadedPlugin* tier, int64_t bytes_per_block,
                                 int32_t block_size)
    : cache_(&cache), block_size_(block_size) {
  if (tier != nullptr) swapper_ = std::make_unique<KvSwapper>(*tier, bytes_per_block);
}

int32_t SwapCoordinator::preempt(RequestState& req, loom_preempt_mode mode) {
  int32_t saved = 0;
  if (mode == LOOM_PREEMPT_SWAP && swapper_) {
    // The live table: its blocks still hold the request's K/V until the free below. The tier only
    // saves work: when it fails, the request recomputes, as if it had been preempted so.
    try {
      saved = swapper_->swap_out(req.id, cache_->block_table(req.id), req.num_computed_tokens, block_size_);
    } catch (const std::exception& e) {
      LOOM_LOG_WARN("request {}: swapping out failed, it recomputes instead: {}", req.id, e.what());
      swapper_->forget(req.id);
      saved = 0;
    }
  } else if (swapper_) {
    swapper_->forget(req.id);  // earlier swapped entries would not match a recompute
  }
  cache_->free(req.id);
  req.num_computed_tokens = 0;
  return saved;
}

void SwapCoordinator::preempted_by_plugin(RequestState& req) {
  if (swapper_) swapper_->forget(req.id);
  req.num_computed_tokens = 0;
}

void SwapCoordinator::release(uint64_t request_id) {
  cache_->free(request_id);
  if (swapper_) swapper_->forget(request_id);
}

int32_t SwapCoordinator::restore(const RequestState& req, int32_t num_new_tokens) {
  if (!swapper_ || !swapper_->has_swapped(req.id)) return 0;
  try {
    return restore_swapped(*swapper_,
                           SwapInStep{req.id, req.num_computed_tokens, num_new_tokens, req.num_tokens(),
                                      cache_->block_table(req.id)},
                           block_size_);
  } catch (const std::exception& e) {
    // Blocks loaded before the failure are computed again over themselves: same K/V, same tokens.
    LOOM_LOG_WARN("request {}: restoring swapped KV failed, it recomputes instead: {}", req.id, e.what());
    swapper_->forget(req.id);
    return 0;
  }
}

void SwapCoordinator::read_stats(EngineStats& out) const {
  out.kv_swapped_out_blocks = swapper_ ? swapper_->swapped_out_blocks_total() : 0;
  out.kv_swapped_in_blocks = swapper_ ? swapper_->swapped_in_blocks_total() : 0;
}

}  // namespace loom
