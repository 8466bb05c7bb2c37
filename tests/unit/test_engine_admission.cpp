// Admission control decisions with a scripted step-time model: queue-length and queued-token
// limits (halved for best effort, which therefore sheds first), the predicted-TTFT rule, the
// Retry-After estimate, and nothing at all while admission is off.
#include <gtest/gtest.h>

#include "core/engine/admission.hpp"

namespace loom {
namespace {

// 1000 us a step + 10 us per prompt token.
const StepCoefficients kModel{1000, 10, 0, 0, 8};

SloConfig on() {
  SloConfig s;
  s.admission = true;
  s.ttft_factor = 2.0;
  s.best_effort_priority = 1;
  return s;
}

TEST(Admission, OffAdmitsEverything) {
  SloConfig s;
  s.max_queue_len = 1;
  EXPECT_FALSE(admission_check(s, QueueLoad{100, 100000, 8}, AdmissionAsk{0, 10, 1}, kModel, 256));
}

TEST(Admission, QueueLengthLimitAndBestEffortAtHalf) {
  SloConfig s = on();
  s.max_queue_len = 4;
  EXPECT_FALSE(admission_check(s, QueueLoad{3, 0, 0}, AdmissionAsk{0, 10, 0}, kModel, 256));
  const auto full = admission_check(s, QueueLoad{4, 0, 0}, AdmissionAsk{0, 10, 0}, kModel, 256);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->reason, "queue_full");
  EXPECT_EQ(full->message, "the server is overloaded: 4 requests are queued, the limit is 4; retry later");
  // Priority 1 is best effort: its limit is 2.
  EXPECT_FALSE(admission_check(s, QueueLoad{1, 0, 0}, AdmissionAsk{1, 10, 0}, kModel, 256));
  const auto shed = admission_check(s, QueueLoad{2, 0, 0}, AdmissionAsk{1, 10, 0}, kModel, 256);
  ASSERT_TRUE(shed);
  EXPECT_EQ(shed->message,
            "the server is overloaded: 2 requests are queued, the limit is 2 (best-effort limit); retry later");
  EXPECT_FALSE(admission_check(s, QueueLoad{2, 0, 0}, AdmissionAsk{0, 10, 0}, kModel, 256));
}

TEST(Admission, QueuedTokensLimit) {
  SloConfig s = on();
  s.max_queued_tokens = 1000;
  EXPECT_FALSE(admission_check(s, QueueLoad{5, 900, 0}, AdmissionAsk{0, 100, 0}, kModel, 256));
  const auto r = admission_check(s, QueueLoad{5, 901, 0}, AdmissionAsk{0, 100, 0}, kModel, 256);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "queued_tokens_exceeded");
}

TEST(Admission, PredictedTtftAgainstTargetTimesFactor) {
  // 400 queued + 100 own = 500 prompt tokens at 256 a step: 1000 + 2560, then 1000 + 2440 us = 7 ms.
  EXPECT_EQ(predicted_ttft_us(kModel, 400, 100, 0, 256), 7000);
  const SloConfig s = on();
  const auto r = admission_check(s, QueueLoad{2, 400, 0}, AdmissionAsk{0, 100, /*ttft_ms=*/3}, kModel, 256);
  ASSERT_TRUE(r);  // 7 ms > 3 ms x 2
  EXPECT_EQ(r->reason, "ttft_unattainable");
  // The 400 tokens ahead drain in 1000 + 2560 + 1000 + 1440 us = 6 ms: come back in 1 s.
  EXPECT_EQ(r->retry_after_s, 1);
  EXPECT_FALSE(admission_check(s, QueueLoad{2, 400, 0}, AdmissionAsk{0, 100, 4}, kModel, 256));  // 8 ms allowed
  // Best effort gets half the factor: 4 ms x 1 < 7 ms.
  EXPECT_TRUE(admission_check(s, QueueLoad{2, 400, 0}, AdmissionAsk{1, 100, 4}, kModel, 256));
  // A model without samples predicts nothing: the TTFT rule waits for it.
  EXPECT_FALSE(admission_check(s, QueueLoad{2, 400, 0}, AdmissionAsk{0, 100, 3}, StepCoefficients{}, 256));
}

TEST(Admission, RetryAfterIsTheQueueDrainTimeClamped) {
  SloConfig s = on();
  s.max_queue_len = 1;
  // 100000 queued tokens at 256 a step: 390 full steps of 3560 us + 1 of 2600 us = 1.39 s -> 2 s.
  EXPECT_EQ(admission_check(s, QueueLoad{1, 100000, 0}, AdmissionAsk{0, 1, 0}, kModel, 256)->retry_after_s, 2);
  // Ten million: hours; clamped to a minute.
  EXPECT_EQ(admission_check(s, QueueLoad{1, 10000000, 0}, AdmissionAsk{0, 1, 0}, kModel, 256)->retry_after_s, 60);
}

}  // namespace
}  // namespace loom
