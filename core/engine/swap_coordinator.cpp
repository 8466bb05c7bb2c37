#include "core/engine/swap_coordinator.hpp"

#include <algorithm>
#include <exception>
#include <string>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"

namespace loom {

SwapCoordinator::SwapCoordinator(const CacheHandle& cache, const LoadedPlugin* tier, int64_t bytes_per_block,
                                 int32_t block_size, std::vector<int32_t> group_windows)
    : cache_(&cache),
      block_size_(block_size),
      windowed_(std::any_of(group_windows.begin(), group_windows.end(), [](int32_t w) { return w > 0; })) {
  LOOM_CHECK(static_cast<int32_t>(group_windows.size()) == cache.num_groups(),
             "SwapCoordinator: " + std::to_string(group_windows.size()) + " windows for " +
                 std::to_string(cache.num_groups()) + " block-table groups");
  if (tier != nullptr) swapper_ = std::make_unique<KvSwapper>(*tier, bytes_per_block, std::move(group_windows));
}

GroupTables SwapCoordinator::tables_of(uint64_t request_id) {
  tables_.clear();
  for (int32_t g = 0; g < cache_->num_groups(); ++g) tables_.push_back(cache_->group_block_table(request_id, g));
  return tables_;
}

int32_t SwapCoordinator::preempt(RequestState& req, loom_preempt_mode mode) {
  int32_t saved = 0;
  if (mode == LOOM_PREEMPT_SWAP && swapper_) {
    // The live table: its blocks still hold the request's K/V until the free below. The tier only
    // saves work: when it fails, the request recomputes, as if it had been preempted so.
    try {
      saved = swapper_->swap_out(req.id, tables_of(req.id), req.num_computed_tokens, block_size_);
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
    const int32_t restored = restore_swapped(
        *swapper_, SwapInStep{req.id, req.num_computed_tokens, num_new_tokens, req.num_tokens(), tables_of(req.id)},
        block_size_);
    if (restored > 0 && windowed_) {  // see the top: before any commit
      loom_request_view view = req.view();
      view.num_computed_tokens += restored;
      LOOM_CHECK(cache_->append(view, 0),
                 "cache: no room to release what lies behind request " + std::to_string(req.id) + "'s windows");
    }
    return restored;
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
