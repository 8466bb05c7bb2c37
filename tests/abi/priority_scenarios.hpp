// The example `priority` scheduler's behaviour, step by step with exact expectations. Shared by
// the in-tree test and the test of the copy built out of tree from sdk/examples.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "scheduler_harness.hpp"

namespace loom::test {

using Sched = std::vector<std::pair<uint64_t, int32_t>>;
using Ids = std::vector<uint64_t>;

// Creates the priority scheduler from `path` (empty: by name through the search dirs).
inline std::unique_ptr<LoadedPlugin> make_priority(PluginHost& host, const std::string& path,
                                                   const std::string& config,
                                                   int32_t max_model_len = 16) {
  PluginSpec spec;
  spec.kind = LOOM_KIND_SCHEDULER;
  spec.name = "priority";
  spec.path = path;
  spec.config_json = config;
  loom_scheduler_create_args args{sizeof(args), max_model_len};
  return host.create(spec, &args);
}

// Highest priority first, FCFS within a priority, at most max_num_seqs running.
inline void scenario_priority_order(PluginHost& host, const std::string& path) {
  auto sched = make_priority(host, path, R"({"max_num_seqs": 2, "max_num_batched_tokens": 16})");
  FakeCache cache(/*num_blocks=*/16, /*block_size=*/4);
  SchedulerHarness h(*sched, cache);
  h.add(1, 4, 8, /*priority=*/0, /*arrival=*/10);
  h.add(2, 4, 8, 2, 20);
  h.add(3, 4, 8, 2, 30);
  h.add(4, 4, 8, 1, 40);
  auto s = h.step();
  EXPECT_EQ(s.scheduled, (Sched{{2, 4}, {3, 4}}));
  EXPECT_TRUE(s.preempted.empty());
  s = h.step();  // both decode one token; max_num_seqs keeps 1 and 4 waiting
  EXPECT_EQ(s.scheduled, (Sched{{2, 1}, {3, 1}}));
  h.finish(2);
  s = h.step();  // a seat frees: the priority-1 request goes before the earlier priority-0 one
  EXPECT_EQ(s.scheduled, (Sched{{3, 1}, {4, 4}}));
  const auto st = h.stats();
  EXPECT_EQ(st.num_running, 2);
  EXPECT_EQ(st.num_waiting, 1);
  EXPECT_EQ(st.num_preemptions, 0);
}

// The token budget bounds each step; admission stops at the first request that does not fit.
inline void scenario_budget(PluginHost& host, const std::string& path) {
  auto sched = make_priority(host, path, R"({"max_num_seqs": 8, "max_num_batched_tokens": 16})");
  FakeCache cache(64, 4);
  SchedulerHarness h(*sched, cache);
  h.add(1, 10, 4, 0, 1);
  h.add(2, 8, 4, 0, 2);
  h.add(3, 2, 4, 0, 3);  // would fit after 1, but does not overtake 2
  EXPECT_EQ(h.step().scheduled, (Sched{{1, 10}}));
  EXPECT_EQ(h.step().scheduled, (Sched{{1, 1}, {2, 8}, {3, 2}}));
  EXPECT_EQ(h.step().scheduled, (Sched{{1, 1}, {2, 1}, {3, 1}}));
}

// A prefill waits while the cache cannot give it room now.
inline void scenario_waits_for_blocks(PluginHost& host, const std::string& path) {
  auto sched = make_priority(host, path, R"({"max_num_batched_tokens": 16})");
  FakeCache cache(4, 4);
  SchedulerHarness h(*sched, cache);
  h.add(1, 12, 4, 0, 1);
  h.add(2, 8, 4, 0, 2);
  EXPECT_EQ(h.step().scheduled, (Sched{{1, 12}}));
  EXPECT_EQ(cache.free_blocks(), 1);
  EXPECT_EQ(h.step().scheduled, (Sched{{1, 1}}));  // 13 tokens: a 4th block, none left for 2
  EXPECT_EQ(cache.free_blocks(), 0);
  h.finish(1);
  EXPECT_EQ(h.step().scheduled, (Sched{{2, 8}}));
}

// When append finds no block, the lowest-priority running request is freed and preempted --
// another one, or the appending request itself when it is the lowest.
inline void scenario_preemption(PluginHost& host, const std::string& path) {
  auto sched = make_priority(host, path, R"({"max_num_batched_tokens": 16})");
  FakeCache cache(4, 4);
  SchedulerHarness h(*sched, cache);
  h.add(1, 8, 4, /*priority=*/0, 1);
  h.add(2, 8, 4, /*priority=*/1, 2);
  auto s = h.step();
  EXPECT_EQ(s.scheduled, (Sched{{2, 8}, {1, 8}}));
  EXPECT_EQ(cache.free_blocks(), 0);
  s = h.step();  // 2 needs a 3rd block: 1 (priority 0) is preempted, and not re-admitted now
  EXPECT_EQ(s.scheduled, (Sched{{2, 1}}));
  EXPECT_EQ(s.preempted, (Ids{1}));
  EXPECT_EQ(h.view(1).num_computed_tokens, 0);
  EXPECT_EQ(cache.held(1), 0);
  EXPECT_EQ(cache.held(2), 3);
  s = h.step();  // 1 now needs 3 blocks (9 tokens to recompute); only 1 is free: it waits
  EXPECT_EQ(s.scheduled, (Sched{{2, 1}}));
  EXPECT_TRUE(s.preempted.empty());
  h.finish(2);
  s = h.step();
  EXPECT_EQ(s.scheduled, (Sched{{1, 9}}));
  EXPECT_EQ(h.stats().num_preemptions, 1);

  // Self-preemption: the high-priority request grows within its block, the low one cannot.
  auto sched2 = make_priority(host, path, R"({"max_num_batched_tokens": 16})");
  FakeCache cache2(3, 4);
  SchedulerHarness h2(*sched2, cache2);
  h2.add(10, 3, 4, /*priority=*/5, 1);  // 1 block; 4 tokens after prefill still fit in it
  h2.add(11, 8, 4, /*priority=*/0, 2);  // 2 blocks; its 9th token needs a 3rd
  EXPECT_EQ(h2.step().scheduled, (Sched{{10, 3}, {11, 8}}));
  s = h2.step();
  EXPECT_EQ(s.scheduled, (Sched{{10, 1}}));
  EXPECT_EQ(s.preempted, (Ids{11}));
  EXPECT_EQ(cache2.held(11), 0);
}

// Requests that can never fit the pool are rejected; the others go on.
inline void scenario_rejection(PluginHost& host, const std::string& path) {
  auto sched = make_priority(host, path, R"({"max_num_batched_tokens": 16})");
  FakeCache cache(4, 4);  // 16 tokens at most
  SchedulerHarness h(*sched, cache);
  h.add(1, 10, 10, /*priority=*/9, 1);  // 20 tokens: never fits
  h.add(2, 4, 4, 0, 2);
  const auto s = h.step();
  EXPECT_EQ(s.rejected, (Ids{1}));
  EXPECT_EQ(s.reasons, (std::vector<std::string>{"20 tokens need 5 blocks, the pool has 4"}));
  EXPECT_EQ(s.scheduled, (Sched{{2, 4}}));
  EXPECT_EQ(h.stats().num_waiting, 0);
}

// Config: unknown keys and bad values are all reported, in one refusal line.
inline void scenario_config(PluginHost& host, const std::string& path) {
  try {
    make_priority(host, path, R"({"max_num_seqs": 0, "colour": "blue"})");
    ADD_FAILURE() << "bad config accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("plugin scheduler 'priority' ("), std::string::npos) << m;
    EXPECT_NE(m.find("invalid config"), std::string::npos) << m;
    EXPECT_NE(m.find("\"max_num_seqs\" must be a positive integer, got 0"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown key \"colour\""), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  try {  // valid keys, but prefill is never chunked: the budget must hold the longest sequence
    make_priority(host, path, R"({"max_num_batched_tokens": 8})", /*max_model_len=*/32);
    ADD_FAILURE() << "budget below max_model_len accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("create failed (config error)"), std::string::npos) << m;
    EXPECT_NE(m.find("max_num_batched_tokens (8) must be >= max_model_len (32)"), std::string::npos)
        << m;
  }
}

}  // namespace loom::test
