// For scheduler plugins: one schedule() call as a small C++ object over its context and output.
// It reads request state, reaches the cache (loom_sdk CacheClient), proposes preemptions to the
// host and fills the output arrays, throwing loom::sdk::Error on a full array or a failed call.
// It is the 1.1 way to preempt: the host frees and swaps, the scheduler only names the victim
// (see the contract at the top of loom/scheduler.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "loom/scheduler.h"
#include "loom/sdk_cache_client.hpp"
#include "loom/sdk_core.hpp"

namespace loom::sdk {

#if LOOM_SCHEDULER_IFACE_MINOR >= 2
// A request's interface-1.2 fields, read only when the host filled them (its view is long enough).
struct RequestSlo {
  int32_t ttft_target_ms = 0;  // 0 = none
  int32_t tpot_target_ms = 0;
  uint64_t tenant_id = 0;
};
inline RequestSlo request_slo(const loom_request_view& v) {
  if (v.struct_size < offsetof(loom_request_view, tenant_id) + sizeof(v.tenant_id)) return {};
  return RequestSlo{v.ttft_target_ms, v.tpot_target_ms, v.tenant_id};
}
#endif

class SchedStep {
 public:
  // Checks the arguments and empties the output's lists. `plugin` prefixes error messages.
  SchedStep(const loom_sched_context* ctx, loom_sched_output* out, std::string plugin)
      : ctx_(check_ctx(ctx, out)), out_(*out), cache_(ctx->cache), plugin_(std::move(plugin)) {
    out_.num_scheduled = 0;
    out_.num_preempted = 0;
    out_.num_rejected = 0;
    if (ctx_.struct_size < offsetof(loom_sched_context, preempt) + sizeof(ctx_.preempt) || ctx_.preempt == nullptr)
      throw Error(LOOM_ERR_UNSUPPORTED, plugin_ + ": the host gives no preempt callback (interface 1.1 needed)");
  }

  const loom_sched_context& ctx() const { return ctx_; }
  CacheClient& cache() { return cache_; }
  int32_t num_scheduled() const { return out_.num_scheduled; }

  // The request's current token counts, as the host sees them now.
  loom_request_view request(uint64_t id) const {
    loom_request_view v{};
    v.struct_size = sizeof(v);
    if (ctx_.get_request == nullptr || ctx_.get_request(ctx_.host_ctx, id, &v) != LOOM_OK)
      throw Error(LOOM_ERR_NOT_FOUND, plugin_ + ": the host does not know request " + std::to_string(id));
    return v;
  }

  // Asks the host to preempt `id` now: swapped to the cache_offload tier when there is one, else
  // recomputed later. Its blocks are free when this returns.
  void preempt(uint64_t id) {
    const int32_t mode = ctx_.swap_available != 0 ? LOOM_PREEMPT_SWAP : LOOM_PREEMPT_RECOMPUTE;
    err_.clear();
    check(ctx_.preempt(ctx_.host_ctx, id, mode, err_.buf()), err_, "host preempt");
  }

#if LOOM_SCHEDULER_IFACE_MINOR >= 2
  // Interface 1.2: the host's step-time model. Predicted microseconds of a step computing
  // `prefill` prompt tokens and `decode` decode tokens over `kv` context tokens; 0 when the host
  // knows nothing yet.
  int64_t predicted_step_us(int32_t prefill, int32_t decode, int64_t kv) const {
    if (ctx_.struct_size < offsetof(loom_sched_context, predicted_step_us) + sizeof(ctx_.predicted_step_us) ||
        ctx_.predicted_step_us == nullptr)
      return 0;
    return ctx_.predicted_step_us(ctx_.host_ctx, prefill, decode, kv);
  }
  // Measured microseconds per token of preempting by swap (save and restore); 0 = not measured.
  double swap_us_per_token() const {
    if (ctx_.struct_size < offsetof(loom_sched_context, swap_us_per_token) + sizeof(ctx_.swap_us_per_token)) return 0;
    return ctx_.swap_us_per_token;
  }
  // Preempts `id` in the mode the scheduler chose (SWAP only when ctx().swap_available).
  void preempt(uint64_t id, loom_preempt_mode mode) {
    err_.clear();
    check(ctx_.preempt(ctx_.host_ctx, id, mode, err_.buf()), err_, "host preempt");
  }
#endif

  void schedule(uint64_t id, int32_t num_new_tokens, int32_t num_cached_tokens) {
    if (out_.num_scheduled >= out_.scheduled_capacity)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, plugin_ + ": the scheduled array is full");
    out_.scheduled[out_.num_scheduled++] = loom_scheduled_request{id, num_new_tokens, num_cached_tokens};
  }

  void reject(uint64_t id, std::string_view reason) {
    if (out_.num_rejected >= out_.rejected_capacity)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, plugin_ + ": the rejected array is full");
    const int32_t row = out_.num_rejected++;
    out_.rejected[row] = id;
    if (out_.struct_size < offsetof(loom_sched_output, reason_size) + sizeof(out_.reason_size) ||
        out_.rejected_reasons == nullptr || out_.reason_size <= 0)
      return;
    char* dst = out_.rejected_reasons + static_cast<ptrdiff_t>(row) * out_.reason_size;
    const size_t n = std::min(reason.size(), static_cast<size_t>(out_.reason_size - 1));
    std::memcpy(dst, reason.data(), n);
    dst[n] = '\0';
  }

  // Rejects `id` when the cache says it could never fit the whole pool; true when rejected.
  bool reject_if_never_fits(const loom_request_view& req) {
    std::string reason;
    if (cache_.fits(req.max_total_tokens, &reason)) return false;
    reject(req.request_id, reason);
    return true;
  }

 private:
  static const loom_sched_context& check_ctx(const loom_sched_context* ctx, const loom_sched_output* out) {
    if (ctx == nullptr || out == nullptr || ctx->cache.vtable == nullptr)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "schedule: context, cache or output is null");
    return *ctx;
  }

  const loom_sched_context& ctx_;
  loom_sched_output& out_;
  CacheClient cache_;
  std::string plugin_;
  ErrorBuffer err_;
};

}  // namespace loom::sdk
