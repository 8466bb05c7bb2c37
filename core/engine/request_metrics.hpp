// The engine's request-level timing and size histograms, named as vLLM names them. The engine
// thread reports lifecycle events (scheduled, token sampled, finished, step done) with steady-clock
// microseconds; HTTP threads read snapshots at any time. Per-request timestamps live here, keyed
// by request id, so RequestState stays about generation only.
//
// Bucket boundaries follow vLLM's (vllm/v1/metrics/loggers.py):
//   time to first token: 1 ms .. 2560 s; inter-token latency and time per output token:
//   10 ms .. 80 s; whole-request phases (e2e, queue, prefill, decode): 0.3 s .. 7680 s;
//   prompt/generation token counts: 1-2-5 steps up to max_model_len; tokens per engine step:
//   1, 8, 16, ..., 16384.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/common/histogram.hpp"
#include "core/engine/engine_api.hpp"
#include "core/engine/slo_metrics.hpp"

namespace loom {

// 1, 2, 5, 10, 20, 50, ... up to and including the last one <= max_value.
std::vector<double> one_two_five_buckets(int64_t max_value);

class RequestMetrics {
 public:
  explicit RequestMetrics(int32_t max_model_len, int32_t goodput_window_s = 60);

  // Engine thread only. `priority` (the API's) and the targets feed the SLO counters.
  void on_arrival(uint64_t id, int64_t arrival_us, int32_t priority = 0, SloTargets slo = {});
  // Every time the request is scheduled; only the first one counts (a preempted request's
  // queue time is its wait before it first ran).
  void on_scheduled(uint64_t id, int64_t now_us);
  // One token sampled for the request at now_us.
  void on_token(uint64_t id, int64_t now_us);
  // Tokens computed by one engine step (prefill chunks and decodes together).
  void on_step(int64_t num_tokens);
  // The request is gone. Only requests that finished normally (stop or length) are observed in
  // the per-request histograms, as vLLM's success counter counts them; others are just dropped.
  void on_finished(uint64_t id, FinishReason reason, int32_t prompt_tokens,
                   int32_t generation_tokens, int64_t now_us);

  // Any thread. now_us ends the goodput window.
  void snapshot_into(EngineStats& stats, int64_t now_us = 0) const;
  // Any thread: a request refused before it was queued (admission control).
  void on_rejected(const std::string& reason) { slo_.on_rejected(reason); }

 private:
  struct Timeline {
    int64_t arrival_us = 0;
    int64_t first_scheduled_us = -1;
    int64_t first_token_us = -1;
    int64_t last_token_us = -1;
    int32_t priority = 0;
    SloTargets slo;
    bool ttft_met = true;
  };

  std::unordered_map<uint64_t, Timeline> live_;  // engine thread only
  Histogram time_to_first_token_;
  Histogram inter_token_latency_;
  Histogram time_per_output_token_;
  Histogram e2e_latency_;
  Histogram queue_time_;
  Histogram prefill_time_;
  Histogram decode_time_;
  Histogram prompt_tokens_;
  Histogram generation_tokens_;
  Histogram iteration_tokens_;
  SloMetrics slo_;
};

}  // namespace loom
