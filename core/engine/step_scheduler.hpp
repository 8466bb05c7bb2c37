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

  static constexpr int32_t kReasonSize = 256;  // bytes per rejection reason, NUL included

 private:
  struct Call;  // the host_ctx of one schedule() call
  static loom_status get_request(void* host_ctx, uint64_t request_id, loom_request_view* out);
  static loom_status preempt(void* host_ctx, uint64_t request_id, int32_t mode, loom_error_buf* err);
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
};

}  // namespace loom
