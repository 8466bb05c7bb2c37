// The SDK example built OUT OF TREE (fixture abi_sdk_example_build: find_package(LoomSDK) +
// loom_add_plugin in sdk/examples), loaded by explicit path and run through the same scenarios
// as the in-tree build.
#include <gtest/gtest.h>

#include "priority_scenarios.hpp"

namespace loom {
namespace {

const std::string kPlugin = std::string(LOOM_SDK_EXAMPLE_DIR) + "/libloom-scheduler-priority.so";

class SdkExampleOutOfTree : public ::testing::Test {
 protected:
  ThreadPool pool_{1};
  PluginHost host_{pool_, {}};
};

TEST_F(SdkExampleOutOfTree, LoadsByPath) {
  auto sched = test::make_priority(host_, kPlugin, "{}");
  EXPECT_EQ(sched->file(), kPlugin);
  EXPECT_EQ(sched->name(), "priority");
  EXPECT_EQ(sched->version(), "0.1.0");
  EXPECT_EQ(sched->desc().abi_version, static_cast<uint32_t>(LOOM_ABI_VERSION));
}

TEST_F(SdkExampleOutOfTree, PriorityOrderThenFcfs) {
  test::scenario_priority_order(host_, kPlugin);
}
TEST_F(SdkExampleOutOfTree, TokenBudget) { test::scenario_budget(host_, kPlugin); }
TEST_F(SdkExampleOutOfTree, WaitsForBlocks) { test::scenario_waits_for_blocks(host_, kPlugin); }
TEST_F(SdkExampleOutOfTree, Preemption) { test::scenario_preemption(host_, kPlugin); }
TEST_F(SdkExampleOutOfTree, Rejection) { test::scenario_rejection(host_, kPlugin); }
TEST_F(SdkExampleOutOfTree, Config) { test::scenario_config(host_, kPlugin); }

}  // namespace
}  // namespace loom
