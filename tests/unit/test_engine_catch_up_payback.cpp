// When speculating repays a speculator's catch-up (core/engine/catch_up_payback.hpp): the rate
// must rise, and the tokens gained over what the request may still generate must be worth more
// than the catch-up. Times in microseconds.
#include <gtest/gtest.h>

#include "core/engine/catch_up_payback.hpp"

namespace loom {
namespace {

TEST(CatchUpPayback, ANearlyFinishedRequestDoesNotRepayALongCatchUp) {
  // 2 decodes in 10 ms; drafting for one request: 16 ms for 2 + 3.5 tokens, 1.72x the rate.
  EXPECT_TRUE(repays_catch_up(2, 10000, 16000, 3.5, 9, 0));
  // 9 tokens left: 2 steps of 16 ms gain 0.72 of their tokens, 23 ms, not 380 ms.
  EXPECT_FALSE(repays_catch_up(2, 10000, 16000, 3.5, 9, 380000));
  // 256 tokens left: 57 such steps gain 654 ms.
  EXPECT_TRUE(repays_catch_up(2, 10000, 16000, 3.5, 256, 380000));
}

TEST(CatchUpPayback, AFirstProposalAloneRepaysItsPrompt) {
  // Batch 1, 11 ms a decode, 30 ms a round of 4.6 tokens; a 43-token prompt caught up in 40 ms.
  EXPECT_TRUE(repays_catch_up(1, 11000, 30000, 3.6, 128, 40000));
}

TEST(CatchUpPayback, ARateThatDoesNotRiseNeverPays) {
  // 16 decodes in 45 ms against 60 ms for 19.6 tokens: 0.92x the rate, even with nothing to catch up.
  EXPECT_FALSE(repays_catch_up(16, 45000, 60000, 3.6, 256, 0));
  EXPECT_FALSE(repays_catch_up(1, 10000, 10000, 0.0, 256, 0));  // equal rates
}

TEST(CatchUpPayback, TheGainIsTheRateIncreaseOverTheStepsLeft) {
  // 2x the rate over 16 / 4 = 4 steps of 20 ms: 80 ms saved.
  EXPECT_TRUE(repays_catch_up(1, 10000, 20000, 3.0, 16, 79000));
  EXPECT_FALSE(repays_catch_up(1, 10000, 20000, 3.0, 16, 81000));
}

TEST(CatchUpPayback, UnmeasuredTimesNeverPay) {
  EXPECT_FALSE(repays_catch_up(0, 10000, 20000, 3.0, 16, 0));
  EXPECT_FALSE(repays_catch_up(1, 0, 20000, 3.0, 16, 0));
  EXPECT_FALSE(repays_catch_up(1, 10000, 0, 3.0, 16, 0));
}

}  // namespace
}  // namespace loom
