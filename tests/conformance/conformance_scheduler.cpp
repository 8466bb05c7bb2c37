// Scheduler conformance: every scheduler plugin drives a simulated engine over the reference
// cache (`contiguous`) through a seeded random workload, and must keep the invariants of the
// scheduling contract at every step:
//   - a scheduled request is live, appears once, advances 1..gap tokens, and the cache holds
//     room for everything it will have computed;
//   - preemption is proposed through ctx.preempt (the simulated host frees the blocks at once);
//     a scheduler never calls the cache's free, and a preempted request is not scheduled in the
//     same step;
//   - a request too long for the whole pool is rejected with the cache's reason, never scheduled;
//   - every request finishes (no starvation, no deadlock) and the pool ends empty.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "core/common/thread_pool.hpp"
#include "loom/scheduler.h"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

struct Req {
  std::vector<int32_t> tokens;
  int32_t prompt = 0;
  int32_t computed = 0;
  int32_t max_total = 0;
  int64_t arrival = 0;
};

// A paged-style cache that holds only the blocks a sequence's tokens need, so appends can run out
// and force preemption (the contiguous reference reserves everything up front and never does).
struct GrowingCache {
  static constexpr int32_t kBlockSize = 8;
  int32_t num_blocks = 40;
  std::map<uint64_t, std::vector<int32_t>> tables;
  int32_t used() const {
    int32_t n = 0;
    for (const auto& [id, t] : tables) n += static_cast<int32_t>(t.size());
    return n;
  }
  static int32_t blocks_for(int64_t tokens) { return static_cast<int32_t>((tokens + kBlockSize - 1) / kBlockSize); }
  static GrowingCache& of(void* self) { return *static_cast<GrowingCache*>(self); }
  static loom_status fits(void* self, int32_t max_total, int32_t* ok, loom_error_buf* err) {
    *ok = blocks_for(max_total) <= of(self).num_blocks;
    if (!*ok && err && err->capacity) std::snprintf(err->data, err->capacity, "too long");
    return LOOM_OK;
  }
  static loom_status can_allocate(void* self, const loom_request_view* r, int32_t n, int32_t* ok, loom_error_buf*) {
    *ok = of(self).used() + blocks_for(int64_t{r->num_computed_tokens} + n) <= of(self).num_blocks;
    return LOOM_OK;
  }
  static loom_status allocate(void* self, const loom_request_view* r, int32_t n, int32_t* cached, loom_error_buf*) {
    GrowingCache& c = of(self);
    const int32_t need = blocks_for(int64_t{r->num_computed_tokens} + n);
    if (c.tables.count(r->request_id) || c.used() + need > c.num_blocks) return LOOM_ERR_OUT_OF_MEMORY;
    c.tables[r->request_id] = std::vector<int32_t>(static_cast<size_t>(need), 0);
    *cached = 0;
    return LOOM_OK;
  }
  static loom_status append(void* self, const loom_request_view* r, int32_t n, loom_error_buf*) {
    GrowingCache& c = of(self);
    auto it = c.tables.find(r->request_id);
    if (it == c.tables.end()) return LOOM_ERR_NOT_FOUND;
    const int32_t grow = blocks_for(int64_t{r->num_computed_tokens} + n) - static_cast<int32_t>(it->second.size());
    if (grow > 0 && c.used() + grow > c.num_blocks) return LOOM_ERR_OUT_OF_MEMORY;
    if (grow > 0) it->second.resize(it->second.size() + static_cast<size_t>(grow), 0);
    return LOOM_OK;
  }
  static loom_status free_fn(void* self, uint64_t id, loom_error_buf*) {
    of(self).tables.erase(id);
    return LOOM_OK;
  }
  static loom_status block_table(void* self, uint64_t id, loom_block_list* out, loom_error_buf*) {
    auto it = of(self).tables.find(id);
    if (it == of(self).tables.end()) return LOOM_ERR_NOT_FOUND;
    *out = loom_block_list{it->second.data(), static_cast<int32_t>(it->second.size())};
    return LOOM_OK;
  }
  static loom_status usage(void* self, loom_cache_usage* u, loom_error_buf*) {
    u->total_blocks = of(self).num_blocks;
    u->used_blocks = of(self).used();
    u->free_blocks = u->total_blocks - u->used_blocks;
    u->cached_blocks = 0;
    u->num_seqs = static_cast<int32_t>(of(self).tables.size());
    return LOOM_OK;
  }
};

const loom_cache_vtable kGrowingVtable = {sizeof(loom_cache_vtable), nullptr, &GrowingCache::fits, nullptr,
                                          &GrowingCache::can_allocate, &GrowingCache::allocate,
                                          &GrowingCache::append, nullptr, &GrowingCache::free_fn,
                                          &GrowingCache::block_table, &GrowingCache::usage};

// Calls a cache either way (plugin or the fake) with a throwaway error buffer.
struct CacheRef {
  void* self;
  const loom_cache_vtable* vt;
  template <class Fn, class... Args>
  loom_status call(Fn loom_cache_vtable::*member, Args... args) const {
    ErrorBuffer err;
    loom_error_buf eb = err.buf();
    return (vt->*member)(self, args..., &eb);
  }
};

