#include "core/engine/request_metrics.hpp"

namespace loom {
namespace {

std::vector<double> ttft_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}

std::vector<double> per_token_buckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
}

std::vector<double> request_phase_buckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,  2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

std::vector<double> iteration_buckets() {
  return {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
}

// Division, not a multiply by 1e-6: whole and half seconds come out exact (bucket edges are le).
double seconds(int64_t us) { return static_cast<double>(us) / 1e6; }

}  // namespace

std::vector<double> one_two_five_buckets(int64_t max_value) {
  std::vector<double> out;
  for (int64_t decade = 1;; decade *= 10) {
    for (int64_t m : {1, 2, 5}) {
      const int64_t v = m * decade;
      if (v > max_value) return out;
      out.push_back(static_cast<double>(v));
    }
  }
}

RequestMetrics::RequestMetrics(int32_t max_model_len, int32_t goodput_window_s)
    : time_to_first_token_(ttft_buckets()),
      inter_token_latency_(per_token_buckets()),
      time_per_output_token_(per_token_buckets()),
      e2e_latency_(request_phase_buckets()),
      queue_time_(request_phase_buckets()),
      prefill_time_(request_phase_buckets()),
      decode_time_(request_phase_buckets()),
      prompt_tokens_(one_two_five_buckets(max_model_len)),
      generation_tokens_(one_two_five_buckets(max_model_len)),
      iteration_tokens_(iteration_buckets()),
      slo_(goodput_window_s) {}

void RequestMetrics::on_arrival(uint64_t id, int64_t arrival_us, int32_t priority, SloTargets slo) {
  Timeline& t = live_[id];
  t.arrival_us = arrival_us;
  t.priority = priority;
  t.slo = slo;
}

void RequestMetrics::on_scheduled(uint64_t id, int64_t now_us) {
  auto it = live_.find(id);
  if (it == live_.end() || it->second.first_scheduled_us >= 0) return;
  it->second.first_scheduled_us = now_us;
  slo_.on_queue_wait(it->second.priority, now_us - it->second.arrival_us);
}

void RequestMetrics::on_token(uint64_t id, int64_t now_us) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  Timeline& t = it->second;
  if (t.first_token_us < 0) {
    t.first_token_us = now_us;
    time_to_first_token_.observe(seconds(now_us - t.arrival_us));
    t.ttft_met = slo_.on_first_token(t.priority, now_us - t.arrival_us, t.slo.ttft_ms);
  } else if (now_us != t.last_token_us) {
    // One gap per step that gave the request output, as vLLM counts it: the tokens one step
    // accepts (speculation) reach the client together, with no latency between them.
    inter_token_latency_.observe(seconds(now_us - t.last_token_us));
  }
  t.last_token_us = now_us;
}

void RequestMetrics::on_step(int64_t num_tokens) {
  iteration_tokens_.observe(static_cast<double>(num_tokens));
}

void RequestMetrics::on_finished(uint64_t id, FinishReason reason, int32_t prompt_tokens,
                                 int32_t generation_tokens, int64_t now_us) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  const Timeline t = it->second;
  live_.erase(it);
  if (reason == FinishReason::kAbort) slo_.on_aborted();
  if (reason == FinishReason::kError) slo_.on_failed();
  if (reason != FinishReason::kStop && reason != FinishReason::kLength) return;
  const int64_t e2e_us = now_us - t.arrival_us;
  e2e_latency_.observe(seconds(e2e_us));
  prompt_tokens_.observe(prompt_tokens);
  generation_tokens_.observe(generation_tokens);
  // A normal finish has sampled a token, so it was scheduled and has a first token; guard anyway
  // so a future finish path without one cannot observe garbage.
  if (t.first_scheduled_us >= 0) queue_time_.observe(seconds(t.first_scheduled_us - t.arrival_us));
  if (t.first_token_us < 0) return;
  if (t.first_scheduled_us >= 0) prefill_time_.observe(seconds(t.first_token_us - t.first_scheduled_us));
  decode_time_.observe(seconds(now_us - t.first_token_us));
  int64_t tpot_us = -1;
  if (generation_tokens > 1) {
    const int64_t ttft_us = t.first_token_us - t.arrival_us;
    time_per_output_token_.observe(seconds(e2e_us - ttft_us) / (generation_tokens - 1));
    tpot_us = (e2e_us - ttft_us) / (generation_tokens - 1);
  }
  slo_.on_success(t.priority, t.ttft_met, tpot_us, t.slo.tpot_ms, now_us);
}

void RequestMetrics::snapshot_into(EngineStats& s, int64_t now_us) const {
  s.slo = slo_.snapshot(now_us);
  s.time_to_first_token = time_to_first_token_.snapshot();
  s.inter_token_latency = inter_token_latency_.snapshot();
  s.time_per_output_token = time_per_output_token_.snapshot();
  s.e2e_request_latency = e2e_latency_.snapshot();
  s.request_queue_time = queue_time_.snapshot();
  s.request_prefill_time = prefill_time_.snapshot();
  s.request_decode_time = decode_time_.snapshot();
  s.request_prompt_tokens = prompt_tokens_.snapshot();
  s.request_generation_tokens = generation_tokens_.snapshot();
  s.iteration_tokens = iteration_tokens_.snapshot();
}

}  // namespace loom
