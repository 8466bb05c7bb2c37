// One call of the scheduler plugin per step, turned into the step's plan. The plugin reads
// request state through get_request and proposes preemptions through preempt; the host carries
// each one out at once, in call order (swap out, free, reset), and records it in the plan.
// Rejections arrive with their reasons. An interface 1.0 plugin, which frees its victims itself,
// is handled the old way: its victims recompute, and a rejection's reason is asked of the cache.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/engine/plugin_handles.hpp"
#include "core/engine/request_state.hpp"
#include "core/engine/step_plan.hpp"
#include "core/engine/step_time_model.hpp"
#include "core/engine/swap_coordinator.hpp"

namespace loom {

class StepScheduler {
 public:
  // Every argument outlives this object.
  StepScheduler(const SchedulerHandle& scheduler, const CacheHandle& cache, SwapCoordinator& swaps);

  // The live request with that id, or null.
  using RequestLookup = std::function<RequestState*(uint64_t)>;
  // Fills `plan` (cleared first) for the step starting at now_us. Throws loom::Error when the
  // plugin fails or breaks the contract of loom/scheduler.h (e.g. schedules a request it
  // preempted in the same call).
  void schedule(const RequestLookup& lookup, int64_t now_us, StepPlan& plan);
  // What ctx->predicted_step_us answers from (null: 0). Must outlive this object.
  void set_step_model(const StepTimeModel* model) { step_model_ = model; }
  // Measured swap cost per token (saving now and restoring later), 0 until a swap was timed.
  double swap_us_per_token() const { return swap_us_per_token_; }

  static constexpr int32_t kReasonSize = 256;  // bytes per rejection reason, NUL included

 private:
  struct Call;  // the host_ctx of one schedule() call
  static loom_status get_request(void* host_ctx, uint64_t request_id, loom_request_view* out);
  static loom_status preempt(void* host_ctx, uint64_t request_id, int32_t mode, loom_error_buf* err);
  static int64_t predicted_step_us(void* host_ctx, int32_t prefill_tokens, int32_t decode_tokens, int64_t kv_tokens);
  void collect(const loom_sched_output& out, const RequestLookup& lookup, StepPlan& plan);

  const SchedulerHandle* scheduler_;
  const CacheHandle* cache_;
  SwapCoordinator* swaps_;
  // Scratch for the output arrays, reused across steps.
  std::vector<loom_scheduled_request> scheduled_;
  std::vector<uint64_t> preempted_;
  std::vector<uint64_t> rejected_;
  std::vector<char> reasons_;  // [capacity, kReasonSize]
  std::unordered_set<uint64_t> preempted_ids_;
  const StepTimeModel* step_model_ = nullptr;
  double swap_us_per_token_ = 0;  // moving average over timed swap-outs, times two (the restore)
};

}  // namespace loom
