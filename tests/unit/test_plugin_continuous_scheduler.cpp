// scheduler/continuous decisions, step by step, on a fake token-granular cache (block size 1,
// grows on demand) with exact expectations: who runs, how many tokens each, who is preempted.
#include "scheduler_step_harness.hpp"

namespace loom::test {
namespace {

class Continuous : public SchedulerSteps {
 protected:
  Continuous() : SchedulerSteps("continuous") {}
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
  EXPECT_EQ(reasons_, (std::vector<std::string>{"needs 21 > 20"})) << "the cache's fits reason, in the output";
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
    EXPECT_NE(m.find("\"max_num_seqs\" must be"), std::string::npos) << m;
    EXPECT_NE(m.find("\"long_prefill_token_threshold\" must be"), std::string::npos) << m;
    EXPECT_NE(m.find("\"enable_chunked_prefill\" must be true or false"), std::string::npos) << m;
    EXPECT_NE(m.find("\"preemption_aging_steps\" must be"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown key \"policy\""), std::string::npos) << m;
  }
  make("{}", 10);
  add(1, 2, 5);
  const loom_request_view v = view(1);
  EXPECT_EQ(sched_->try_call(nullptr, &loom_scheduler_vtable::add_request, &v), LOOM_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace loom::test

namespace loom::test {
namespace {

class ContinuousTimed : public SchedulerSteps {
 protected:
  ContinuousTimed() : SchedulerSteps("continuous") {}
  // The scripted step-time model: 1000 us + 100 us per prompt token + 200 us per decode token.
  void script_model() {
    model_ = [](int32_t prefill, int32_t decode, int64_t) -> int64_t { return 1000 + 100 * prefill + 200 * decode; };
  }
};

// max_step_ms with a scripted step-time model, t = 1000 us + 100 us per prompt token + 200 us per
// decode token: a 3 ms step beside one decode holds 18 prompt tokens.
TEST_F(ContinuousTimed, MaxStepMsCutsPrefillChunksToThePredictedStep) {
  make(R"({"max_num_batched_tokens": 64, "max_step_ms": 3})", 1000);
  script_model();
  add(1, 2, 100);
  EXPECT_EQ(step(), (Sched{{1, 2}}));
  add(2, 40, 100);
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 18}}));
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 18}}));
  model_ = nullptr;  // no model: no bound
  add(3, 30, 100);
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 4}, {3, 30}}));
  script_model();
  add(4, 30, 100);
  // Three decodes take 1600 us of the 3000; 14 prompt tokens fit. Decodes are never cut.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}, {3, 1}, {4, 14}}));
}

// Decodes alone over the bound: the first prompt still advances by the floor of 8 tokens, the
// next gets nothing. A prompt alone in the scheduler is not cut at all.
TEST_F(ContinuousTimed, TheFloorAndAPromptAlone) {
  make(R"({"max_num_batched_tokens": 64, "max_step_ms": 1})", 1000);
  script_model();
  add(1, 40, 100);
  EXPECT_EQ(step(), (Sched{{1, 40}}));  // alone: 5000 us predicted, not cut
  add(2, 40, 100);
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 8}}));  // the decode alone is 1200 us: the floor
  add(3, 40, 100);
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 8}}));  // 3 waits: the floor is for the step's first prompt
}

// Over twice as many waiting as running: the bound stretches by waiting / running - 1, at most
// max_step_stretch times; up to twice as many waiting it is max_step_ms.
TEST_F(ContinuousTimed, TheBoundStretchesWhileOverTwiceAsManyWait) {
  make(R"({"max_num_batched_tokens": 256, "max_step_ms": 3, "max_step_stretch": 4})", 1000);
  script_model();
  add(1, 2, 100);
  EXPECT_EQ(step(), (Sched{{1, 2}}));  // alone
  for (uint64_t id = 2; id <= 4; ++id) add(id, 100, 200);
  // 3 waiting / 1 running: 2 x 3000 us, 1200 of them the decode: 48 prompt tokens.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 48}}));
  // 2 waiting / 2 running: 3000 us.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 18}}));
  for (uint64_t id = 5; id <= 12; ++id) add(id, 100, 200);
  // 10 waiting / 2 running, capped at 4 x 3000 us. 4600 of them go to the decode and the last 34
  // tokens of prompt 2; the 7400 left hold 74 tokens of prompt 3.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 34}, {3, 74}}));
}

// With max_step_stretch_after = 3 the bound stretches only on the third step in a row that begins
// with over twice as many waiting as running; a step without that starts the count again.
TEST_F(ContinuousTimed, TheBoundStretchesAfterAStreakOfStarvedSteps) {
  make(R"({"max_num_batched_tokens": 256, "max_step_ms": 3, "max_step_stretch": 4, "max_step_stretch_after": 3})",
       1000);
  script_model();
  add(1, 2, 100);
  EXPECT_EQ(step(), (Sched{{1, 2}}));  // alone
  for (uint64_t id = 2; id <= 6; ++id) add(id, 100, 200);
  // 5 waiting / 1 running, steps 1 and 2 of the streak: 3000 us, 18 prompt tokens.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 18}}));
  // 4 waiting / 2 running: no streak.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 18}}));
  for (uint64_t id = 7; id <= 12; ++id) add(id, 100, 200);
  // 10 waiting / 2 running: steps 1 and 2 keep the bound, the third stretches it to 4 x 3000 us,
  // 4000 of them for the decode and the last 28 tokens of prompt 2, 8000 for 80 of prompt 3.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 18}}));
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 18}}));
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 28}, {3, 80}}));
}

// max_step_stretch = 1, the default, keeps the bound fixed.
TEST_F(ContinuousTimed, TheDefaultStretchOfOneKeepsTheBound) {
  make(R"({"max_num_batched_tokens": 256, "max_step_ms": 3})", 1000);
  script_model();
  add(1, 2, 100);
  EXPECT_EQ(step(), (Sched{{1, 2}}));
  for (uint64_t id = 2; id <= 4; ++id) add(id, 100, 200);
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 18}}));
}

// Deep in a long prompt the floor is 1/32 of the context the chunk attends to.
TEST_F(ContinuousTimed, TheFloorGrowsWithTheContext) {
  make(R"({"max_num_batched_tokens": 512, "max_step_ms": 1})", 4000);
  script_model();
  add(1, 4, 100);
  EXPECT_EQ(step(), (Sched{{1, 4}}));
  add(2, 1000, 1100);
  model_ = nullptr;  // no model: no bound
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 511}}));
  script_model();
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 15}}));  // 511 / 32
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 16}}));  // 526 / 32
}

}  // namespace
}  // namespace loom::test
