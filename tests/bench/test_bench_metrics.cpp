// Scripted SSE streams with known arrival times go through the StreamRecorder into summarize();
// every figure is checked exactly. Times are binary fractions, so the arithmetic is exact.
#include <gtest/gtest.h>

#include <cmath>

#include "tools/bench/serve_metrics.hpp"
#include "tools/bench/stream_recorder.hpp"

namespace loom::bench {
namespace {

struct Piece {
  double t;
  std::string bytes;
};

RequestRecord replay(double start, const std::vector<Piece>& pieces, double end) {
  RequestRecord r;
  StreamRecorder rec(r);
  r.start = start;
  for (const Piece& p : pieces) rec.on_bytes(p.bytes, p.t);
  rec.on_end(end);
  return r;
}

// A: completions, usage says 4 tokens in 3 token chunks; the first chunk's closing blank line
// comes in a later piece (its time counts), an empty-text chunk is no token, CRLF line ends.
RequestRecord request_a() {
  return replay(1.0,
                {{1.5, "data: {\"choices\":[{\"text\":\"\"}]}\r\n\r\ndata: {\"choices\":[{\"text\":\"Once\"}]}\r\n"},
                 {1.625, "\r\n"},
                 {1.75, "data: {\"choices\":[{\"text\":\" upon\"}]}\n\ndata: {\"choices\":[{\"te"},
                 {2.25, "xt\":\" a\"}]}\n\n"},
                 {2.5, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":4}}"
                       "\n\ndata: [DONE]\n\n"}},
                3.125);
}

// B: chat deltas and no usage chunk: output tokens are the 2 token chunks.
RequestRecord request_b() {
  RequestRecord r = replay(2.0,
                           {{2.125, "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"},
                            {2.25, "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"},
                            {2.5, "data: {\"choices\":[{\"delta\":{\"content\":\"!\"}}]}\n\ndata: [DONE]\n\n"}},
                           2.75);
  r.client_prompt_tokens = 5;
  return r;
}

// C: the HTTP request failed.
RequestRecord request_c() {
  RequestRecord r;
  StreamRecorder rec(r);
  r.start = 0.5;
  rec.on_failure("HTTP 400: bad", 0.75);
  return r;
}

// D: the stream stopped before [DONE].
RequestRecord request_d() {
  return replay(3.0, {{3.5, "data: {\"choices\":[{\"text\":\"x\"}]}\n\n"}}, 4.0);
}

// E: one output token: no TPOT.
RequestRecord request_e() {
  return replay(0.0,
                {{0.25, "data: {\"choices\":[{\"text\":\"x\"}]}\n\n"
                        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n"
                        "data: [DONE]\n\n"}},
                0.5);
}

TEST(ServeMetrics, RecorderBuildsTheTimeline) {
  const RequestRecord a = request_a();
  EXPECT_TRUE(a.success) << a.error;
  EXPECT_EQ(a.token_times, (std::vector<double>{1.625, 1.75, 2.25}));
  EXPECT_EQ(a.generated_text, "Once upon a");
  EXPECT_EQ(a.usage_prompt_tokens, 7);
  EXPECT_EQ(a.usage_completion_tokens, 4);
  EXPECT_EQ(a.end, 3.125);
  EXPECT_FALSE(request_c().success);
  EXPECT_EQ(request_c().error, "HTTP 400: bad");
  EXPECT_FALSE(request_d().success);
  EXPECT_EQ(request_d().error, "stream ended without [DONE]");
  const RequestRecord err = replay(0, {{0.5, "data: {\"error\":{\"message\":\"boom\"}}\n\ndata: [DONE]\n\n"}}, 1);
  EXPECT_FALSE(err.success);
  EXPECT_EQ(err.error, "stream error: boom");
  const RequestRecord empty = replay(0, {{0.5, "data: [DONE]\n\n"}}, 1);
  EXPECT_EQ(empty.error, "stream carried no tokens");
}

TEST(ServeMetrics, PerRequestFigures) {
  const RequestMetrics a = request_metrics(request_a());
  EXPECT_EQ(a.ttft_ms, 625.0);
  EXPECT_EQ(a.itl_ms, (std::vector<double>{125.0, 500.0}));
  EXPECT_EQ(a.e2e_ms, 2125.0);
  EXPECT_EQ(a.output_tokens, 4);
  EXPECT_EQ(a.prompt_tokens, 7);
  EXPECT_EQ(a.tpot_ms, 500.0);  // (2125 - 625) / (4 - 1)
  EXPECT_TRUE(a.usage_from_server);
  const RequestMetrics b = request_metrics(request_b());
  EXPECT_EQ(b.ttft_ms, 250.0);
  EXPECT_EQ(b.output_tokens, 2);
  EXPECT_EQ(b.prompt_tokens, 5);
  EXPECT_EQ(b.tpot_ms, 500.0);
  EXPECT_FALSE(b.usage_from_server);
  EXPECT_FALSE(request_metrics(request_e()).tpot_ms);
}

TEST(ServeMetrics, PercentilesInterpolateBetweenClosestRanks) {
  EXPECT_EQ(percentile({}, 50), 0.0);
  EXPECT_EQ(percentile({7}, 99), 7.0);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 0), 1.0);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 100), 4.0);
  EXPECT_DOUBLE_EQ(percentile({10, 20, 30, 40, 50}, 90), 46.0);  // rank 3.6
}

