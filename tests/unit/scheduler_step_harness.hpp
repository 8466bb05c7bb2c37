// Step-by-step scheduler tests on a fake token-granular cache (block size 1, grows on demand):
// a fixture that creates the named scheduler plugin, feeds it requests and runs schedule() with
// exact expectations on who runs, how many tokens each, who is preempted or rejected.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/scheduler.h"

namespace loom::test {


// A cache of `capacity` token slots; a sequence holds exactly the tokens asked for.
struct FakeCache {
  int32_t capacity = 0;
  std::map<uint64_t, int32_t> held;
  int32_t used() const {
    int32_t n = 0;
    for (const auto& [id, t] : held) n += t;
    return n;
  }

  static FakeCache& of(void* self) { return *static_cast<FakeCache*>(self); }
  static loom_status fits(void* self, int32_t max_total, int32_t* ok, loom_error_buf* err) {
    *ok = max_total <= of(self).capacity;
    if (!*ok) std::snprintf(err->data, err->capacity, "needs %d > %d", max_total, of(self).capacity);
    return LOOM_OK;
  }
  static loom_status can_allocate(void* self, const loom_request_view* r, int32_t n, int32_t* ok, loom_error_buf*) {
    *ok = of(self).used() + r->num_computed_tokens + n <= of(self).capacity;
    return LOOM_OK;
  }
  static loom_status allocate(void* self, const loom_request_view* r, int32_t n, int32_t* cached, loom_error_buf*) {
    FakeCache& c = of(self);
    if (c.held.count(r->request_id) || c.used() + n > c.capacity) return LOOM_ERR_OUT_OF_MEMORY;
    c.held[r->request_id] = r->num_computed_tokens + n;
    *cached = 0;
    return LOOM_OK;
  }
  static loom_status append(void* self, const loom_request_view* r, int32_t n, loom_error_buf*) {
    FakeCache& c = of(self);
    auto it = c.held.find(r->request_id);
    if (it == c.held.end()) return LOOM_ERR_NOT_FOUND;
    const int32_t grow = r->num_computed_tokens + n - it->second;
    if (grow > 0 && c.used() + grow > c.capacity) return LOOM_ERR_OUT_OF_MEMORY;
    if (grow > 0) it->second += grow;
    return LOOM_OK;
  }
  static loom_status free_fn(void* self, uint64_t id, loom_error_buf*) {
    of(self).held.erase(id);
    return LOOM_OK;
  }
};

const loom_cache_vtable kFakeVtable = {sizeof(loom_cache_vtable), nullptr, &FakeCache::fits, nullptr,
                                       &FakeCache::can_allocate, &FakeCache::allocate, &FakeCache::append,
                                       nullptr, &FakeCache::free_fn, nullptr, nullptr};

struct Req {
  int32_t prompt;
  int32_t max_total;
  int32_t priority = 0;
  int32_t generated = 0;
  int32_t computed = 0;
  // Interface 1.2 fields; arrival -1 = the id (ids are given in arrival order).
  int32_t ttft_ms = 0;
  int32_t tpot_ms = 0;
  uint64_t tenant = 0;
  int64_t arrival_us = -1;
  int32_t num_tokens() const { return prompt + generated; }
};

using Sched = std::vector<std::pair<uint64_t, int32_t>>;  // (id, num_new_tokens)
using Ids = std::vector<uint64_t>;

class SchedulerSteps : public ::testing::Test {
 protected:
  explicit SchedulerSteps(std::string plugin) : plugin_(std::move(plugin)) {}
  void make(const std::string& config, int32_t capacity) {
    cache_.capacity = capacity;
    sched_ = host_.create(PluginSpec{LOOM_KIND_SCHEDULER, plugin_, "", config}, nullptr);
  }
  void add(uint64_t id, int32_t prompt, int32_t max_total, int32_t priority = 0) {
    reqs_[id] = Req{prompt, max_total, priority};
    const loom_request_view v = view(id);
    sched_->call("add_request", &loom_scheduler_vtable::add_request, &v);
  }
  // A request with SLO targets and an explicit arrival time (scripted clock).
  void add_slo(uint64_t id, int32_t prompt, int32_t max_total, int32_t priority, int32_t ttft_ms, int32_t tpot_ms,
               int64_t arrival_us, uint64_t tenant = 0) {
    reqs_[id] = Req{prompt, max_total, priority, 0, 0, ttft_ms, tpot_ms, tenant, arrival_us};
    const loom_request_view v = view(id);
    sched_->call("add_request", &loom_scheduler_vtable::add_request, &v);
  }
  loom_request_view view(uint64_t id) {
    const Req& r = reqs_.at(id);
    loom_request_view v{};
    v.struct_size = sizeof(v);
    v.request_id = id;
    v.num_tokens = r.num_tokens();
    v.num_prompt_tokens = r.prompt;
    v.num_computed_tokens = r.computed;
    v.max_total_tokens = r.max_total;
    v.priority = r.priority;
    v.arrival_time_us = r.arrival_us >= 0 ? r.arrival_us : static_cast<int64_t>(id);  // ids in arrival order
    v.ttft_target_ms = r.ttft_ms;
    v.tpot_target_ms = r.tpot_ms;
    v.tenant_id = r.tenant;
    return v;
  }
  static loom_status get_request(void* ctx, uint64_t id, loom_request_view* out) {
    auto* self = static_cast<SchedulerSteps*>(ctx);
    if (!self->reqs_.count(id)) return LOOM_ERR_NOT_FOUND;
    *out = self->view(id);
    return LOOM_OK;
  }
  // What the host does for a proposed preemption: free the blocks now, restart from token 0.
  static loom_status preempt(void* ctx, uint64_t id, int32_t mode, loom_error_buf*) {
    auto* self = static_cast<SchedulerSteps*>(ctx);
    if (!self->reqs_.count(id)) return LOOM_ERR_INVALID_ARGUMENT;
    if (mode != LOOM_PREEMPT_RECOMPUTE && !(mode == LOOM_PREEMPT_SWAP && self->swap_available_))
      return LOOM_ERR_INVALID_ARGUMENT;
    self->cache_.held.erase(id);
    self->reqs_.at(id).computed = 0;
    self->preempted_.push_back(id);
    self->modes_.push_back(mode);
    return LOOM_OK;
  }
  // The scripted step-time model (interface 1.2); 0 without one.
  static int64_t predicted(void* ctx, int32_t prefill, int32_t decode, int64_t kv) {
    auto* self = static_cast<SchedulerSteps*>(ctx);
    return self->model_ ? self->model_(prefill, decode, kv) : 0;
  }
  // One step as the engine runs it: schedule (preempting as proposed); drop the rejected; advance
  // computed tokens, sample a token for every request whose tokens are all computed, and finish
  // (remove, free) those that reach max_total.
  Sched step() {
    loom_sched_context ctx{};
    ctx.struct_size = sizeof(ctx);
    ctx.cache = loom_cache_handle{&cache_, &kFakeVtable};
    ctx.host_ctx = this;
    ctx.get_request = &SchedulerSteps::get_request;
    ctx.preempt = &SchedulerSteps::preempt;
    ctx.now_us = now_us_;
    ctx.swap_available = swap_available_ ? 1 : 0;
    ctx.predicted_step_us = &SchedulerSteps::predicted;
    ctx.swap_us_per_token = swap_us_per_token_;
    std::vector<loom_scheduled_request> s(16);
    std::vector<uint64_t> pre(16), rej(16);
    constexpr int32_t kReasonSize = 64;
    std::vector<char> reasons(16 * kReasonSize, '\0');
    loom_sched_output out{};
    out.struct_size = sizeof(out);
    out.scheduled = s.data();
    out.scheduled_capacity = 16;
    out.preempted = pre.data();
    out.preempted_capacity = 16;
    out.rejected = rej.data();
    out.rejected_capacity = 16;
    out.rejected_reasons = reasons.data();
    out.reason_size = kReasonSize;
    preempted_.clear();
    modes_.clear();
    sched_->call("schedule", &loom_scheduler_vtable::schedule, &ctx, &out);
    EXPECT_EQ(out.num_preempted, 0) << "interface 1.1 preempts through ctx.preempt";
    rejected_.assign(rej.begin(), rej.begin() + out.num_rejected);
    reasons_.clear();
    for (int32_t i = 0; i < out.num_rejected; ++i) reasons_.emplace_back(reasons.data() + i * kReasonSize);
    for (uint64_t id : rejected_) {
      reqs_.erase(id);
      sched_->call("remove_request", &loom_scheduler_vtable::remove_request, id);
    }
    Sched result;
    for (int32_t i = 0; i < out.num_scheduled; ++i) {
      const loom_scheduled_request& sr = s[static_cast<size_t>(i)];
      EXPECT_EQ(sr.num_cached_tokens, 0);
      result.emplace_back(sr.request_id, sr.num_new_tokens);
      Req& r = reqs_.at(sr.request_id);
      r.computed += sr.num_new_tokens;
      EXPECT_LE(r.computed, cache_.held.at(sr.request_id)) << "no room for request " << sr.request_id;
      if (r.computed < r.num_tokens()) continue;
      ++r.generated;
      if (finish_at_max_total_ && r.num_tokens() >= r.max_total) {
        sched_->call("remove_request", &loom_scheduler_vtable::remove_request, sr.request_id);
        cache_.held.erase(sr.request_id);
        reqs_.erase(sr.request_id);
      }
    }
    return result;
  }
  loom_sched_stats stats() {
    loom_sched_stats st{};
    st.struct_size = sizeof(st);
    sched_->call("stats", &loom_scheduler_vtable::stats, &st);
    return st;
  }

  std::string plugin_;
  // false: requests keep running past max_total, to script a lone request outgrowing the pool.
  bool finish_at_max_total_ = true;
  ThreadPool pool_{1};
  PluginHost host_{pool_, {}};
  std::unique_ptr<LoadedPlugin> sched_;
  FakeCache cache_;
  std::map<uint64_t, Req> reqs_;
  Ids preempted_, rejected_;  // of the last step; preempted_ in the order proposed
  std::vector<int32_t> modes_;  // the mode of each of preempted_
  // Interface 1.2 context: a scripted clock, step-time model and swap cost.
  int64_t now_us_ = 0;
  std::function<int64_t(int32_t, int32_t, int64_t)> model_;
  bool swap_available_ = false;
  double swap_us_per_token_ = 0;
  std::vector<std::string> reasons_;  // one per rejected_
};

}  // namespace loom::test
