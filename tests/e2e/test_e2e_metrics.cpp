// /metrics against the real engine: after N finished requests every per-request histogram has
// counted N of them with the exact token totals, and the paged cache's prefix hits show up in
// loom:prefix_cache_hits_total when a second request shares a 3-block prefix.
#include <gtest/gtest.h>

#include <vector>

#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

json complete(const LiveServer& server, const json& prompt, int max_tokens) {
  const HttpResponse r = server.post("/v1/completions", {{"prompt", prompt},
                                                         {"max_tokens", max_tokens},
                                                         {"temperature", 0},
                                                         {"ignore_eos", true}});
  EXPECT_EQ(r.status, 200u) << r.body;
  return json::parse(r.body);
}

TEST(E2eMetrics, HistogramsCountEveryFinishedRequestWithExactTokenTotals) {
  LiveServer server(demo_config());
  const std::vector<int> max_tokens = {5, 8, 1};
  const std::vector<json> prompts = {"Once upon a time", "Lily", json::array({1, 300, 301})};
  int64_t prompt_total = 0, generated_total = 0, gaps = 0, multi_token = 0, step_tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const json body = complete(server, prompts[i], max_tokens[i]);
    const int64_t p = body["usage"]["prompt_tokens"], n = body["usage"]["completion_tokens"];
    ASSERT_EQ(n, max_tokens[i]);
    prompt_total += p;
    generated_total += n;
    gaps += n - 1;
    multi_token += n > 1 ? 1 : 0;
    // Each step computes the prompt once, then the previous sampled token; the last sampled
    // token is never fed back.
    step_tokens += p + n - 1;
  }
  const double kN = static_cast<double>(prompts.size());
  // The engine books a request's end, counters and gauges, before its reply leaves
  // (test_engine_finish_counters): nothing to wait for.
  const auto m = server.metrics();
  for (const char* h : {"loom:time_to_first_token_seconds", "loom:e2e_request_latency_seconds",
                        "loom:request_queue_time_seconds", "loom:request_prefill_time_seconds",
                        "loom:request_decode_time_seconds", "loom:request_prompt_tokens",
                        "loom:request_generation_tokens"}) {
    EXPECT_EQ(m.at(std::string(h) + "_count"), kN) << h;
    EXPECT_EQ(m.at(std::string(h) + "_bucket"), kN) << h;  // the last bucket sample is +Inf
  }
  EXPECT_EQ(m.at("loom:request_generation_tokens_sum"), generated_total);
  EXPECT_EQ(m.at("loom:request_prompt_tokens_sum"), prompt_total);
  EXPECT_EQ(m.at("loom:generation_tokens_total"), generated_total);
  EXPECT_EQ(m.at("loom:prompt_tokens_total"), prompt_total);
  EXPECT_EQ(m.at("loom:inter_token_latency_seconds_count"), gaps);
  EXPECT_EQ(m.at("loom:request_time_per_output_token_seconds_count"), multi_token);
  EXPECT_EQ(m.at("loom:iteration_tokens_total_sum"), step_tokens);
  // ignore_eos: every request ends on its length; the parser keeps the last series, "length".
  EXPECT_EQ(m.at("loom:request_success_total"), kN);
  EXPECT_GT(m.at("loom:e2e_request_latency_seconds_sum"), 0.0);
  EXPECT_GE(m.at("loom:e2e_request_latency_seconds_sum"), m.at("loom:time_to_first_token_seconds_sum"));
  EXPECT_EQ(m.at("loom:num_requests_running"), 0);
  EXPECT_EQ(m.at("loom:num_requests_waiting"), 0);
  EXPECT_EQ(m.at("loom:kv_cache_usage_perc"), 0);
}

TEST(E2eMetrics, SharedPrefixRaisesPrefixCacheHits) {
  LiveServer server(demo_config(R"(
[scheduler]
plugin = "fcfs"
[cache]
plugin = "paged"
kv_memory = "16MiB"
block_size = 4
)"));
  // 14 tokens: three full blocks of 4 shared, then two more.
  json prompt = json::array({1});
  for (int t = 0; t < 13; ++t) prompt.push_back(300 + t);
  complete(server, prompt, 2);
  ASSERT_EQ(server.metrics().at("loom:request_success_total"), 1);  // booked before the reply
  const auto before = server.metrics();
  EXPECT_EQ(before.at("loom:prefix_cache_hits_total"), 0);
  EXPECT_GE(before.at("loom:prefix_cache_queries_total"), 14);
  // The finished request's full blocks stay behind for reuse.
  EXPECT_GE(before.at("loom:kv_cache_cached_blocks"), 3);

  complete(server, prompt, 2);
  ASSERT_EQ(server.metrics().at("loom:request_success_total"), 2);  // booked before the reply
  const auto after = server.metrics();
  EXPECT_GE(after.at("loom:prefix_cache_hits_total"), 12);
  EXPECT_GT(after.at("loom:prefix_cache_queries_total"), before.at("loom:prefix_cache_queries_total"));
  EXPECT_LE(after.at("loom:prefix_cache_hits_total"), after.at("loom:prefix_cache_queries_total"));
}

}  // namespace
}  // namespace loom::test