class SchedulerConformance : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  static loom_status get_request(void* ctx, uint64_t id, loom_request_view* out) {
    auto* self = static_cast<SchedulerConformance*>(ctx);
    auto it = self->reqs_.find(id);
    if (it == self->reqs_.end()) return LOOM_ERR_NOT_FOUND;
    *out = self->view(id, it->second);
    return LOOM_OK;
  }
  loom_request_view view(uint64_t id, const Req& r) const {
    loom_request_view v{};
    v.struct_size = sizeof(v);
    v.request_id = id;
    v.token_ids = r.tokens.data();
    v.num_tokens = static_cast<int32_t>(r.tokens.size());
    v.num_prompt_tokens = r.prompt;
    v.num_computed_tokens = r.computed;
    v.max_total_tokens = r.max_total;
    v.arrival_time_us = r.arrival;
    return v;
  }

  // The host's side of a proposed preemption: free now (the real cache), restart from token 0.
  static loom_status preempt(void* ctx, uint64_t id, int32_t mode, loom_error_buf*) {
    auto* self = static_cast<SchedulerConformance*>(ctx);
    EXPECT_EQ(mode, LOOM_PREEMPT_RECOMPUTE) << "no tier: swap_available is 0";
    auto it = self->reqs_.find(id);
    if (it == self->reqs_.end() || !self->preempted_now_.insert(id).second) return LOOM_ERR_INVALID_ARGUMENT;
    self->cache_->call(&loom_cache_vtable::free, id);
    it->second.computed = 0;
    return LOOM_OK;
  }
  static loom_status scheduler_free(void*, uint64_t id, loom_error_buf*) {
    ADD_FAILURE() << "the scheduler freed request " << id << "'s blocks itself";
    return LOOM_ERR_UNSUPPORTED;
  }

  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
  std::map<uint64_t, Req> reqs_;
  const CacheRef* cache_ = nullptr;
  std::set<uint64_t> preempted_now_;
};

