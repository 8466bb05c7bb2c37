// scheduler/slo decisions, step by step, with a scripted clock and a scripted step-time model on
// the fake token-granular cache: prefill chunks sized to the tightest TPOT, EDF within a class and
// strict priority across, aging, priority preemption with the victim's mode chosen by cost, the
// victim of a full cache, and requests shed when their deadline passed in the queue.
#include "scheduler_step_harness.hpp"

namespace loom::test {
namespace {

class Slo : public SchedulerSteps {
 protected:
  Slo() : SchedulerSteps("slo") {}
};

// t = 1000 us + 100 us per prompt token + 200 us per decode token (no KV term).
int64_t linear_model(int32_t prefill, int32_t decode, int64_t) { return 1000 + 100 * prefill + 200 * decode; }

TEST_F(Slo, PrefillChunkMeetsTheTightestTpot) {
  // Only running decodes' targets (ARecentTpotTargetStillBoundsTheStep has the remembered ones).
  make(R"({"max_num_batched_tokens": 64, "tpot_headroom": 1.0, "min_prefill_chunk": 1, "tpot_memory_ms": 0})", 1000);
  model_ = linear_model;
  add_slo(1, 2, 100, 0, 0, /*tpot_ms=*/2, 0);
  EXPECT_EQ(step(), (Sched{{1, 2}}));  // nothing decodes yet: no bound
  add_slo(2, 40, 100, 0, 0, 0, 1);
  // 1 decodes; the step may take 2000 us: 1000 + 200 (the decode) + 100 * 8 prompt tokens.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 8}}));
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 8}}));
  add_slo(3, 2, 100, 0, 0, /*tpot_ms=*/1, 2);
  // 3 is not running yet, so 1's 2 ms still binds: 2's chunk of 8 fills the step, nothing is left
  // for admitting 3.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 8}}));
  model_ = nullptr;  // a model that knows nothing bounds nothing
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 16}, {3, 2}}));
  model_ = linear_model;
  add_slo(4, 10, 100, 0, 0, 0, 3);
  // Three decodes (1000 + 3 x 200 us) already exceed 3's 1 ms; the step still takes
  // min_prefill_chunk (1) prompt token, so 4 does not starve.
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 1}, {3, 1}, {4, 1}}));
}

// A lower class mid-prefill does not hold the step's prefill time against a higher class that
// arrives: the newcomer is admitted first, the long prompt gets what is left.
TEST_F(Slo, AHigherClassArrivalGoesBeforeALowerClassPrefillInProgress) {
  make(R"({"max_num_batched_tokens": 64, "tpot_headroom": 1.0, "min_prefill_chunk": 1, "aging_ms": 0})", 1000);
  model_ = linear_model;
  add_slo(1, 2, 100, 0, 0, /*tpot_ms=*/2, 0);
  EXPECT_EQ(step(), (Sched{{1, 2}}));
  add_slo(2, 40, 100, /*priority=*/-1, 0, 0, 1);  // best effort, a long prompt
  EXPECT_EQ(step(), (Sched{{1, 1}, {2, 8}}));  // 1000 + 200 + 100 x 8 = 2 ms
  add_slo(3, 8, 100, /*priority=*/0, 0, 0, 2);
  // 3 takes the 8 prompt tokens the bound allows; 2's next chunk waits for a step with room.
  EXPECT_EQ(step(), (Sched{{1, 1}, {3, 8}}));
  // Two decodes (1400 us) leave 600 us: 6 of 2's prompt tokens.
  EXPECT_EQ(step(), (Sched{{1, 1}, {3, 1}, {2, 6}}));
  // Equal classes keep the running prefill first.
  add_slo(4, 8, 100, /*priority=*/-1, 0, 0, 3);
  EXPECT_EQ(step(), (Sched{{1, 1}, {3, 1}, {2, 6}}));
}

