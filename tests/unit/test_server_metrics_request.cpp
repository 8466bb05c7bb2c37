// RequestMetrics (what feeds /metrics' histograms) on a scripted timeline: each lifecycle event
// lands in the right histogram with the exact value, only stop/length finishes count as requests,
// and a second scheduling (after preemption) does not move the queue time.
#include <gtest/gtest.h>

#include <vector>

#include "core/engine/request_metrics.hpp"

namespace loom {
namespace {

constexpr int64_t kSec = 1'000'000;  // microseconds

// How many observations fell in the bucket whose upper bound is `bound` (not cumulative).
uint64_t in_bucket(const HistogramSnapshot& h, double bound) {
  for (size_t i = 0; i < h.upper_bounds.size(); ++i)
    if (h.upper_bounds[i] == bound) return h.cumulative[i] - (i > 0 ? h.cumulative[i - 1] : 0);
  ADD_FAILURE() << "no bucket " << bound;
  return 0;
}

TEST(ServerMetricsRequest, OneTwoFiveBucketsStopAtTheLimit) {
  EXPECT_EQ(one_two_five_buckets(64), (std::vector<double>{1, 2, 5, 10, 20, 50}));
  EXPECT_EQ(one_two_five_buckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_TRUE(one_two_five_buckets(0).empty());
}

TEST(ServerMetricsRequest, ScriptedTimelineLandsExactly) {
  RequestMetrics m(512);
  // Request 1: arrives at 1 s, scheduled at 1.5 s (again at 1.6 s after a preemption), tokens at
  // 2, 2.25 and 2.75 s, finishes on its length at 3 s.
  m.on_arrival(1, 1 * kSec);
  m.on_scheduled(1, 3 * kSec / 2);
  m.on_step(7);
  m.on_scheduled(1, 16 * kSec / 10);
  m.on_token(1, 2 * kSec);
  m.on_step(1);
  m.on_token(1, 9 * kSec / 4);
  m.on_step(1);
  m.on_token(1, 11 * kSec / 4);
  m.on_finished(1, FinishReason::kLength, 7, 3, 3 * kSec);
  // Request 2: aborted after its first token; only the token-time histograms saw it.
  m.on_arrival(2, 0);
  m.on_scheduled(2, 0);
  m.on_token(2, kSec / 4);
  m.on_finished(2, FinishReason::kAbort, 4, 1, kSec);
  // Request 3: one token and a stop; no time per output token (needs two tokens).
  m.on_arrival(3, 10 * kSec);
  m.on_scheduled(3, 10 * kSec);
  m.on_token(3, 21 * kSec / 2);
  m.on_finished(3, FinishReason::kStop, 2, 1, 21 * kSec / 2);

  EngineStats s;
  m.snapshot_into(s);
  EXPECT_EQ(s.time_to_first_token.count, 3u);
  EXPECT_EQ(s.time_to_first_token.sum, 1.0 + 0.25 + 0.5);
  EXPECT_EQ(in_bucket(s.time_to_first_token, 1.0), 1u);
  EXPECT_EQ(in_bucket(s.time_to_first_token, 0.25), 1u);
  EXPECT_EQ(in_bucket(s.time_to_first_token, 0.5), 1u);
  EXPECT_EQ(s.inter_token_latency.count, 2u);
  EXPECT_EQ(s.inter_token_latency.sum, 0.25 + 0.5);
  EXPECT_EQ(s.time_per_output_token.count, 1u);
  EXPECT_EQ(s.time_per_output_token.sum, (2.0 - 1.0) / 2);
  EXPECT_EQ(s.e2e_request_latency.count, 2u);
  EXPECT_EQ(s.e2e_request_latency.sum, 2.0 + 0.5);
  EXPECT_EQ(s.request_queue_time.count, 2u);
  EXPECT_EQ(s.request_queue_time.sum, 0.5 + 0.0);
  EXPECT_EQ(s.request_prefill_time.count, 2u);
  EXPECT_EQ(s.request_prefill_time.sum, 0.5 + 0.5);
  EXPECT_EQ(s.request_decode_time.count, 2u);
  EXPECT_EQ(s.request_decode_time.sum, 1.0 + 0.0);
  EXPECT_EQ(s.request_prompt_tokens.count, 2u);
  EXPECT_EQ(s.request_prompt_tokens.sum, 7 + 2);
  EXPECT_EQ(in_bucket(s.request_prompt_tokens, 10), 1u);  // 7
  EXPECT_EQ(in_bucket(s.request_prompt_tokens, 2), 1u);
  EXPECT_EQ(s.request_generation_tokens.sum, 3 + 1);
  EXPECT_EQ(s.iteration_tokens.count, 3u);
  EXPECT_EQ(s.iteration_tokens.sum, 9);
  EXPECT_EQ(in_bucket(s.iteration_tokens, 8), 1u);
  EXPECT_EQ(in_bucket(s.iteration_tokens, 1), 2u);
  EXPECT_EQ(s.request_prompt_tokens.upper_bounds.back(), 500);  // 1-2-5 up to max_model_len
}

TEST(ServerMetricsRequest, EventsForUnknownRequestsAreIgnored) {
  RequestMetrics m(64);
  m.on_scheduled(9, 1);
  m.on_token(9, 2);
  m.on_finished(9, FinishReason::kStop, 1, 1, 3);
  EngineStats s;
  m.snapshot_into(s);
  EXPECT_EQ(s.time_to_first_token.count, 0u);
  EXPECT_EQ(s.e2e_request_latency.count, 0u);
}

}  // namespace
}  // namespace loom