TEST_P(SchedulerConformance, RandomWorkloadKeepsTheContract) {
  loom_scheduler_create_args sa{};
  sa.struct_size = sizeof(sa);
  sa.max_model_len = 256;
  std::string skip;
  const auto& [name, growing] = GetParam();
  const auto sched = conformance::create_or_skip(host_, LOOM_KIND_SCHEDULER, name, &sa, &skip);
  if (!sched) GTEST_SKIP() << skip;
  loom_cache_create_args ca{};
  ca.struct_size = sizeof(ca);
  ca.n_layers = 1;
  ca.n_kv_heads = 1;
  ca.head_dim = 4;
  ca.kv_dtype = LOOM_DTYPE_F32;
  ca.bytes_per_token = 32;
  ca.max_model_len = 256;
  const auto contiguous =
      host_.create(PluginSpec{LOOM_KIND_CACHE, "contiguous", "", R"({"num_blocks": 40, "block_size": 8})"}, &ca);
  GrowingCache fake;
  const CacheRef cache = growing ? CacheRef{&fake, &kGrowingVtable}
                                 : CacheRef{contiguous->self(), &contiguous->vtable<loom_cache_vtable>()};
  cache_ = &cache;
  // What the scheduler sees: the same cache, but free is not its to call.
  loom_cache_vtable scheduler_vt = *cache.vt;
  scheduler_vt.free = &SchedulerConformance::scheduler_free;
  int64_t preemptions = 0;
  const int32_t pool_tokens = 40 * 8;

  std::mt19937_64 rng(2024);
  std::set<uint64_t> rejected_expected, rejected_seen, finished;
  uint64_t next_id = 1;
  const int kRequests = 60;
  int64_t step = 0;
  std::vector<loom_scheduled_request> sched_buf(128);
  std::vector<uint64_t> pre_buf(128), rej_buf(128);
  constexpr int32_t kReasonSize = 128;
  std::vector<char> reasons(128 * kReasonSize, '\0');

  while (finished.size() + rejected_seen.size() < static_cast<size_t>(kRequests)) {
    ASSERT_LT(step, 5000) << "requests never finish";
    // Arrivals: a few per step at first.
    for (int k = 0; k < 2 && next_id <= static_cast<uint64_t>(kRequests); ++k) {
      Req r;
      r.prompt = 1 + static_cast<int32_t>(rng() % 60);
      r.max_total = r.prompt + 1 + static_cast<int32_t>(rng() % 40);
      if (next_id % 17 == 0) {
        r.max_total = pool_tokens + 1;  // can never fit
        rejected_expected.insert(next_id);
      }
      for (int32_t i = 0; i < r.prompt; ++i) r.tokens.push_back(static_cast<int32_t>(next_id * 100 + i));
      r.arrival = step;
      reqs_[next_id] = r;
      const loom_request_view v = view(next_id, reqs_[next_id]);
      sched->call("add_request", &loom_scheduler_vtable::add_request, &v);
      ++next_id;
    }

    loom_sched_context ctx{};
    ctx.struct_size = sizeof(ctx);
    ctx.cache = loom_cache_handle{cache.self, &scheduler_vt};
    ctx.host_ctx = this;
    ctx.get_request = &SchedulerConformance::get_request;
    ctx.now_us = step;
    ctx.swap_available = 0;
    ctx.preempt = &SchedulerConformance::preempt;
    loom_sched_output out{};
    out.struct_size = sizeof(out);
    out.scheduled = sched_buf.data();
    out.scheduled_capacity = 128;
    out.preempted = pre_buf.data();
    out.preempted_capacity = 128;
    out.rejected = rej_buf.data();
    out.rejected_capacity = 128;
    out.rejected_reasons = reasons.data();
    out.reason_size = kReasonSize;
    preempted_now_.clear();
    sched->call("schedule", &loom_scheduler_vtable::schedule, &ctx, &out);
    EXPECT_EQ(out.num_preempted, 0) << "interface 1.1 preempts through ctx.preempt";

    const std::set<uint64_t> preempted = preempted_now_;
    for (uint64_t id : preempted) {
      loom_block_list l{};
      EXPECT_NE(cache.call(&loom_cache_vtable::block_table, id, &l), LOOM_OK)
          << "preempted request " << id << " still holds blocks";
      ++preemptions;
    }
    for (int32_t i = 0; i < out.num_rejected; ++i) {
      const uint64_t id = rej_buf[static_cast<size_t>(i)];
      EXPECT_TRUE(rejected_expected.count(id)) << "request " << id << " fits the pool but was rejected";
      EXPECT_NE(std::string(reasons.data() + static_cast<size_t>(i) * kReasonSize), "")
          << "request " << id << " rejected without a reason";
      if (growing) {
        EXPECT_EQ(std::string(reasons.data() + static_cast<size_t>(i) * kReasonSize), "too long");
      }
      rejected_seen.insert(id);
      reqs_.erase(id);
      sched->call("remove_request", &loom_scheduler_vtable::remove_request, id);
    }
    std::set<uint64_t> this_step;
    for (int32_t i = 0; i < out.num_scheduled; ++i) {
      const loom_scheduled_request& s = sched_buf[static_cast<size_t>(i)];
      ASSERT_TRUE(reqs_.count(s.request_id)) << "scheduled unknown request " << s.request_id;
      EXPECT_TRUE(this_step.insert(s.request_id).second) << "request " << s.request_id << " scheduled twice";
      EXPECT_FALSE(preempted.count(s.request_id)) << "request " << s.request_id << " preempted and scheduled";
      EXPECT_FALSE(rejected_expected.count(s.request_id)) << "request " << s.request_id << " can never fit";
      Req& r = reqs_.at(s.request_id);
      r.computed += s.num_cached_tokens;
      const int32_t gap = static_cast<int32_t>(r.tokens.size()) - r.computed;
      EXPECT_GE(s.num_new_tokens, 1);
      EXPECT_LE(s.num_new_tokens, gap);
      loom_block_list l{};
      ASSERT_EQ(cache.call(&loom_cache_vtable::block_table, s.request_id, &l), LOOM_OK);
      EXPECT_GE(static_cast<int64_t>(l.count) * 8, r.computed + s.num_new_tokens)
          << "no room for request " << s.request_id;
      // The engine's update: advance; sample when the whole sequence is computed.
      r.computed += s.num_new_tokens;
      if (r.computed == static_cast<int32_t>(r.tokens.size())) {
        r.tokens.push_back(static_cast<int32_t>(rng() % 500));
        if (static_cast<int32_t>(r.tokens.size()) >= r.max_total) {
          finished.insert(s.request_id);
          sched->call("remove_request", &loom_scheduler_vtable::remove_request, s.request_id);
          cache.call(&loom_cache_vtable::free, s.request_id);
          reqs_.erase(s.request_id);
        }
      }
    }
    ++step;
  }
  EXPECT_EQ(rejected_seen, rejected_expected);
  loom_cache_usage u{};
  u.struct_size = sizeof(u);
  ASSERT_EQ(cache.call(&loom_cache_vtable::usage, &u), LOOM_OK);
  EXPECT_EQ(u.used_blocks, 0);
  EXPECT_EQ(u.num_seqs, 0);
  loom_sched_stats st{};
  st.struct_size = sizeof(st);
  sched->call("stats", &loom_scheduler_vtable::stats, &st);
  EXPECT_EQ(st.num_running, 0);
  EXPECT_EQ(st.num_waiting, 0);
  EXPECT_EQ(st.num_preemptions, preemptions);
  if (growing) {
    EXPECT_GT(preemptions, 0) << "the workload was meant to force preemption";
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, SchedulerConformance,
                         ::testing::Combine(::testing::ValuesIn(conformance::plugin_names()), ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) ? "_growing_cache" : "_contiguous");
                         });

}  // namespace
}  // namespace loom
