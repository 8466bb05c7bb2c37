// scheduler/continuous decisions, step by step, on a fake token-granular cache (block size 1,
// grows on demand) with exact expectations: who runs, how many tokens each, who is preempted.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/scheduler.h"

namespace loom {
namespace {

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
  int32_t num_tokens() const { return prompt + generated; }
};

using Sched = std::vector<std::pair<uint64_t, int32_t>>;  // (id, num_new_tokens)
using Ids = std::vector<uint64_t>;

class Continuous : public ::testing::Test {
 protected:
  void make(const std::string& config, int32_t capacity) {
    cache_.capacity = capacity;
    sched_ = host_.create(PluginSpec{LOOM_KIND_SCHEDULER, "continuous", "", config}, nullptr);
  }
  void add(uint64_t id, int32_t prompt, int32_t max_total, int32_t priority = 0) {
    reqs_[id] = Req{prompt, max_total, priority};
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
    v.arrival_time_us = static_cast<int64_t>(id);  // ids are given in arrival order
    return v;
  }
  static loom_status get_request(void* ctx, uint64_t id, loom_request_view* out) {
    auto* self = static_cast<Continuous*>(ctx);
    if (!self->reqs_.count(id)) return LOOM_ERR_NOT_FOUND;
    *out = self->view(id);
    return LOOM_OK;
  }
  // One step as the engine runs it: schedule; reset the preempted, drop the rejected; advance
  // computed tokens, sample a token for every request whose tokens are all computed, and finish
  // (remove, free) those that reach max_total.
  Sched step() {
    loom_sched_context ctx{};
    ctx.struct_size = sizeof(ctx);
    ctx.cache = loom_cache_handle{&cache_, &kFakeVtable};
    ctx.host_ctx = this;
    ctx.get_request = &Continuous::get_request;
    std::vector<loom_scheduled_request> s(16);
    std::vector<uint64_t> pre(16), rej(16);
    loom_sched_output out{};
    out.struct_size = sizeof(out);
    out.scheduled = s.data();
    out.scheduled_capacity = 16;
    out.preempted = pre.data();
    out.preempted_capacity = 16;
    out.rejected = rej.data();
    out.rejected_capacity = 16;
    sched_->call("schedule", &loom_scheduler_vtable::schedule, &ctx, &out);
    preempted_.assign(pre.begin(), pre.begin() + out.num_preempted);
    rejected_.assign(rej.begin(), rej.begin() + out.num_rejected);
    for (uint64_t id : preempted_) reqs_.at(id).computed = 0;
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
      if (r.num_tokens() >= r.max_total) {
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

  ThreadPool pool_{1};
  PluginHost host_{pool_, {}};
  std::unique_ptr<LoadedPlugin> sched_;
  FakeCache cache_;
  std::map<uint64_t, Req> reqs_;
  Ids preempted_, rejected_;
};

TEST_F(Continuous, DecodesFirstThenPrefillChunksThenAdmissions) {
  make(R"({"max_num_batched_tokens": 8, "long_prefill_token_threshold": 4})", 1000);
  add(1, 20, 100);  // a long prompt: at most 4 tokens a step
  add(2, 2, 100);
  EXPECT_EQ(step(), (Sched{{1, 4}, {2, 2}}));
  add(3, 10, 100);
  // Request 2 decodes first although it was admitted after 1; 3 gets what budget is left.
  EXPECT_EQ(step(), (Sched{{2, 1}, {1, 4}, {3, 3}}));
  EXPECT_EQ(step(), (Sched{{2, 1}, {1, 4}, {3, 3}}));
  EXPECT_EQ(step(), (Sched{{2, 1}, {1, 4}, {3, 3}}));  // 3: 9 of 10
  // 3's last prompt token is a gap of 1: it goes with the decodes.
  EXPECT_EQ(step(), (Sched{{2, 1}, {3, 1}, {1, 4}}));  // 1: 20 of 20, 3: 10 of 10
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}, {3, 1}}));  // all decode, in admission order
  EXPECT_EQ(stats().num_running, 3);
  EXPECT_EQ(stats().num_preemptions, 0);
}

TEST_F(Continuous, ChunksAtTheBudgetWithoutThreshold) {
  make(R"({"max_num_batched_tokens": 8})", 1000);
  add(1, 5, 100);
  add(2, 10, 100);
  add(3, 3, 100);
  EXPECT_EQ(step(), (Sched{{1, 5}, {2, 3}}));
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 7}}));
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}, {3, 3}}));
  EXPECT_EQ(stats().num_waiting, 0);
}

TEST_F(Continuous, WithoutChunkedPrefillAPromptWaitsForBudgetForAllOfIt) {
  make(R"({"max_num_batched_tokens": 8, "enable_chunked_prefill": false})", 1000);
  add(1, 5, 7);
  add(2, 5, 7);
  add(3, 20, 30);  // longer than the whole budget: only a fresh step's budget can start it
  EXPECT_EQ(step(), (Sched{{1, 5}}));          // 2 would need 5 of the 3 left
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 5}}));  // 1 finishes
  EXPECT_EQ(step(), (Sched{{2, 1}}));          // 2 finishes; 3 still waits for an untouched budget
  EXPECT_EQ(step(), (Sched{{3, 8}}));
  EXPECT_EQ(step(), (Sched{{3, 8}}));
  EXPECT_EQ(step(), (Sched{{3, 4}}));
  EXPECT_EQ(step(), (Sched{{3, 1}}));
}