TEST(ServeMetrics, SummaryOfAllRequests) {
  const std::vector<RequestRecord> records = {request_a(), request_b(), request_c(), request_d(),
                                              request_e()};
  GoodputSlo slo;
  slo.ttft_ms = 300;
  slo.tpot_ms = 500;
  const ServeSummary s = summarize(records, 4.0, slo);
  EXPECT_EQ(s.completed, 3u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.duration_s, 4.0);
  EXPECT_EQ(s.total_input_tokens, 15);  // 7 + 5 + 3
  EXPECT_EQ(s.total_output_tokens, 7);  // 4 + 2 + 1
  EXPECT_EQ(s.request_throughput, 0.75);
  EXPECT_EQ(s.output_throughput, 1.75);
  EXPECT_EQ(s.total_token_throughput, 5.5);
  EXPECT_EQ(s.good_requests, 2u);  // B and E; A misses the TTFT SLO
  EXPECT_EQ(s.request_goodput, 0.5);
  EXPECT_EQ(s.max_concurrency, 2u);  // A with B, A with D; E's end and C's start do not overlap
  EXPECT_EQ(s.usage_missing, 1u);

  EXPECT_EQ(s.ttft_ms.count, 3u);  // 625, 250, 250
  EXPECT_EQ(s.ttft_ms.mean, 375.0);
  EXPECT_EQ(s.ttft_ms.median, 250.0);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p90, 550.0);   // rank 1.8: 250 + 0.8 * 375
  EXPECT_DOUBLE_EQ(s.ttft_ms.p99, 617.5);   // rank 1.98
  EXPECT_DOUBLE_EQ(s.ttft_ms.std, std::sqrt(31250.0));
  EXPECT_EQ(s.tpot_ms.count, 2u);  // E has none
  EXPECT_EQ(s.tpot_ms.mean, 500.0);
  EXPECT_EQ(s.tpot_ms.std, 0.0);
  EXPECT_EQ(s.itl_ms.count, 3u);  // 125, 500 (A) and 250 (B), pooled
  EXPECT_DOUBLE_EQ(s.itl_ms.mean, 875.0 / 3);
  EXPECT_EQ(s.itl_ms.median, 250.0);
  EXPECT_DOUBLE_EQ(s.itl_ms.p90, 450.0);
  EXPECT_DOUBLE_EQ(s.itl_ms.p99, 495.0);
  EXPECT_EQ(s.itl_ms.min, 125.0);
  EXPECT_EQ(s.itl_ms.max, 500.0);
  EXPECT_EQ(s.e2e_ms.mean, 1125.0);  // 2125, 750, 500
  EXPECT_EQ(s.e2e_ms.median, 750.0);
  EXPECT_DOUBLE_EQ(s.e2e_ms.p90, 1850.0);
  EXPECT_DOUBLE_EQ(s.e2e_ms.p99, 2097.5);

  GoodputSlo e2e_only;
  e2e_only.e2el_ms = 600;
  EXPECT_EQ(summarize(records, 4.0, e2e_only).good_requests, 1u);  // E
  EXPECT_FALSE(summarize(records, 4.0, GoodputSlo{}).request_goodput);

  // A turn never sent (start == end) is a failure but was never in flight.
  std::vector<RequestRecord> with_unsent = records;
  RequestRecord unsent;
  unsent.start = unsent.end = 2.5;
  unsent.error = "not sent";
  with_unsent.push_back(unsent);
  const ServeSummary u = summarize(with_unsent, 4.0, slo);
  EXPECT_EQ(u.failed, 3u);
  EXPECT_EQ(u.max_concurrency, 2u);
}

}  // namespace
}  // namespace loom::bench