// A TPOT target seen within tpot_memory_ms bounds the step even when no decode with a target
// runs: the next interactive arrival would wait out a long best-effort prefill step.
TEST_F(Slo, ARecentTpotTargetStillBoundsTheStep) {
  make(R"({"max_num_batched_tokens": 64, "tpot_headroom": 1.0, "min_prefill_chunk": 1, "aging_ms": 0,
           "tpot_memory_ms": 5})",
       1000);
  model_ = linear_model;
  add_slo(1, 2, 3, 0, 0, /*tpot_ms=*/2, 0);
  EXPECT_EQ(step(), (Sched{{1, 2}}));  // 1 finishes: its 2 prompt tokens, then its one token
  now_us_ = 1000;
  add_slo(2, 40, 100, /*priority=*/-1, 0, 0, 1000);
  EXPECT_EQ(step(), (Sched{{2, 10}}));  // 1000 + 100 x 10 = 2 ms, 1's target
  now_us_ = 5000;
  EXPECT_EQ(step(), (Sched{{2, 10}}));  // 5 ms after 1 arrived: still remembered
  now_us_ = 5001;
  EXPECT_EQ(step(), (Sched{{2, 20}}));  // forgotten: no bound
}

TEST_F(Slo, EarliestDeadlineFirstWithinAClassStrictPriorityAcross) {
  make(R"({"max_num_seqs": 1, "aging_ms": 0})", 1000);
  now_us_ = 100;
  add_slo(1, 2, 3, 0, /*ttft_ms=*/5000, 0, 0);
  add_slo(2, 2, 3, 0, /*ttft_ms=*/1000, 0, 10);
  add_slo(3, 2, 3, /*priority=*/1, /*ttft_ms=*/9000, 0, 20);
  add_slo(4, 2, 3, 0, /*ttft_ms=*/0, 0, 5);  // no target: default_ttft_ms (60 s)
  // Each finishes in its step (2 prompt tokens, then the one token max_total allows).
  EXPECT_EQ(step(), (Sched{{3, 2}}));  // the higher class, whatever its deadline
  EXPECT_EQ(step(), (Sched{{2, 2}}));  // deadline 1.00001 s
  EXPECT_EQ(step(), (Sched{{1, 2}}));  // deadline 5 s
  EXPECT_EQ(step(), (Sched{{4, 2}}));  // deadline 60 s
}

TEST_F(Slo, AgingLiftsBestEffortOneClassPerAgingPeriod) {
  for (const bool aging : {true, false}) {
    SCOPED_TRACE(aging);
    make(aging ? R"({"max_num_seqs": 1, "aging_ms": 1})" : R"({"max_num_seqs": 1, "aging_ms": 0})", 1000);
    reqs_.clear();
    add_slo(1, 2, 3, /*priority=*/-1, 0, 0, /*arrival=*/0);  // best effort, waiting since 0
    add_slo(2, 2, 3, /*priority=*/0, 0, 0, /*arrival=*/1500);
    now_us_ = 1500;
    // Aged by 1.5 ms = one class: 1 ties with 2 and goes first on its earlier deadline.
    EXPECT_EQ(step(), (Sched{{aging ? 1u : 2u, 2}}));
  }
}

struct VictimCase {
  bool swap_available;
  double swap_us_per_token;
  int32_t expected_mode;
};

