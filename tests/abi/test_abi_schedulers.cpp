// Scheduler plugins chosen by config alone: the in-tree build of the SDK example (`priority`)
// with exact step-by-step expectations, and two schedulers of one build side by side.
#include <gtest/gtest.h>

#include "priority_scenarios.hpp"

namespace loom {
namespace {

class PriorityInTree : public ::testing::Test {
 protected:
  ThreadPool pool_{1};
  PluginHost host_{pool_, {}};  // the executable's directory holds the in-tree plugins
};

TEST_F(PriorityInTree, PriorityOrderThenFcfs) { test::scenario_priority_order(host_, ""); }
TEST_F(PriorityInTree, TokenBudget) { test::scenario_budget(host_, ""); }
TEST_F(PriorityInTree, WaitsForBlocks) { test::scenario_waits_for_blocks(host_, ""); }
TEST_F(PriorityInTree, Preemption) { test::scenario_preemption(host_, ""); }
TEST_F(PriorityInTree, Rejection) { test::scenario_rejection(host_, ""); }
TEST_F(PriorityInTree, Config) { test::scenario_config(host_, ""); }

// Same binary, same requests; only the config's plugin name differs, and so do the decisions.
TEST(SchedulersByConfig, TwoSchedulersOfOneBuild) {
#ifndef LOOM_HAVE_FCFS
  GTEST_SKIP() << "plugins/scheduler/fcfs is not in this build";
#else
  ThreadPool pool(1);
  PluginHost host(pool, {});
  const loom_scheduler_create_args args{sizeof(args), 16};
  auto run = [&](const std::string& name) {
    PluginSpec spec{LOOM_KIND_SCHEDULER, name, "",
                    R"({"max_num_seqs": 1, "max_num_batched_tokens": 16})"};
    auto sched = host.create(spec, &args);
    EXPECT_EQ(sched->name(), name);
    test::FakeCache cache(16, 4);
    test::SchedulerHarness h(*sched, cache);
    h.add(1, 4, 4, /*priority=*/0, /*arrival=*/10);
    h.add(2, 4, 4, /*priority=*/3, /*arrival=*/20);
    return h.step().scheduled;
  };
  EXPECT_EQ(run("fcfs"), (test::Sched{{1, 4}}));      // first come
  EXPECT_EQ(run("priority"), (test::Sched{{2, 4}}));  // most urgent
#endif
}

// Every plugin built in tree (in the executable's directory) passes the host's descriptor checks.
TEST(InTreePlugins, EveryOnePassesTheDescriptorChecks) {
  ThreadPool pool(1);
  PluginHost host(pool, {});
  int found = 0;
  for (const auto& kind : all_kinds()) {
    for (const auto& info : host.list(kind.kind)) {
      ++found;
      EXPECT_EQ(info.problem, "") << info.file;
      EXPECT_FALSE(info.version.empty()) << info.file;
      EXPECT_FALSE(info.description.empty()) << info.file;
    }
  }
  EXPECT_GE(found, 1);  // at least the priority example
}

}  // namespace
}  // namespace loom
