// scheduler/fcfs decisions, step by step, on a fake token-granular cache (block size 1, grows
// on demand) with exact expectations. The fixture is the shared scheduler step harness.
#include <gtest/gtest.h>

#include "scheduler_step_harness.hpp"

namespace loom::test {
namespace {

class Fcfs : public SchedulerSteps {
 protected:
  Fcfs() : SchedulerSteps("fcfs") {}
};

TEST_F(Fcfs, TokenBudgetChunksPrompts) {
  make(R"({"max_num_seqs": 4, "max_num_batched_tokens": 8})", 1000);
  add(1, 5, 100);
  add(2, 10, 100);
  add(3, 3, 100);
  EXPECT_EQ(step(), (Sched{{1, 5}, {2, 3}}));          // B's prompt is chunked at the budget
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 7}}));          // running first: A decodes, B finishes its prompt
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}, {3, 3}}));  // then C is admitted
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}, {3, 1}}));
  EXPECT_TRUE(preempted_.empty());
  EXPECT_EQ(stats().num_running, 3);
  EXPECT_EQ(stats().num_waiting, 0);
}

TEST_F(Fcfs, MaxNumSeqs) {
  make(R"({"max_num_seqs": 2})", 1000);
  add(1, 4, 100);
  add(2, 4, 100);
  add(3, 4, 100);
  EXPECT_EQ(step(), (Sched{{1, 4}, {2, 4}}));
  EXPECT_EQ(stats().num_waiting, 1);
  sched_->call("remove_request", &loom_scheduler_vtable::remove_request, uint64_t{1});
  cache_.held.erase(1);
  EXPECT_EQ(step(), (Sched{{2, 1}, {3, 4}}));
}

TEST_F(Fcfs, StrictArrivalOrder) {
  make("{}", 20);
  add(1, 10, 20);
  add(2, 15, 20);  // fits the pool, but not now
  add(3, 2, 20);   // would fit now, yet must not overtake request 2
  EXPECT_EQ(step(), (Sched{{1, 10}}));
  EXPECT_EQ(step(), (Sched{{1, 1}}));
  EXPECT_EQ(stats().num_waiting, 2);
}

TEST_F(Fcfs, RejectsWhatCanNeverFit) {
  make("{}", 20);
  add(1, 4, 21);
  add(2, 4, 20);
  EXPECT_EQ(step(), (Sched{{2, 4}}));
  EXPECT_EQ(rejected_, (std::vector<uint64_t>{1}));
  EXPECT_EQ(stats().num_waiting, 0);
}

TEST_F(Fcfs, PreemptsTheNewestAndRecomputesItLater) {
  make("{}", 12);
  add(1, 6, 12);
  add(2, 6, 12);
  EXPECT_EQ(step(), (Sched{{1, 6}, {2, 6}}));  // pool full
  // A needs one more slot: B (newest) is preempted, A continues, nobody is admitted.
  EXPECT_EQ(step(), (Sched{{1, 1}}));
  EXPECT_EQ(preempted_, (std::vector<uint64_t>{2}));
  EXPECT_EQ(cache_.held.count(2), 0u);
  EXPECT_EQ(stats().num_preemptions, 1);
  EXPECT_EQ(stats().num_waiting, 1);
  // B (7 tokens now: prompt + its first generated token) waits until A is gone.
  EXPECT_EQ(step(), (Sched{{1, 1}}));
  EXPECT_TRUE(preempted_.empty());
  sched_->call("remove_request", &loom_scheduler_vtable::remove_request, uint64_t{1});
  cache_.held.erase(1);
  EXPECT_EQ(step(), (Sched{{2, 7}}));  // recomputed from scratch
}

TEST_F(Fcfs, PreemptsItselfWhenItIsTheNewest) {
  finish_at_max_total_ = false;
  make("{}", 6);
  add(1, 5, 6);
  EXPECT_EQ(step(), (Sched{{1, 5}}));
  EXPECT_EQ(step(), (Sched{{1, 1}}));  // 6 of 6
  EXPECT_EQ(step(), (Sched{}));        // the 7th token does not fit: it preempts itself
  EXPECT_EQ(preempted_, (std::vector<uint64_t>{1}));
  EXPECT_EQ(stats().num_running, 0);
  EXPECT_EQ(stats().num_waiting, 1);
}

TEST_F(Fcfs, ConfigErrors) {
  try {
    make(R"({"max_num_seqs": 0, "max_num_batched_tokens": "many", "policy": "x"})", 10);
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("\"max_num_seqs\" must be"), std::string::npos) << m;
    EXPECT_NE(m.find("\"max_num_batched_tokens\" must be"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown key \"policy\""), std::string::npos) << m;
  }
  make("{}", 10);
  add(1, 2, 5);
  const loom_request_view v = view(1);
  EXPECT_EQ(sched_->try_call(nullptr, &loom_scheduler_vtable::add_request, &v), LOOM_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace loom::test
