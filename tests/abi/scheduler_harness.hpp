// Drives a loaded scheduler plugin the way the engine does: owns the requests, answers
// get_request, calls schedule() and applies its decisions (computed tokens advance, a finished
// prefill or decode samples one token, preempted requests restart from 0, rejected ones leave).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/plugin/loaded_plugin.hpp"
#include "fake_cache.hpp"
#include "loom/scheduler.h"

namespace loom::test {

struct StepResult {
  std::vector<std::pair<uint64_t, int32_t>> scheduled;  // (request id, num_new_tokens)
  std::vector<uint64_t> preempted;  // in the order the scheduler proposed them
  std::vector<uint64_t> rejected;
  std::vector<std::string> reasons;  // one per rejected
};

class SchedulerHarness {
 public:
  SchedulerHarness(const LoadedPlugin& scheduler, FakeCache& cache)
      : scheduler_(scheduler), cache_(cache) {}

  void add(uint64_t id, int32_t prompt, int32_t max_new, int32_t priority, int64_t arrival_us) {
    Request& r = requests_[id];
    r.tokens.assign(static_cast<size_t>(prompt), 7);
    r.view = loom_request_view{};
    r.view.struct_size = sizeof(loom_request_view);
    r.view.request_id = id;
    r.view.num_tokens = prompt;
    r.view.num_prompt_tokens = prompt;
    r.view.max_total_tokens = prompt + max_new;
    r.view.priority = priority;
    r.view.arrival_time_us = arrival_us;
    sync(r);
    scheduler_.call("add_request", &loom_scheduler_vtable::add_request, &r.view);
  }

  // The request finished: the host forgets it and frees its blocks.
  void finish(uint64_t id) {
    scheduler_.call("remove_request", &loom_scheduler_vtable::remove_request, id);
    ErrorBuffer err;
    loom_error_buf buf = err.buf();
    cache_.handle().vtable->free(&cache_, id, &buf);
    requests_.erase(id);
  }

  StepResult step() {
    std::vector<loom_scheduled_request> scheduled(requests_.size() + 1);
    std::vector<uint64_t> preempted(requests_.size() + 1), rejected(requests_.size() + 1);
    constexpr int32_t kReasonSize = 128;
    std::vector<char> reasons(rejected.size() * kReasonSize, '\0');
    result_ = StepResult{};
    loom_sched_output out{};
    out.struct_size = sizeof(out);
    out.scheduled = scheduled.data();
    out.scheduled_capacity = static_cast<int32_t>(scheduled.size());
    out.preempted = preempted.data();
    out.preempted_capacity = static_cast<int32_t>(preempted.size());
    out.rejected = rejected.data();
    out.rejected_capacity = static_cast<int32_t>(rejected.size());
    out.rejected_reasons = reasons.data();
    out.reason_size = kReasonSize;
    loom_sched_context ctx{};
    ctx.struct_size = sizeof(ctx);
    ctx.cache = cache_.handle();
    ctx.host_ctx = this;
    ctx.get_request = &SchedulerHarness::get_request;
    ctx.now_us = ++now_us_;
    ctx.swap_available = 0;
    ctx.preempt = &SchedulerHarness::preempt;
    scheduler_.call("schedule", &loom_scheduler_vtable::schedule, &ctx, &out);

    StepResult result = std::move(result_);
    for (int32_t i = 0; i < out.num_scheduled; ++i) {
      const auto& s = out.scheduled[i];
      result.scheduled.emplace_back(s.request_id, s.num_new_tokens);
      Request& r = requests_.at(s.request_id);
      r.view.num_computed_tokens += s.num_cached_tokens + s.num_new_tokens;
      if (r.view.num_computed_tokens == r.view.num_tokens &&
          r.view.num_tokens < r.view.max_total_tokens) {
        r.tokens.push_back(9);  // "sampled"
        r.view.num_tokens += 1;
      }
      sync(r);
    }
    EXPECT_EQ(out.num_preempted, 0) << "interface 1.1 preempts through ctx.preempt";
    for (int32_t i = 0; i < out.num_rejected; ++i) {
      result.rejected.push_back(out.rejected[i]);
      result.reasons.emplace_back(reasons.data() + static_cast<size_t>(i) * kReasonSize);
      scheduler_.call("remove_request", &loom_scheduler_vtable::remove_request, out.rejected[i]);
      requests_.erase(out.rejected[i]);
    }
    return result;
  }

  loom_sched_stats stats() const {
    loom_sched_stats s{};
    s.struct_size = sizeof(s);
    scheduler_.call("stats", &loom_scheduler_vtable::stats, &s);
    return s;
  }

  const loom_request_view& view(uint64_t id) const { return requests_.at(id).view; }

 private:
  struct Request {
    loom_request_view view;
    std::vector<int32_t> tokens;
  };
  static void sync(Request& r) { r.view.token_ids = r.tokens.data(); }

  // What the host does for a proposed preemption: free the blocks now, restart from token 0.
  static loom_status preempt(void* host_ctx, uint64_t id, int32_t mode, loom_error_buf* err) {
    auto* self = static_cast<SchedulerHarness*>(host_ctx);
    auto it = self->requests_.find(id);
    if (it == self->requests_.end() || mode != LOOM_PREEMPT_RECOMPUTE) return LOOM_ERR_INVALID_ARGUMENT;
    self->cache_.handle().vtable->free(&self->cache_, id, err);
    it->second.view.num_computed_tokens = 0;
    self->result_.preempted.push_back(id);
    return LOOM_OK;
  }

  static loom_status get_request(void* host_ctx, uint64_t id, loom_request_view* out) {
    auto* self = static_cast<SchedulerHarness*>(host_ctx);
    auto it = self->requests_.find(id);
    if (it == self->requests_.end()) return LOOM_ERR_NOT_FOUND;
    *out = it->second.view;
    return LOOM_OK;
  }

  const LoadedPlugin& scheduler_;
  FakeCache& cache_;
  std::map<uint64_t, Request> requests_;
  int64_t now_us_ = 0;
  StepResult result_;  // the preemptions of the schedule() call in progress
};

}  // namespace loom::test
