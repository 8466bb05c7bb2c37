// What /metrics shows of SLO-aware serving, as plain values: per priority class the TTFT and TPOT
// targets met and missed and the queue wait, requests refused by reason, aborted and failed ones,
// goodput over a sliding window, and the step-time model's coefficients.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom {

// t = base + per_prefill_token * prefill + per_decode_token * decode + per_kv_token * kv, all in
// microseconds per step (core/engine/step_time_model.hpp fits them, non-negative).
struct StepCoefficients {
  double base_us = 0;
  double per_prefill_token_us = 0;
  double per_decode_token_us = 0;
  double per_kv_token_us = 0;
  int64_t samples = 0;  // steps the fit has seen (calibration included)
};

struct SloClassCounts {
  int32_t priority = 0;  // the API's priority (lower runs first)
  int64_t ttft_met = 0;
  int64_t ttft_missed = 0;
  int64_t tpot_met = 0;
  int64_t tpot_missed = 0;
  double queue_wait_seconds_sum = 0;  // arrival to first scheduled, over requests that ran
  int64_t queue_wait_count = 0;
};

struct SloSnapshot {
  std::vector<SloClassCounts> classes;                      // by priority, ascending
  std::vector<std::pair<std::string, int64_t>> rejected;    // reason -> requests refused with 429
  int64_t aborted = 0;  // cancelled by the client (or at shutdown)
  int64_t failed = 0;   // finished with an error (a deadline passed in the queue, a failed step, ...)
  // Requests per second that finished within every target they had, over the last window.
  double goodput = 0;
  int32_t goodput_window_s = 0;
  StepCoefficients step_model;
};

}  // namespace loom