TEST_F(Continuous, MaxNumSeqs) {
  make(R"({"max_num_seqs": 2})", 1000);
  add(1, 4, 6);
  add(2, 4, 100);
  add(3, 4, 100);
  EXPECT_EQ(step(), (Sched{{1, 4}, {2, 4}}));
  EXPECT_EQ(stats().num_waiting, 1);
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}}));  // 1 finishes
  EXPECT_EQ(step(), (Sched{{2, 1}, {3, 4}}));
}

TEST_F(Continuous, PreemptsTheNewestAndReadmitsItFirst) {
  make("{}", 15);
  add(1, 5, 8);
  add(2, 5, 15);
  add(3, 5, 15);
  EXPECT_EQ(step(), (Sched{{1, 5}, {2, 5}, {3, 5}}));  // pool full
  // 1 needs a slot: 3 (newest) is preempted, 1 and 2 continue, nobody is admitted.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}}));
  EXPECT_EQ(preempted_, (Ids{3}));
  EXPECT_EQ(cache_.held.count(3), 0u);
  add(4, 1, 15);  // arrives later: must not overtake the preempted 3
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}}));  // 1 finishes; 3 (6 tokens) does not fit yet
  EXPECT_TRUE(preempted_.empty());
  EXPECT_EQ(step(), (Sched{{2, 1}, {3, 6}, {4, 1}}));  // 3 recomputed from scratch, then 4
  EXPECT_EQ(stats().num_preemptions, 1);
  EXPECT_EQ(stats().num_running, 3);
}

TEST_F(Continuous, PreemptsItselfWhenItIsTheNewest) {
  make("{}", 8);
  add(1, 4, 8);
  add(2, 3, 8);
  EXPECT_EQ(step(), (Sched{{1, 4}, {2, 3}}));
  EXPECT_EQ(step(), (Sched{{1, 1}}));  // 8 of 8 after 1; 2 is the newest: it gives way itself
  EXPECT_EQ(preempted_, (Ids{2}));
  EXPECT_EQ(cache_.held.count(2), 0u);
  EXPECT_EQ(stats().num_running, 1);
  EXPECT_EQ(stats().num_waiting, 1);
}

TEST_F(Continuous, RejectsWhatCanNeverFitAndAdmitsTheNext) {
  make("{}", 20);
  add(1, 4, 21);
  add(2, 4, 20);
  EXPECT_EQ(step(), (Sched{{2, 4}}));
  EXPECT_EQ(rejected_, (Ids{1}));
  EXPECT_EQ(stats().num_waiting, 0);
}

TEST_F(Continuous, HigherPriorityFirstUntilTheWaitAges) {
  make(R"({"max_num_seqs": 1, "preemption_aging_steps": 3})", 1000);
  add(1, 2, 3, /*priority=*/0);
  add(2, 2, 3, /*priority=*/1);
  EXPECT_EQ(step(), (Sched{{2, 2}}));  // finishes at once (max_total 3)
  add(3, 2, 3, 1);
  EXPECT_EQ(step(), (Sched{{3, 2}}));
  add(4, 2, 3, 1);
  EXPECT_EQ(step(), (Sched{{1, 2}}));  // 1 has waited 3 steps: it goes ahead of priority 1
  EXPECT_EQ(step(), (Sched{{4, 2}}));
}

// A request preempted preemption_aging_steps times is passed over as a victim while another
// candidate exists: here the newest running request is protected, so the one that ran out of
// room gives way itself.
TEST_F(Continuous, RepeatedlyPreemptedRequestsAreNotVictims) {
  make(R"({"preemption_aging_steps": 1})", 16);
  add(1, 6, 8);
  add(2, 4, 16);
  add(4, 4, 16);  // ids are arrival times: 4 arrived after 3, which is added to the queue later
  EXPECT_EQ(step(), (Sched{{1, 6}, {2, 4}, {4, 4}}));
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}}));  // 4 is the newest: preempts itself; 1 finishes
  EXPECT_EQ(preempted_, (Ids{4}));
  add(3, 1, 16);
  EXPECT_EQ(step(), (Sched{{2, 1}, {3, 1}, {4, 5}}));  // both aged: earlier arrival first
  EXPECT_EQ(step(), (Sched{{2, 1}, {3, 1}, {4, 1}}));  // 15 of 16 slots
  // 3 runs out of room; the newest, 4, was preempted once already, so 3 gives way.
  EXPECT_EQ(step(), (Sched{{2, 1}}));
  EXPECT_EQ(preempted_, (Ids{3}));
  EXPECT_EQ(stats().num_preemptions, 2);
}

TEST_F(Continuous, ConfigErrors) {
  try {
    make(R"({"max_num_seqs": 0, "long_prefill_token_threshold": -1, "enable_chunked_prefill": 1,
             "preemption_aging_steps": 0, "policy": "x"})",
         10);
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("max_num_seqs must be"), std::string::npos) << m;
    EXPECT_NE(m.find("long_prefill_token_threshold must be"), std::string::npos) << m;
    EXPECT_NE(m.find("enable_chunked_prefill must be true or false"), std::string::npos) << m;
    EXPECT_NE(m.find("preemption_aging_steps must be"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown key \"policy\""), std::string::npos) << m;
  }
  make("{}", 10);
  add(1, 2, 5);
  const loom_request_view v = view(1);
  EXPECT_EQ(sched_->try_call(nullptr, &loom_scheduler_vtable::add_request, &v), LOOM_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace loom
