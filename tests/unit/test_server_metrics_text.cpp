// GET /metrics text: the exact exposition for a fixed snapshot (HELP/TYPE lines, model_name on
// every sample, one request_success_total series per reason, histograms as cumulative _bucket
// series ending with +Inf then _count and _sum), label escaping, and the route serving it.
#include <gtest/gtest.h>

#include <string>

#include "core/server/http_server.hpp"
#include "core/server/metrics_text.hpp"
#include "tests/unit/fake_engine.hpp"
#include "tests/unit/http_test_client.hpp"

namespace loom {
namespace {

namespace http = boost::beast::http;

HistogramSnapshot small_histogram() {
  HistogramSnapshot h;
  h.upper_bounds = {0.001, 0.5, 2};
  h.cumulative = {1, 2, 2};
  h.count = 3;
  h.sum = 3.25;
  return h;
}

EngineStats fixed_stats() {
  EngineStats s;
  s.num_waiting = 2;
  s.num_running = 1;
  s.kv_total_blocks = 8;
  s.kv_used_blocks = 2;
  s.kv_free_blocks = 5;
  s.kv_cached_blocks = 1;
  s.kv_num_seqs = 1;
  s.num_preemptions = 4;
  s.engine_steps = 12;
  s.engine_step_seconds = 1.5;
  s.grammar_steps = 3;
  s.grammar_step_seconds = 0.25;
  s.grammar_seconds = 0.0625;
  s.kv_swapped_out_blocks = 6;
  s.kv_swapped_in_blocks = 5;
  s.requests_finished = 7;
  s.requests_finished_stop = 5;
  s.requests_finished_length = 2;
  s.prompt_tokens_total = 100;
  s.generation_tokens_total = 40;
  s.prefix_cache_queries = 64;
  s.prefix_cache_hits = 48;
  s.prefix_cache_miss_no_match = 9;
  s.prefix_cache_miss_partial_block = 3;
  s.prefix_cache_miss_evicted = 2;
  s.prefix_cache_miss_salt_mismatch = 2;
  s.time_to_first_token = small_histogram();
  return s;
}

// An empty histogram (no bounds, nothing observed) still shows its +Inf bucket, count and sum.
std::string empty_histogram(const std::string& name, const std::string& help) {
  const std::string m = "{model_name=\"m\"}";
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n" + name +
         "_bucket{model_name=\"m\",le=\"+Inf\"} 0\n" + name + "_count" + m + " 0\n" + name +
         "_sum" + m + " 0\n";
}

// The SLO block of an empty SloSnapshot: headers, the three admission reasons at 0, the plain
// counters and gauges at 0, the four model terms at 0.
std::string empty_slo_block() {
  auto head = [](const std::string& name, const std::string& type, const std::string& help) {
    return "# HELP loom:" + name + " " + help + "\n# TYPE loom:" + name + " " + type + "\n";
  };
  const std::string m = "{model_name=\"m\"";
  return head("request_slo_ttft_met_total", "counter", "Requests whose time to first token met their target, by priority.") +
         head("request_slo_ttft_missed_total", "counter",
              "Requests whose time to first token missed their target, by priority.") +
         head("request_slo_tpot_met_total", "counter", "Requests whose time per output token met their target, by priority.") +
         head("request_slo_tpot_missed_total", "counter",
              "Requests whose time per output token missed their target, by priority.") +
         head("request_queue_wait_seconds", "summary", "Time from arrival to first scheduled, by priority.") +
         head("num_requests_rejected_total", "counter", "Requests refused with 429 by admission control, by reason.") +
         "loom:num_requests_rejected_total" + m + ",reason=\"queue_full\"} 0\n" +
         "loom:num_requests_rejected_total" + m + ",reason=\"queued_tokens_exceeded\"} 0\n" +
         "loom:num_requests_rejected_total" + m + ",reason=\"ttft_unattainable\"} 0\n" +
         head("num_requests_aborted_total", "counter", "Requests cancelled before they finished.") +
         "loom:num_requests_aborted_total" + m + "} 0\n" +
         head("num_requests_failed_total", "counter",
              "Requests finished with an error (e.g. their deadline passed in the queue).") +
         "loom:num_requests_failed_total" + m + "} 0\n" +
         head("request_goodput", "gauge", "Requests per second that met every SLO target, over the goodput window.") +
         "loom:request_goodput" + m + "} 0\n" +
         head("request_goodput_window_seconds", "gauge", "The sliding window of request_goodput.") +
         "loom:request_goodput_window_seconds" + m + "} 0\n" +
         head("step_time_model_us", "gauge",
              "Step-time model: predicted step us = base + prefill_token*prefill + decode_token*decode + kv_token*kv.") +
         "loom:step_time_model_us" + m + ",term=\"base\"} 0\n" +
         "loom:step_time_model_us" + m + ",term=\"prefill_token\"} 0\n" +
         "loom:step_time_model_us" + m + ",term=\"decode_token\"} 0\n" +
         "loom:step_time_model_us" + m + ",term=\"kv_token\"} 0\n" +
         head("step_time_model_samples_total", "counter", "Steps the step-time model has been fitted on.") +
         "loom:step_time_model_samples_total" + m + "} 0\n";
}

TEST(ServerMetricsText, FixedSnapshotRendersExactly) {
  const std::string expected =
      "# HELP loom:num_requests_running Number of requests in the running batch.\n"
      "# TYPE loom:num_requests_running gauge\n"
      "loom:num_requests_running{model_name=\"m\"} 1\n"
      "# HELP loom:num_requests_waiting Number of requests waiting to be scheduled.\n"
      "# TYPE loom:num_requests_waiting gauge\n"
      "loom:num_requests_waiting{model_name=\"m\"} 2\n"
      "# HELP loom:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
      "# TYPE loom:kv_cache_usage_perc gauge\n"
      "loom:kv_cache_usage_perc{model_name=\"m\"} 0.25\n"
      "# HELP loom:kv_cache_used_blocks KV-cache blocks in use.\n"
      "# TYPE loom:kv_cache_used_blocks gauge\n"
      "loom:kv_cache_used_blocks{model_name=\"m\"} 2\n"
      "# HELP loom:kv_cache_total_blocks KV-cache blocks in the pool.\n"
      "# TYPE loom:kv_cache_total_blocks gauge\n"
      "loom:kv_cache_total_blocks{model_name=\"m\"} 8\n"
      "# HELP loom:kv_cache_cached_blocks KV-cache blocks unreferenced but kept for prefix reuse.\n"
      "# TYPE loom:kv_cache_cached_blocks gauge\n"
      "loom:kv_cache_cached_blocks{model_name=\"m\"} 1\n"
      "# HELP loom:kv_cache_num_seqs Sequences holding KV-cache blocks.\n"
      "# TYPE loom:kv_cache_num_seqs gauge\n"
      "loom:kv_cache_num_seqs{model_name=\"m\"} 1\n"
      "# HELP loom:num_preemptions_total Cumulative number of preemptions.\n"
      "# TYPE loom:num_preemptions_total counter\n"
      "loom:num_preemptions_total{model_name=\"m\"} 4\n"
      "# HELP loom:prefix_cache_queries_total Prefix cache queries, in terms of number of queried "
      "tokens.\n"
      "# TYPE loom:prefix_cache_queries_total counter\n"
      "loom:prefix_cache_queries_total{model_name=\"m\"} 64\n"
      "# HELP loom:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n"
      "# TYPE loom:prefix_cache_hits_total counter\n"
      "loom:prefix_cache_hits_total{model_name=\"m\"} 48\n"
      "# HELP loom:prefix_cache_misses_total Prefix cache misses, in terms of number of queried "
      "tokens not found, by reason.\n"
      "# TYPE loom:prefix_cache_misses_total counter\n"
      "loom:prefix_cache_misses_total{model_name=\"m\",reason=\"no_match\"} 9\n"
      "loom:prefix_cache_misses_total{model_name=\"m\",reason=\"partial_block\"} 3\n"
      "loom:prefix_cache_misses_total{model_name=\"m\",reason=\"evicted\"} 2\n"
      "loom:prefix_cache_misses_total{model_name=\"m\",reason=\"salt_mismatch\"} 2\n"
      "loom:prefix_cache_misses_total{model_name=\"m\",reason=\"lower_tier\"} 0\n"
      "# HELP loom:kv_swapped_out_blocks_total KV-cache blocks saved to the offload tier when their "
      "request was preempted.\n"
      "# TYPE loom:kv_swapped_out_blocks_total counter\n"
      "loom:kv_swapped_out_blocks_total{model_name=\"m\"} 6\n"
      "# HELP loom:kv_swapped_in_blocks_total KV-cache blocks restored from the offload tier instead "
      "of recomputed.\n"
      "# TYPE loom:kv_swapped_in_blocks_total counter\n"
      "loom:kv_swapped_in_blocks_total{model_name=\"m\"} 5\n"
      "# HELP loom:prompt_tokens_total Number of prefill tokens processed.\n"
      "# TYPE loom:prompt_tokens_total counter\n"
      "loom:prompt_tokens_total{model_name=\"m\"} 100\n"
      "# HELP loom:generation_tokens_total Number of generation tokens processed.\n"
      "# TYPE loom:generation_tokens_total counter\n"
      "loom:generation_tokens_total{model_name=\"m\"} 40\n"
      "# HELP loom:request_success_total Count of successfully processed requests.\n"
      "# TYPE loom:request_success_total counter\n"
      "loom:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 5\n"
      "loom:request_success_total{model_name=\"m\",finished_reason=\"length\"} 2\n"
      "# HELP loom:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
      "# TYPE loom:time_to_first_token_seconds histogram\n"
      "loom:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.001\"} 1\n"
      "loom:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.5\"} 2\n"
      "loom:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"2\"} 2\n"
      "loom:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 3\n"
      "loom:time_to_first_token_seconds_count{model_name=\"m\"} 3\n"
      "loom:time_to_first_token_seconds_sum{model_name=\"m\"} 3.25\n" +
      empty_histogram("loom:inter_token_latency_seconds",
                      "Histogram of inter-token latency in seconds.") +
      empty_histogram("loom:request_time_per_output_token_seconds",
                      "Histogram of time_per_output_token_seconds per request.") +
      empty_histogram("loom:e2e_request_latency_seconds",
                      "Histogram of e2e request latency in seconds.") +
      empty_histogram("loom:request_queue_time_seconds",
                      "Histogram of time spent in WAITING phase for request.") +
      empty_histogram("loom:request_prefill_time_seconds",
                      "Histogram of time spent in PREFILL phase for request.") +
      empty_histogram("loom:request_decode_time_seconds",
                      "Histogram of time spent in DECODE phase for request.") +
      empty_histogram("loom:request_prompt_tokens", "Number of prefill tokens processed.") +
      empty_histogram("loom:request_generation_tokens", "Number of generation tokens processed.") +
      empty_histogram("loom:iteration_tokens_total",
                      "Histogram of number of tokens per engine_step.") +
      "# HELP loom:engine_steps_total Engine steps that ran a batch.\n"
      "# TYPE loom:engine_steps_total counter\n"
      "loom:engine_steps_total{model_name=\"m\"} 12\n"
      "# HELP loom:engine_step_seconds_total Wall time of those steps, from scheduling to the last output.\n"
      "# TYPE loom:engine_step_seconds_total counter\n"
      "loom:engine_step_seconds_total{model_name=\"m\"} 1.5\n"
      "# HELP loom:grammar_steps_total Engine steps that sampled a request under a grammar.\n"
      "# TYPE loom:grammar_steps_total counter\n"
      "loom:grammar_steps_total{model_name=\"m\"} 3\n"
      "# HELP loom:grammar_step_seconds_total Wall time of the steps that sampled under a grammar.\n"
      "# TYPE loom:grammar_step_seconds_total counter\n"
      "loom:grammar_step_seconds_total{model_name=\"m\"} 0.25\n"
      "# HELP loom:grammar_seconds_total Time spent masking logits with grammars and advancing their state (a share "
      "of grammar_step_seconds_total).\n"
      "# TYPE loom:grammar_seconds_total counter\n"
      "loom:grammar_seconds_total{model_name=\"m\"} 0.0625\n" +
      empty_slo_block();
  EXPECT_EQ(render_metrics(fixed_stats(), "m"), expected);
}

// Per priority class series, refusals by reason (the three admission reasons first, others
// after), goodput and the model's coefficients, exactly.
TEST(ServerMetricsText, SloSnapshotRendersExactly) {
  EngineStats s;
  SloClassCounts a;
  a.priority = -1;
  a.ttft_met = 3;
  a.ttft_missed = 1;
  a.tpot_met = 2;
  a.queue_wait_seconds_sum = 0.5;
  a.queue_wait_count = 4;
  SloClassCounts b;
  b.priority = 2;
  b.tpot_missed = 5;
  s.slo.classes = {a, b};
  s.slo.rejected = {{"queue_full", 7}, {"other", 1}};
  s.slo.aborted = 2;
  s.slo.failed = 1;
  s.slo.goodput = 0.25;
  s.slo.goodput_window_s = 60;
  s.slo.step_model = StepCoefficients{1000, 12.5, 30, 0.125, 9};
  const std::string text = render_metrics(s, "m");
  const std::string from = "# HELP loom:request_slo_ttft_met_total";
  ASSERT_NE(text.find(from), std::string::npos);
  const std::string m = "loom:";
  const std::string l = "{model_name=\"m\",";
  auto drop_comments = [](const std::string& t) {
    std::string out, line;
    for (size_t i = 0; i < t.size(); ++i) {
      line += t[i];
      if (t[i] != '\n') continue;
      if (line[0] != '#') out += line;
      line.clear();
    }
    return out;
  };
  EXPECT_EQ(drop_comments(text.substr(text.find(from))),
            m + "request_slo_ttft_met_total" + l + "priority=\"-1\"} 3\n" +
                m + "request_slo_ttft_met_total" + l + "priority=\"2\"} 0\n" +
                m + "request_slo_ttft_missed_total" + l + "priority=\"-1\"} 1\n" +
                m + "request_slo_ttft_missed_total" + l + "priority=\"2\"} 0\n" +
                m + "request_slo_tpot_met_total" + l + "priority=\"-1\"} 2\n" +
                m + "request_slo_tpot_met_total" + l + "priority=\"2\"} 0\n" +
                m + "request_slo_tpot_missed_total" + l + "priority=\"-1\"} 0\n" +
                m + "request_slo_tpot_missed_total" + l + "priority=\"2\"} 5\n" +
                m + "request_queue_wait_seconds_sum" + l + "priority=\"-1\"} 0.5\n" +
                m + "request_queue_wait_seconds_count" + l + "priority=\"-1\"} 4\n" +
                m + "request_queue_wait_seconds_sum" + l + "priority=\"2\"} 0\n" +
                m + "request_queue_wait_seconds_count" + l + "priority=\"2\"} 0\n" +
                m + "num_requests_rejected_total" + l + "reason=\"queue_full\"} 7\n" +
                m + "num_requests_rejected_total" + l + "reason=\"queued_tokens_exceeded\"} 0\n" +
                m + "num_requests_rejected_total" + l + "reason=\"ttft_unattainable\"} 0\n" +
                m + "num_requests_rejected_total" + l + "reason=\"other\"} 1\n" +
                m + "num_requests_aborted_total{model_name=\"m\"} 2\n" +
                m + "num_requests_failed_total{model_name=\"m\"} 1\n" +
                m + "request_goodput{model_name=\"m\"} 0.25\n" +
                m + "request_goodput_window_seconds{model_name=\"m\"} 60\n" +
                m + "step_time_model_us" + l + "term=\"base\"} 1000\n" +
                m + "step_time_model_us" + l + "term=\"prefill_token\"} 12.5\n" +
                m + "step_time_model_us" + l + "term=\"decode_token\"} 30\n" +
                m + "step_time_model_us" + l + "term=\"kv_token\"} 0.125\n" +
                m + "step_time_model_samples_total{model_name=\"m\"} 9\n");
}

// Speculative decoding: vLLM's spec_decode_* names, only when a [speculator] is configured.
TEST(ServerMetricsText, SpecDecodeRendersExactlyAndOnlyWhenEnabled) {
  EngineStats s;
  EXPECT_EQ(render_metrics(s, "m").find("spec_decode"), std::string::npos);
  s.spec_decode.enabled = true;
  s.spec_decode.num_drafts = 4;
  s.spec_decode.num_draft_tokens = 12;
  s.spec_decode.num_accepted_tokens = 6;
  s.spec_decode.accepted_per_pos = {3, 2, 1};
  s.spec_decode.num_steps = 10;
  s.spec_decode.num_steps_adaptive_off = 5;
  const std::string text = render_metrics(s, "m");
  const std::string l = "{model_name=\"m\"";
  for (const std::string& line :
       {"loom:spec_decode_num_drafts_total" + l + "} 4\n", "loom:spec_decode_num_draft_tokens_total" + l + "} 12\n",
        "loom:spec_decode_num_accepted_tokens_total" + l + "} 6\n",
        "loom:spec_decode_num_accepted_tokens_per_pos_total" + l + ",position=\"0\"} 3\n",
        "loom:spec_decode_num_accepted_tokens_per_pos_total" + l + ",position=\"2\"} 1\n",
        "loom:spec_decode_mean_accepted_length" + l + "} 2.5\n", "loom:spec_decode_steps_total" + l + "} 10\n",
        "loom:spec_decode_adaptive_off_steps_total" + l + "} 5\n", "loom:spec_decode_adaptive_off_ratio" + l + "} 0.5\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line;
}

// [server] metrics_prefix = "vllm": the same exposition, every name with vllm: for loom:, so
// vLLM's dashboards and routers read it unchanged.
// Tiers: one series per tier (a repeated plugin name gets ".2"), their copy-latency histograms,
// and the restore-vs-recompute decisions; nothing of it without tiers.
TEST(ServerMetricsText, TierMetricsRenderPerTier) {
  EngineStats s;
  EXPECT_EQ(render_metrics(s, "m").find("kv_tier_"), std::string::npos);
  for (const char* name : {"host", "disk", "disk"}) {
    TierStats t;
    t.name = name;
    s.kv_tiers.push_back(t);
  }
  s.kv_tiers[0].hits = 7;
  s.kv_tiers[1].bytes_in = 4096;
  s.kv_tiers[2].misses = 3;
  s.kv_tiers[1].load_seconds = small_histogram();
  s.kv_tier_decisions.restored = 11;
  s.kv_tier_decisions.recompute_prefix_lost = 2;
  s.kv_tier_decisions.spilled = 13;
  s.prefix_cache_miss_lower_tier = 176;
  const std::string text = render_metrics(s, "m");
  for (const char* line :
       {"loom:kv_tier_hits_total{model_name=\"m\",tier=\"host\"} 7\n",
        "loom:kv_tier_bytes_in_total{model_name=\"m\",tier=\"disk\"} 4096\n",
        "loom:kv_tier_misses_total{model_name=\"m\",tier=\"disk.2\"} 3\n",
        "loom:kv_tier_load_seconds_count{model_name=\"m\",tier=\"disk\"} 3\n",
        "loom:kv_tier_load_seconds_bucket{model_name=\"m\",tier=\"host\",le=\"+Inf\"} 0\n",
        "loom:kv_tier_restore_decisions_total{model_name=\"m\",decision=\"restore\"} 11\n",
        "loom:kv_tier_restore_decisions_total{model_name=\"m\",decision=\"recompute_prefix_lost\"} 2\n",
        "loom:kv_tier_spills_total{model_name=\"m\",outcome=\"spilled\"} 13\n",
        "loom:prefix_cache_misses_total{model_name=\"m\",reason=\"lower_tier\"} 176\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
}

TEST(ServerMetricsText, VllmPrefixRenamesEveryMetric) {
  std::string expected = render_metrics(fixed_stats(), "m");
  size_t renamed = 0;
  for (size_t at = expected.find("loom:"); at != std::string::npos; at = expected.find("loom:", at)) {
    expected.replace(at, 5, "vllm:");
    ++renamed;
  }
  // 26 metrics x (HELP + TYPE), then samples: 14 plain, 5 + 2 labeled, 6 of the TTFT histogram,
  // 3 of each of the 9 empty histograms; the 5 step and grammar counters; then the 12 of the SLO
  // block with 12 samples.
  EXPECT_EQ(renamed, (26u + 5u + 12u) * 2 + 14u + 7u + 6u + 9u * 3 + 5u + 12u);
  const std::string text = render_metrics(fixed_stats(), "m", "vllm");
  EXPECT_EQ(text, expected);
  EXPECT_EQ(text.find("loom:"), std::string::npos);
  EXPECT_EQ(render_metrics(fixed_stats(), "m", "loom"), render_metrics(fixed_stats(), "m"));
}

TEST(ServerMetricsText, ModelNameIsEscapedInEveryLabel) {
  const std::string text = render_metrics(fixed_stats(), "a\"b\\c\nd");
  EXPECT_NE(text.find("loom:num_requests_running{model_name=\"a\\\"b\\\\c\\nd\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("loom:time_to_first_token_seconds_bucket{model_name=\"a\\\"b\\\\c\\nd\","
                      "le=\"0.5\"} 2\n"),
            std::string::npos);
}

TEST(ServerMetricsText, EmptyPoolReportsZeroUsage) {
  EngineStats s;
  const std::string text = render_metrics(s, "m");
  EXPECT_NE(text.find("loom:kv_cache_usage_perc{model_name=\"m\"} 0\n"), std::string::npos);
}

TEST(ServerMetricsText, RouteServesTheEngineStats) {
  test::FakeEngine engine;
  ServerOptions options;
  options.port = 0;
  HttpServer server(engine, options);
  server.start();
  test::HttpTestClient client(server.port());
  const auto r = client.get("/metrics");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header(http::field::content_type), kMetricsContentType);
  EXPECT_EQ(r.body, render_metrics(engine.stats(), "fake-model"));
  server.stop(std::chrono::milliseconds(200));
}

TEST(ServerMetricsText, RouteUsesTheConfiguredPrefix) {
  test::FakeEngine engine;
  ServerOptions options;
  options.port = 0;
  options.metrics_prefix = "vllm";
  HttpServer server(engine, options);
  server.start();
  const auto r = test::HttpTestClient(server.port()).get("/metrics");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, render_metrics(engine.stats(), "fake-model", "vllm"));
  EXPECT_NE(r.body.find("vllm:num_requests_running{"), std::string::npos);
  server.stop(std::chrono::milliseconds(200));
}

}  // namespace
}  // namespace loom