TEST_F(Slo, PriorityPreemptionChoosesSwapOrRecomputeByCost) {
  // Recomputing the victim's 6 tokens costs 600 us under linear_model; swapping costs 6 x the
  // measured per-token swap cost.
  const VictimCase cases[] = {
      {false, 0, LOOM_PREEMPT_RECOMPUTE},  // no tier
      {true, 10, LOOM_PREEMPT_SWAP},       // 60 us < 600 us
      {true, 200, LOOM_PREEMPT_RECOMPUTE}, // 1200 us > 600 us
      {true, 0, LOOM_PREEMPT_SWAP},        // not measured yet: swap, and so measure it
  };
  for (const VictimCase& c : cases) {
    SCOPED_TRACE(c.swap_us_per_token);
    make("{}", 10);
    reqs_.clear();
    cache_.held.clear();
    model_ = linear_model;
    swap_available_ = c.swap_available;
    swap_us_per_token_ = c.swap_us_per_token;
    add_slo(1, 6, 10, 0, 0, 0, 0);
    EXPECT_EQ(step(), (Sched{{1, 6}}));
    add_slo(2, 6, 10, /*priority=*/5, 0, 0, 10);
    // 2 cannot get its 6 tokens beside 1's 6 in 10: 1, a lower class, gives way before anything
    // is scheduled, and 2 is admitted in the same step; 1 (now 7 tokens) does not fit back.
    EXPECT_EQ(step(), (Sched{{2, 6}}));
    EXPECT_EQ(preempted_, (Ids{1}));
    EXPECT_EQ(modes_, (std::vector<int32_t>{c.expected_mode}));
    EXPECT_EQ(stats().num_waiting, 1);
  }
}

TEST_F(Slo, AFullCachePreemptsTheLowestClassNotTheNewest) {
  make("{}", 9);
  add_slo(1, 3, 9, 1, 0, 0, 0);
  add_slo(2, 3, 9, 0, 0, 0, 1);
  add_slo(3, 3, 9, 1, 0, 0, 2);
  EXPECT_EQ(step(), (Sched{{1, 3}, {3, 3}, {2, 3}}));  // class 1 first, then 2
  // Three decodes need 3 more slots of the none free: 2 (class 0) gives way, though 3 is newer.
  EXPECT_EQ(step(), (Sched{{1, 1}, {3, 1}}));
  EXPECT_EQ(preempted_, (Ids{2}));
  EXPECT_EQ(modes_, (std::vector<int32_t>{LOOM_PREEMPT_RECOMPUTE}));
  EXPECT_EQ(stats().num_preemptions, 1);
}

TEST_F(Slo, ARequestStillQueuedPastItsDeadlineIsShedUncomputed) {
  make(R"({"expire_factor": 1.0})", 1000);
  add_slo(1, 2, 100, 0, /*ttft_ms=*/10, 0, 0);
  add_slo(2, 2, 100, 0, 0, 0, 0);               // no target: never expires
  add_slo(3, 2, 100, 0, /*ttft_ms=*/30, 0, 0);  // 30 ms: not yet
  now_us_ = 20000;
  EXPECT_EQ(step(), (Sched{{3, 2}, {2, 2}}));  // EDF: 3's deadline (30 ms) before 2's (60 s)
  EXPECT_EQ(rejected_, (Ids{1}));
  ASSERT_EQ(reasons_.size(), 1u);
  EXPECT_EQ(reasons_[0].rfind("deadline exceeded: still queued 20 ms after arrival", 0), 0u) << reasons_[0];
  // Running requests never expire.
  now_us_ = 10'000'000;
  EXPECT_EQ(step(), (Sched{{3, 1}, {2, 1}}));
  EXPECT_TRUE(rejected_.empty());
}

TEST_F(Slo, TenantsShareAClassFairly) {
  make(R"({"max_num_seqs": 3, "max_num_batched_tokens": 2})", 1000);
  add_slo(1, 2, 100, 0, 0, 0, 0, /*tenant=*/7);
  EXPECT_EQ(step(), (Sched{{1, 2}}));
  add_slo(2, 2, 100, 0, 0, 0, 1, /*tenant=*/7);
  add_slo(3, 2, 100, 0, 0, 0, 2, /*tenant=*/8);
  // Tenant 7 holds one running request, 8 none: 3 goes before the earlier 2.
  EXPECT_EQ(step(), (Sched{{1, 1}, {3, 1}}));
}

}  // namespace
}  // namespace loom::test
