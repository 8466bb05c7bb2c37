#include "core/engine/step_scheduler.hpp"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>

#include "core/common/error.hpp"

namespace loom {

struct StepScheduler::Call {
  StepScheduler* self;
  const RequestLookup* lookup;
  StepPlan* plan;
};

StepScheduler::StepScheduler(const SchedulerHandle& scheduler, const CacheHandle& cache, SwapCoordinator& swaps)
    : scheduler_(&scheduler), cache_(&cache), swaps_(&swaps) {}

loom_status StepScheduler::get_request(void* host_ctx, uint64_t request_id, loom_request_view* out) {
  const auto* call = static_cast<const Call*>(host_ctx);
  const RequestState* req = (*call->lookup)(request_id);
  if (req == nullptr || out == nullptr) return LOOM_ERR_NOT_FOUND;
  // A plugin built before the view grew (interface 1.1 and older) passes its shorter struct_size
  // (or none): it gets the fields through cache_salt, the view as it was then.
  constexpr size_t kView11 = offsetof(loom_request_view, ttft_target_ms);
  const size_t n = out->struct_size >= sizeof(loom_request_view) ? sizeof(loom_request_view) : kView11;
  const loom_request_view v = req->view();
  std::memcpy(out, &v, n);
  out->struct_size = static_cast<uint32_t>(n);
  return LOOM_OK;
}

int64_t StepScheduler::predicted_step_us(void* host_ctx, int32_t prefill_tokens, int32_t decode_tokens,
                                         int64_t kv_tokens) {
  const auto* call = static_cast<const Call*>(host_ctx);
  const StepTimeModel* model = call->self->step_model_;
  return model == nullptr ? 0 : model->predict_us(prefill_tokens, decode_tokens, kv_tokens);
}

loom_status StepScheduler::preempt(void* host_ctx, uint64_t request_id, int32_t mode, loom_error_buf* err) {
  auto* call = static_cast<Call*>(host_ctx);
  auto fail = [&](loom_status status, const std::string& message) {
    if (err != nullptr && err->data != nullptr && err->capacity > 0)
      std::snprintf(err->data, err->capacity, "%s", message.c_str());
    return status;
  };
  const std::string what = "preempt request " + std::to_string(request_id) + ": ";
  RequestState* req = (*call->lookup)(request_id);
  if (req == nullptr) return fail(LOOM_ERR_INVALID_ARGUMENT, what + "unknown request");
  if (mode != LOOM_PREEMPT_RECOMPUTE && mode != LOOM_PREEMPT_SWAP)
    return fail(LOOM_ERR_INVALID_ARGUMENT, what + "unknown mode " + std::to_string(mode));
  if (mode == LOOM_PREEMPT_SWAP && !call->self->swaps_->swap_available())
    return fail(LOOM_ERR_INVALID_ARGUMENT, what + "swap asked for, but no [cache_offload] tier is configured");
  if (!call->self->preempted_ids_.insert(request_id).second)
    return fail(LOOM_ERR_INVALID_ARGUMENT, what + "already preempted in this step");
  try {
    const auto m = static_cast<loom_preempt_mode>(mode);
    const auto start = std::chrono::steady_clock::now();
    const int32_t swapped = call->self->swaps_->preempt(*req, m);
    if (m == LOOM_PREEMPT_SWAP && swapped > 0) {
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      // Restoring copies the same bytes back: twice the save is the whole cost.
      const double per_token = 2.0 * us / swapped;
      double& avg = call->self->swap_us_per_token_;
      avg = avg == 0 ? per_token : 0.8 * avg + 0.2 * per_token;
    }
    call->plan->preempted.push_back(Preemption{request_id, m, swapped});
  } catch (const Error& e) {
    return fail(e.code(), what + e.what());
  } catch (const std::exception& e) {
    return fail(LOOM_ERR_INTERNAL, what + e.what());
  }
  return LOOM_OK;
}

void StepScheduler::schedule(const RequestLookup& lookup, int64_t now_us, StepPlan& plan) {
  plan.clear();
  preempted_ids_.clear();
  const loom_sched_stats stats = scheduler_->stats();
  const size_t capacity = static_cast<size_t>(stats.num_waiting + stats.num_running) + 1;
  scheduled_.resize(capacity);
  preempted_.resize(capacity);
  rejected_.resize(capacity);
  reasons_.assign(capacity * kReasonSize, '\0');

  Call call{this, &lookup, &plan};
  loom_sched_context ctx{};
  ctx.struct_size = sizeof(ctx);
  ctx.cache = scheduler_->proposes_preemptions() ? cache_->for_scheduler() : cache_->for_scheduler_1_0();
  ctx.host_ctx = &call;
  ctx.get_request = &StepScheduler::get_request;
  ctx.now_us = now_us;
  ctx.swap_available = swaps_->swap_available() ? 1 : 0;
  ctx.preempt = &StepScheduler::preempt;
  ctx.predicted_step_us = &StepScheduler::predicted_step_us;
  ctx.swap_us_per_token = swap_us_per_token_;
  loom_sched_output out{};
  out.struct_size = sizeof(out);
  out.scheduled = scheduled_.data();
  out.scheduled_capacity = static_cast<int32_t>(capacity);
  out.preempted = preempted_.data();
  out.preempted_capacity = static_cast<int32_t>(capacity);
  out.rejected = rejected_.data();
  out.rejected_capacity = static_cast<int32_t>(capacity);
  out.rejected_reasons = reasons_.data();
  out.reason_size = kReasonSize;
  scheduler_->schedule(ctx, out);
  collect(out, lookup, plan);
}

void StepScheduler::collect(const loom_sched_output& out, const RequestLookup& lookup, StepPlan& plan) {
  const std::string who = "plugin scheduler '" + scheduler_->name() + "': ";
  if (scheduler_->proposes_preemptions()) {
    LOOM_CHECK(out.num_preempted == 0, who + "listed " + std::to_string(out.num_preempted) +
                                           " preempted requests; interface 1.1 preempts through ctx->preempt");
  } else {
    for (int32_t i = 0; i < out.num_preempted; ++i) {
      const uint64_t id = out.preempted[i];
      RequestState* req = lookup(id);
      if (req == nullptr || !preempted_ids_.insert(id).second) continue;
      swaps_->preempted_by_plugin(*req);
      plan.preempted.push_back(Preemption{id, LOOM_PREEMPT_RECOMPUTE, 0});
    }
  }
  for (int32_t i = 0; i < out.num_rejected; ++i) {
    const uint64_t id = out.rejected[i];
    std::string reason;
    if (scheduler_->proposes_preemptions()) {
      reason.assign(out.rejected_reasons + static_cast<size_t>(i) * kReasonSize);
    } else if (const RequestState* req = lookup(id)) {
      std::string message;  // a 1.0 scheduler gives no reason: the cache's fits has it
      if (!cache_->fits(req->max_total_tokens, message)) reason = message;
    }
    plan.rejected.emplace_back(id, reason.empty() ? "the request can never fit in the KV cache" : "max_tokens: " + reason);
  }
  plan.seqs.reserve(static_cast<size_t>(out.num_scheduled));
  for (int32_t i = 0; i < out.num_scheduled; ++i) {
    const loom_scheduled_request& s = out.scheduled[i];
    LOOM_CHECK(preempted_ids_.count(s.request_id) == 0,
               who + "scheduled request " + std::to_string(s.request_id) + ", which it preempted in the same step");
    RequestState* req = lookup(s.request_id);
    LOOM_CHECK(req != nullptr, who + "scheduled unknown request " + std::to_string(s.request_id));
    // Counts past the request's tokens (the scheduler's, or a cache's prefix hit it passed on)
    // would have the batch read past its token ids: that request fails, the others run.
    const int32_t gap = req->num_tokens() - req->num_computed_tokens;
    if (s.num_cached_tokens < 0 || s.num_new_tokens < 0 ||
        static_cast<int64_t>(s.num_cached_tokens) + s.num_new_tokens > gap) {
      plan.rejected.emplace_back(s.request_id, who + "scheduled request " + std::to_string(s.request_id) + " with " +
                                                   std::to_string(s.num_cached_tokens) + " cached tokens and " +
                                                   std::to_string(s.num_new_tokens) + " new ones, but only " +
                                                   std::to_string(gap) + " of its tokens are left to compute");
      continue;
    }
    plan.seqs.push_back(PlannedSeq{req, s.num_cached_tokens, s.num_new_tokens});
    plan.num_scheduled_tokens += s.num_new_tokens;
  }
}

}  // namespace loom
