// scheduler/static decisions, step by step, on a fake token-granular cache (block size 1,
// grows on demand) with exact expectations: who runs, how many tokens each, who waits for the batch.
#include "scheduler_step_harness.hpp"

namespace loom::test {
namespace {

class Static : public SchedulerSteps {
 protected:
  Static() : SchedulerSteps("static") {}
};

TEST_F(Static, NoRequestJoinsUntilTheWholeBatchHasFinished) {
  make(R"({"max_num_seqs": 2})", 1000);
  add(1, 3, 5);
  add(2, 2, 6);
  add(3, 2, 4);
  EXPECT_EQ(step(), (Sched{{1, 3}, {2, 2}}));
  EXPECT_EQ(stats().num_waiting, 1);
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}}));  // 1 finishes
  EXPECT_EQ(step(), (Sched{{2, 1}}));          // a free slot, yet 3 waits for the batch
  EXPECT_EQ(stats().num_running, 1);
  EXPECT_EQ(stats().num_waiting, 1);
  EXPECT_EQ(step(), (Sched{{2, 1}}));          // 2 finishes: the batch is done
  EXPECT_EQ(step(), (Sched{{3, 2}}));
  EXPECT_EQ(step(), (Sched{{3, 1}}));
  EXPECT_EQ(stats().num_running, 0);
  EXPECT_EQ(stats().num_waiting, 0);
}

TEST_F(Static, PromptsAreChunkedToTheBudget) {
  make(R"({"max_num_batched_tokens": 4})", 1000);
  add(1, 6, 100);
  add(2, 3, 100);
  EXPECT_EQ(step(), (Sched{{1, 4}}));  // both are in the batch; 2 starts when there is budget
  EXPECT_EQ(stats().num_running, 1);
  EXPECT_EQ(stats().num_waiting, 1);
  EXPECT_EQ(step(), (Sched{{1, 2}, {2, 2}}));
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}}));
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}}));
}

TEST_F(Static, RejectsWhatCanNeverFit) {
  make("{}", 20);
  add(1, 4, 21);
  add(2, 4, 20);
  EXPECT_EQ(step(), (Sched{{2, 4}}));
  EXPECT_EQ(rejected_, (Ids{1}));
  EXPECT_EQ(reasons_, (std::vector<std::string>{"needs 21 > 20"})) << "the cache's fits reason, in the output";
}

TEST_F(Static, PreemptedMembersStayInTheBatch) {
  make("{}", 12);
  add(1, 6, 8);
  add(2, 6, 9);
  EXPECT_EQ(step(), (Sched{{1, 6}, {2, 6}}));  // pool full
  EXPECT_EQ(step(), (Sched{{1, 1}}));          // 2 (newest) gives way; 1 finishes
  EXPECT_EQ(preempted_, (Ids{2}));
  EXPECT_EQ(cache_.held.count(2), 0u);
  add(3, 2, 4);
  EXPECT_EQ(step(), (Sched{{2, 7}}));  // 2 is recomputed; 3 waits for the batch
  EXPECT_EQ(step(), (Sched{{2, 1}}));  // 2 finishes
  EXPECT_EQ(step(), (Sched{{3, 2}}));
  EXPECT_EQ(stats().num_preemptions, 1);
}

TEST_F(Static, ConfigErrors) {
  try {
    make(R"({"max_num_seqs": -1, "long_prefill_token_threshold": 4})", 10);
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("\"max_num_seqs\" must be"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown key \"long_prefill_token_threshold\""), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace loom::test
